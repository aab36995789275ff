package expr

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
)

// ToIceberg converts a predicate into an iceberg-go expression for file
// pruning (scan row filters, partition and metrics evaluation).
//
// The result is conservative: it is TRUE for every row for which the SQL
// predicate is TRUE, so files are never dropped wrongly. Parts Iceberg
// cannot express (arithmetic, functions, CASE, column-to-column
// comparisons, <=>, LIKE other than a plain prefix 'abc%') become
// AlwaysTrue under AND and make an enclosing OR AlwaysTrue; NOT is pushed
// down with three-valued logic and is only kept over parts that are exact.
// Literals are converted to the column's Iceberg type (an INT literal for a
// long column, decimals at the column's scale, dates, timestamps in the
// column's unit); a literal between two representable values is rounded
// in the safe direction (id > 5.5 becomes id > 5) and one out of the
// column's range gives AlwaysFalse or NOT NULL as the SQL semantics say.
//
// exact reports whether the result is TRUE for exactly the rows the SQL
// predicate is TRUE for, under iceberg-go's row evaluator; it is false when
// anything was widened, and for comparisons on float columns (Iceberg and
// Spark order NaN differently). Callers that need exact rows evaluate the
// predicate on the rows anyway.
//
// Errors are those of Compile against the Iceberg schema (unknown or
// ambiguous columns, type mismatches, each a *BindError with a position),
// and ErrType when e is not a predicate.
func ToIceberg(e Expr, sc *iceberg.Schema) (iceberg.BooleanExpression, bool, error) {
	prog, err := Compile(e, icebergArrowSchema(sc))
	if err != nil {
		return nil, false, err
	}
	if err := prog.predicate(); err != nil {
		return nil, false, err
	}
	c := icebergConv{sc: sc}
	out, exact := c.conv(prog.root, false)
	return out, exact, nil
}

// icebergArrowSchema maps an Iceberg schema to the Arrow schema its rows
// are read with, keeping field names so bound paths map back to Iceberg
// names.
func icebergArrowSchema(sc *iceberg.Schema) *arrow.Schema {
	fields := sc.Fields()
	out := make([]arrow.Field, len(fields))
	for i, f := range fields {
		out[i] = arrow.Field{Name: f.Name, Type: icebergArrowType(f.Type), Nullable: !f.Required}
	}
	return arrow.NewSchema(out, nil)
}

func icebergArrowType(t iceberg.Type) arrow.DataType {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return arrow.FixedWidthTypes.Boolean
	case iceberg.Int32Type:
		return arrow.PrimitiveTypes.Int32
	case iceberg.Int64Type:
		return arrow.PrimitiveTypes.Int64
	case iceberg.Float32Type:
		return arrow.PrimitiveTypes.Float32
	case iceberg.Float64Type:
		return arrow.PrimitiveTypes.Float64
	case iceberg.DecimalType:
		return decType(int32(t.Precision()), int32(t.Scale()))
	case iceberg.DateType:
		return arrow.FixedWidthTypes.Date32
	case iceberg.TimeType:
		return arrow.FixedWidthTypes.Time64us
	case iceberg.TimestampType:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case iceberg.TimestampTzType:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case iceberg.TimestampNsType:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	case iceberg.TimestampTzNsType:
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	case iceberg.StringType:
		return arrow.BinaryTypes.String
	case iceberg.BinaryType:
		return arrow.BinaryTypes.Binary
	case iceberg.FixedType:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Len()}
	case iceberg.UUIDType:
		return &arrow.FixedSizeBinaryType{ByteWidth: 16}
	case *iceberg.StructType:
		fs := make([]arrow.Field, len(t.FieldList))
		for i, f := range t.FieldList {
			fs[i] = arrow.Field{Name: f.Name, Type: icebergArrowType(f.Type), Nullable: !f.Required}
		}
		return arrow.StructOf(fs...)
	case *iceberg.ListType:
		return arrow.ListOf(icebergArrowType(t.ElementField().Type))
	case *iceberg.MapType:
		return arrow.MapOf(icebergArrowType(t.KeyField().Type), icebergArrowType(t.ValueField().Type))
	}
	// variant, geometry, unknown...: opaque values, only IS [NULL] applies
	return arrow.BinaryTypes.Binary
}

type icebergConv struct{ sc *iceberg.Schema }

var (
	alwaysTrue  iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	alwaysFalse iceberg.BooleanExpression = iceberg.AlwaysFalse{}
)

// conv returns an expression TRUE for (at least) the rows where n, negated
// when neg is set, is TRUE; exact when for exactly those rows.
func (c icebergConv) conv(n node, neg bool) (iceberg.BooleanExpression, bool) {
	switch n := n.(type) {
	case *constNode:
		if n.val == nil {
			return alwaysFalse, true // NULL, and NOT NULL, are never TRUE
		}
		if n.val.(bool) != neg {
			return alwaysTrue, true
		}
		return alwaysFalse, true
	case *notNode:
		return c.conv(n.x, !neg)
	case *logicNode:
		l, el := c.conv(n.l, neg)
		r, er := c.conv(n.r, neg)
		// NB: NOT (a AND b) = NOT a OR NOT b holds in three-valued logic.
		if n.or == neg {
			return iceberg.NewAnd(l, r), el && er
		}
		return iceberg.NewOr(l, r), el && er
	case *isNullNode:
		col, ok := n.x.(*colNode)
		if !ok || !isPrimitive(col.dt) {
			return alwaysTrue, false
		}
		if n.not != neg {
			return iceberg.NotNull(c.ref(col)), true
		}
		return iceberg.IsNull(c.ref(col)), true
	case *isBoolNode:
		if n.not == neg {
			// x IS v is TRUE where x = v
			return c.conv(n.x, !n.value)
		}
		// x IS NOT v is TRUE where x = NOT v or x is NULL.
		// NB: never emit an Iceberg NOT here: iceberg-go rewrites NOT by
		// negating predicates, and its metrics and partition evaluators then
		// treat NOT (a >= 1) as a < 1, which drops files of NULLs that
		// SQL's (a >= 1) IS NOT TRUE accepts.
		e, exact := c.conv(n.x, n.value)
		nulls, nexact := c.nullSet(n.x)
		return iceberg.NewOr(e, nulls), exact && nexact
	case *colNode:
		if n.dt.ID() != arrow.BOOL {
			return alwaysTrue, false
		}
		return iceberg.EqualTo(c.ref(n), !neg), true
	case *cmpNode:
		if n.op == OpNullSafeEq {
			return alwaysTrue, false
		}
		op := n.op
		col, t, k, ok := columnAndConst(n.l, n.r)
		if !ok {
			col, t, k, ok = columnAndConst(n.r, n.l)
			op = flipOp(op)
		}
		if !ok {
			return alwaysTrue, false
		}
		if neg {
			op = negateOp(op)
		}
		if k.val == nil {
			return alwaysFalse, true
		}
		e, exact := c.compare(col, t, op, k)
		// NB: a narrowing cast fails on some rows where Iceberg says TRUE
		return e, exact && !narrows(col.dt, t)
	case *inNode:
		col, t, ok := columnOf(n.x)
		if !ok {
			return alwaysTrue, false
		}
		not := n.not != neg
		if not && n.set.hasNull {
			return alwaysFalse, true // x NOT IN (..., NULL) is never TRUE
		}
		e, exact := c.in(col, t, n.set, not)
		return e, exact && !narrows(col.dt, t)
	case *likeNode:
		col, ok := n.x.(*colNode)
		if !ok || familyOf(col.dt) != famString {
			return alwaysTrue, false
		}
		not := n.not != neg
		ref := c.ref(col)
		switch n.m.kind {
		case likeExact:
			op := OpEq
			if not {
				op = OpNe
			}
			return c.compare(col, col.dt, op, &constNode{dt: col.dt, val: n.m.lit})
		case likeAny:
			if not {
				return alwaysFalse, true
			}
			return iceberg.NotNull(ref), true
		case likePrefix:
			if not {
				return iceberg.NewAnd(iceberg.NotStartsWith(ref, n.m.lit), iceberg.NotNull(ref)), true
			}
			return iceberg.StartsWith(ref, n.m.lit), true
		}
	}
	return alwaysTrue, false
}

// nullSet returns an expression TRUE for (at least) the rows where the
// boolean node n is NULL; exact when for exactly those.
func (c icebergConv) nullSet(n node) (iceberg.BooleanExpression, bool) {
	switch n := n.(type) {
	case *constNode:
		if n.val == nil {
			return alwaysTrue, true
		}
		return alwaysFalse, true
	case *isNullNode, *isBoolNode:
		return alwaysFalse, true
	case *notNode:
		return c.nullSet(n.x)
	case *colNode:
		return iceberg.IsNull(c.ref(n)), true
	case *cmpNode:
		if n.op == OpNullSafeEq {
			return alwaysFalse, true
		}
		// col op constant is NULL exactly where the column is (constant NULLs
		// were folded away)
		if col, _, k, ok := columnAndConst(n.l, n.r); ok && k.val != nil {
			return iceberg.IsNull(c.ref(col)), true
		}
		if col, _, k, ok := columnAndConst(n.r, n.l); ok && k.val != nil {
			return iceberg.IsNull(c.ref(col)), true
		}
	case *inNode:
		if col, _, ok := columnOf(n.x); ok && !n.set.hasNull {
			return iceberg.IsNull(c.ref(col)), true
		}
	case *likeNode:
		if col, ok := n.x.(*colNode); ok {
			return iceberg.IsNull(c.ref(col)), true
		}
	case *logicNode:
		// NULL only where one side is NULL: a superset
		l, _ := c.nullSet(n.l)
		r, _ := c.nullSet(n.r)
		return iceberg.NewOr(l, r), false
	}
	return alwaysTrue, false
}

func isPrimitive(dt arrow.DataType) bool {
	switch familyOf(dt) {
	case famStruct, famOther:
		return false
	}
	return true
}

// columnOf recognises a column, possibly under a cast that keeps its
// values (implicit widenings, and explicit casts such as CAST(i AS BIGINT));
// t is the type the column's values are compared in.
func columnOf(n node) (*colNode, arrow.DataType, bool) {
	switch n := n.(type) {
	case *colNode:
		return n, n.dt, isPrimitive(n.dt)
	case *castNode:
		if col, ok := n.x.(*colNode); ok && isPrimitive(col.dt) && keepsValues(col.dt, n.to) {
			return col, n.to, true
		}
	}
	return nil, nil, false
}

// narrows reports whether a value-keeping cast from to to can fail with an
// overflow (CAST(l AS INT), a decimal with fewer integral digits).
func narrows(from, to arrow.DataType) bool {
	ff, tf := familyOf(from), familyOf(to)
	switch {
	case ff == famInt && tf == famInt:
		return intBits(to) < intBits(from)
	case ff == famInt && tf == famDecimal, ff == famDecimal && tf == famDecimal:
		fd, td := decimalOf(from), to.(*arrow.Decimal128Type)
		return td.Precision-td.Scale < fd.Precision-fd.Scale
	}
	return false
}

// keepsValues reports whether casting from to to maps every value to the
// same number, instant or string, or fails: then comparing the cast column
// with a constant is comparing the column itself. Casts that round or
// truncate (to fewer decimal places, DOUBLE to FLOAT, TIMESTAMP to DATE,
// anything to or from STRING) do not, and a column under one is not
// expressible in Iceberg.
func keepsValues(from, to arrow.DataType) bool {
	ff, tf := familyOf(from), familyOf(to)
	switch {
	case ff == famInt && tf == famInt, ff == famInt && tf == famDecimal:
		return true
	case ff == famInt && tf == famFloat:
		return true // exact below 2^24 or 2^53, which constRational checks
	case ff == famDecimal && tf == famDecimal:
		return to.(*arrow.Decimal128Type).Scale >= from.(*arrow.Decimal128Type).Scale
	case ff == famFloat && tf == famFloat:
		return to.ID() == arrow.FLOAT64 || from.ID() == arrow.FLOAT32
	case ff == famDate && tf == famTimestamp:
		return true
	case ff == famTimestamp && tf == famTimestamp:
		return to.(*arrow.TimestampType).Unit >= from.(*arrow.TimestampType).Unit
	case ff == famTime && tf == famTime:
		return to.(*arrow.Time64Type).Unit >= from.(*arrow.Time64Type).Unit
	case ff == famString && tf == famString, ff == famBinary && tf == famBinary:
		return true
	}
	return false
}

func columnAndConst(a, b node) (*colNode, arrow.DataType, *constNode, bool) {
	col, t, ok := columnOf(a)
	k, isConst := b.(*constNode)
	if !ok || !isConst {
		return nil, nil, nil, false
	}
	return col, t, k, true
}

// flipOp gives op' with a op b == b op' a.
func flipOp(op BinaryOp) BinaryOp {
	switch op {
	case OpLt:
		return OpGt
	case OpLe:
		return OpGe
	case OpGt:
		return OpLt
	case OpGe:
		return OpLe
	}
	return op
}

// negateOp gives the comparison that is TRUE where NOT (a op b) is TRUE.
func negateOp(op BinaryOp) BinaryOp {
	switch op {
	case OpEq:
		return OpNe
	case OpNe:
		return OpEq
	case OpLt:
		return OpGe
	case OpLe:
		return OpGt
	case OpGt:
		return OpLe
	}
	return OpLt
}

func (c icebergConv) ref(col *colNode) iceberg.UnboundTerm {
	return iceberg.Reference(strings.Join(col.names, "."))
}

// litKind classifies a constant converted to a column's Iceberg type.
type litKind int

const (
	litExact       litKind = iota // lit holds the value exactly
	litBetween                    // strictly between down and up (grid neighbours)
	litAbove                      // above every value of the column type
	litBelow                      // below every value of the column type
	litUnsupported                // no safe conversion
)

type convLit struct {
	kind     litKind
	lit      iceberg.Literal // litExact
	down, up iceberg.Literal // litBetween
	float    bool            // float column: NaN semantics differ, never exact
}

// compare converts col op k, where the column's values are compared in type
// t with the constant k.
func (c icebergConv) compare(col *colNode, t arrow.DataType, op BinaryOp, k *constNode) (iceberg.BooleanExpression, bool) {
	if col.dt.ID() == arrow.BOOL {
		if t.ID() != arrow.BOOL {
			return alwaysTrue, false
		}
		b := k.val.(bool)
		switch op {
		case OpEq:
			return iceberg.EqualTo(c.ref(col), b), true
		case OpNe:
			return iceberg.EqualTo(c.ref(col), !b), true
		}
		return alwaysTrue, false
	}
	cl := convertConst(col.dt, t, k)
	ref := c.ref(col)
	exact := !cl.float
	notNull := iceberg.NotNull(ref)
	pred := func(op iceberg.Operation, l iceberg.Literal) iceberg.BooleanExpression {
		return iceberg.LiteralPredicate(op, ref, l)
	}
	nan := func(e iceberg.BooleanExpression) iceberg.BooleanExpression {
		// NB: Spark orders NaN above every number; iceberg-go below. Keep NaN
		// rows where Spark would accept them.
		if cl.float {
			return iceberg.NewOr(e, iceberg.IsNaN(ref))
		}
		return e
	}
	switch cl.kind {
	case litUnsupported:
		return alwaysTrue, false
	case litExact:
		switch op {
		case OpEq:
			return pred(iceberg.OpEQ, cl.lit), exact
		case OpNe:
			return iceberg.NewAnd(pred(iceberg.OpNEQ, cl.lit), notNull), exact
		case OpGt:
			return nan(pred(iceberg.OpGT, cl.lit)), exact
		case OpGe:
			return nan(pred(iceberg.OpGTEQ, cl.lit)), exact
		case OpLt:
			return iceberg.NewAnd(pred(iceberg.OpLT, cl.lit), notNull), exact
		}
		return iceberg.NewAnd(pred(iceberg.OpLTEQ, cl.lit), notNull), exact
	case litBetween:
		switch op {
		case OpEq:
			return alwaysFalse, exact
		case OpNe:
			return notNull, exact
		case OpGt, OpGe:
			return nan(pred(iceberg.OpGTEQ, cl.up)), exact
		}
		return iceberg.NewAnd(pred(iceberg.OpLTEQ, cl.down), notNull), exact
	case litAbove:
		switch op {
		case OpNe, OpLt, OpLe:
			return notNull, exact
		}
		return nan(alwaysFalse), exact
	}
	// litBelow
	switch op {
	case OpNe, OpGt, OpGe:
		return notNull, exact
	}
	return alwaysFalse, exact
}

// in converts col [NOT] IN (set); the set's values have type t.
func (c icebergConv) in(col *colNode, t arrow.DataType, set *valueSet, not bool) (iceberg.BooleanExpression, bool) {
	ref := c.ref(col)
	var lits []iceberg.Literal
	exact := true
	var rest []iceberg.BooleanExpression // elements that did not convert to one literal
	for _, v := range set.values {
		k := &constNode{dt: t, val: v}
		if col.dt.ID() != arrow.BOOL {
			cl := convertConst(col.dt, t, k)
			if cl.kind == litExact && !cl.float {
				lits = append(lits, cl.lit)
				continue
			}
		}
		op := OpEq
		if not {
			op = OpNe
		}
		e, ex := c.compare(col, t, op, k)
		exact = exact && ex
		rest = append(rest, e)
	}
	if not {
		var out iceberg.BooleanExpression = iceberg.NotNull(ref)
		if len(lits) > 0 {
			out = iceberg.NewAnd(iceberg.SetPredicate(iceberg.OpNotIn, ref, lits), out)
		}
		for _, e := range rest {
			if !e.Equals(iceberg.NotNull(ref)) {
				out = iceberg.NewAnd(out, e)
			}
		}
		return out, exact
	}
	var out iceberg.BooleanExpression = alwaysFalse
	switch len(lits) {
	case 0:
	case 1:
		out = iceberg.LiteralPredicate(iceberg.OpEQ, ref, lits[0])
	default:
		out = iceberg.SetPredicate(iceberg.OpIn, ref, lits)
	}
	for _, e := range rest {
		out = iceberg.NewOr(out, e)
	}
	return out, exact
}

// convertConst converts constant k (of comparison type t) to the Iceberg
// type of a column of Arrow type ct.
func convertConst(ct, t arrow.DataType, k *constNode) convLit {
	switch familyOf(ct) {
	case famInt, famDecimal, famDate, famTimestamp, famTime:
		r, ok := constRational(ct, t, k)
		if !ok {
			return convLit{kind: litUnsupported}
		}
		return gridLiteral(ct, r)
	case famFloat:
		if familyOf(t) != famFloat {
			return convLit{kind: litUnsupported}
		}
		f := k.val.(float64)
		if math.IsNaN(f) {
			return convLit{kind: litUnsupported}
		}
		if ct.ID() == arrow.FLOAT64 {
			return convLit{kind: litExact, lit: iceberg.NewLiteral(f), float: true}
		}
		f32 := float32(f)
		if float64(f32) == f {
			return convLit{kind: litExact, lit: iceberg.NewLiteral(f32), float: true}
		}
		down, up := f32, f32
		if float64(f32) > f {
			down = math.Nextafter32(f32, float32(math.Inf(-1)))
		} else {
			up = math.Nextafter32(f32, float32(math.Inf(1)))
		}
		return convLit{kind: litBetween, down: iceberg.NewLiteral(down), up: iceberg.NewLiteral(up), float: true}
	case famString:
		if familyOf(t) == famString {
			return convLit{kind: litExact, lit: iceberg.NewLiteral(k.val.(string))}
		}
	case famBinary:
		if ct.ID() == arrow.BINARY && familyOf(t) == famBinary {
			return convLit{kind: litExact, lit: iceberg.NewLiteral(k.val.([]byte))}
		}
	}
	return convLit{kind: litUnsupported}
}

// constRational returns the constant as a rational number in the column's
// units (integers, unscaled decimals, days, time units), when comparing in
// type t is the same as comparing those numbers exactly.
func constRational(ct, t arrow.DataType, k *constNode) (*big.Rat, bool) {
	switch familyOf(t) {
	case famInt:
		return new(big.Rat).SetInt64(k.val.(int64)), familyOf(ct) == famInt
	case famDecimal:
		if familyOf(ct) != famInt && familyOf(ct) != famDecimal {
			return nil, false
		}
		// NB: decimal comparisons keep each side's own type: read the constant
		// with its scale, not the column's.
		r := new(big.Rat).SetFrac(k.val.(decimal128.Num).BigInt(), pow10Big(int(k.dt.(*arrow.Decimal128Type).Scale)))
		if d, ok := ct.(*arrow.Decimal128Type); ok {
			r.Mul(r, new(big.Rat).SetInt(pow10Big(int(d.Scale))))
		}
		return r, true
	case famFloat:
		// NB: comparing an integer column in floating point equals comparing
		// exactly while both sides stay below 2^24 (FLOAT) or 2^53 (DOUBLE).
		f := k.val.(float64)
		limit := float64(1 << 53)
		if t.ID() == arrow.FLOAT32 {
			limit = 1 << 24
		}
		if familyOf(ct) != famInt || math.IsNaN(f) || math.Abs(f) >= limit {
			return nil, false
		}
		return new(big.Rat).SetFloat64(f), true
	case famDate:
		return new(big.Rat).SetInt64(k.val.(int64)), familyOf(ct) == famDate
	case famTimestamp:
		tu := t.(*arrow.TimestampType).Unit
		v := new(big.Rat).SetInt64(k.val.(int64))
		switch ct := ct.(type) {
		case *arrow.Date32Type:
			return v.Quo(v, new(big.Rat).SetInt64(unitsPerDay(tu))), true
		case *arrow.TimestampType:
			return v.Mul(v, big.NewRat(unitsPerSecond(ct.Unit), unitsPerSecond(tu))), true
		}
	case famTime:
		if ctt, ok := ct.(*arrow.Time64Type); ok {
			v := new(big.Rat).SetInt64(k.val.(int64))
			return v.Mul(v, big.NewRat(unitsPerSecond(ctt.Unit), unitsPerSecond(t.(*arrow.Time64Type).Unit))), true
		}
	}
	return nil, false
}

// gridLiteral places rational r on the integer grid of a column type.
func gridLiteral(ct arrow.DataType, r *big.Rat) convLit {
	var lo, hi *big.Int
	switch ct := ct.(type) {
	case *arrow.Int32Type, *arrow.Date32Type:
		lo, hi = big.NewInt(math.MinInt32), big.NewInt(math.MaxInt32)
	case *arrow.Decimal128Type:
		hi = new(big.Int).Sub(pow10Big(int(ct.Precision)), big.NewInt(1))
		lo = new(big.Int).Neg(hi)
	default:
		lo, hi = big.NewInt(math.MinInt64), big.NewInt(math.MaxInt64)
	}
	floor := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: floor for a positive denominator
	if new(big.Rat).SetInt(floor).Cmp(r) == 0 {
		switch {
		case floor.Cmp(hi) > 0:
			return convLit{kind: litAbove}
		case floor.Cmp(lo) < 0:
			return convLit{kind: litBelow}
		}
		return convLit{kind: litExact, lit: gridValue(ct, floor)}
	}
	ceil := new(big.Int).Add(floor, big.NewInt(1))
	switch {
	case floor.Cmp(hi) >= 0:
		return convLit{kind: litAbove}
	case ceil.Cmp(lo) <= 0:
		return convLit{kind: litBelow}
	}
	return convLit{kind: litBetween, down: gridValue(ct, floor), up: gridValue(ct, ceil)}
}

func gridValue(ct arrow.DataType, v *big.Int) iceberg.Literal {
	switch ct := ct.(type) {
	case *arrow.Int32Type:
		return iceberg.NewLiteral(int32(v.Int64()))
	case *arrow.Int64Type:
		return iceberg.NewLiteral(v.Int64())
	case *arrow.Decimal128Type:
		return iceberg.NewLiteral(iceberg.Decimal{Val: decimal128.FromBigInt(v), Scale: int(ct.Scale)})
	case *arrow.Date32Type:
		return iceberg.NewLiteral(iceberg.Date(v.Int64()))
	case *arrow.Time64Type:
		return iceberg.NewLiteral(iceberg.Time(v.Int64()))
	case *arrow.TimestampType:
		if ct.Unit == arrow.Nanosecond {
			return iceberg.NewLiteral(iceberg.TimestampNano(v.Int64()))
		}
		return iceberg.NewLiteral(iceberg.Timestamp(v.Int64()))
	}
	panic(fmt.Sprintf("expr: no grid literal for %s", ct))
}
