package expr

import (
	"bytes"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

type cmpKind int

const (
	// cmpCompute: both sides have the same type; arrow's comparison kernels.
	cmpCompute cmpKind = iota
	// cmpFloat: same float type, Spark's NaN semantics (NaN = NaN, NaN is
	// larger than any other value), which arrow's kernels do not follow.
	cmpFloat
	// cmpDecimal: decimals with possibly different scales, compared exactly.
	cmpDecimal
	// cmpGeneric: per-row comparison of canonical values (binary types).
	cmpGeneric
)

// cmpNode is l op r for = <> < <= > >= <=>.
type cmpNode struct {
	op   BinaryOp
	kind cmpKind
	l, r node
}

func (n *cmpNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *cmpNode) kids() []node             { return []node{n.l, n.r} }

var computeCmp = map[BinaryOp]string{
	OpEq: "equal", OpNullSafeEq: "equal", OpNe: "not_equal",
	OpLt: "less", OpLe: "less_equal", OpGt: "greater", OpGe: "greater_equal",
}

// operand is an evaluated side of a binary operator: an array, or a
// constant that was not materialized.
type operand struct {
	arr     arrow.Array
	isConst bool
	val     any
	dt      arrow.DataType
}

func (o operand) release() {
	if o.arr != nil {
		o.arr.Release()
	}
}

func (o operand) datum() compute.Datum {
	if o.isConst {
		return compute.NewDatum(makeScalar(o.dt, o.val))
	}
	return compute.NewDatumWithoutOwning(o.arr)
}

// evalOperands evaluates both sides, keeping at most one side a constant.
func evalOperands(ec *evalCtx, l, r node, sel []byte) (lo, ro operand, err error) {
	side := func(n node, allowConst bool) (operand, error) {
		if c, ok := n.(*constNode); ok && allowConst {
			return operand{isConst: true, val: c.val, dt: c.dt}, nil
		}
		a, err := n.eval(ec, sel)
		return operand{arr: a, dt: n.dataType()}, err
	}
	_, lConst := l.(*constNode)
	if lo, err = side(l, true); err != nil {
		return
	}
	if ro, err = side(r, !lConst); err != nil {
		lo.release()
	}
	return
}

func (n *cmpNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	lo, ro, err := evalOperands(ec, n.l, n.r, sel)
	if err != nil {
		return nil, err
	}
	defer lo.release()
	defer ro.release()
	lNull, rNull := lo.isConst && lo.val == nil, ro.isConst && ro.val == nil
	if lNull || rNull {
		if n.op != OpNullSafeEq {
			return constNull(ec, arrow.FixedWidthTypes.Boolean), nil
		}
		// x <=> NULL is x IS NULL
		out := newBoolOut(ec.mem, ec.n)
		other := lo
		if lNull {
			other = ro
		}
		for i := 0; i < ec.n; i++ {
			out.set(i, other.isConst && other.val == nil || !other.isConst && other.arr.IsNull(i))
		}
		return out.finish(), nil
	}
	var res arrow.Array
	if r, ok := eqStringConst(ec, n.op, lo, ro); ok {
		return r, nil
	}
	if n.kind == cmpCompute {
		res, err = callCompute(ec, computeCmp[n.op], lo.datum(), ro.datum())
		if err != nil {
			return nil, err
		}
	} else {
		res = compareRows(ec, n.kind, n.op, lo, ro)
	}
	if n.op != OpNullSafeEq {
		return res, nil
	}
	defer res.Release()
	return nullSafe(ec, res, lo, ro), nil
}

// eqStringConst is string = / <> constant. arrow's kernel walks values
// through a generic iterator; comparing lengths first is about three times
// faster on typical columns.
func eqStringConst(ec *evalCtx, op BinaryOp, lo, ro operand) (arrow.Array, bool) {
	if op != OpEq && op != OpNe {
		return nil, false
	}
	if lo.isConst {
		lo, ro = ro, lo
	}
	if !ro.isConst || lo.isConst {
		return nil, false
	}
	c, ok := ro.val.(string)
	str, isStr := lo.arr.(*array.String)
	if !ok || !isStr {
		return nil, false
	}
	out := newBoolOut(ec.mem, ec.n)
	offs := str.ValueOffsets()
	want := int32(len(c))
	ne := op == OpNe
	for i := 0; i < ec.n; i++ {
		if offs[i+1]-offs[i] == want {
			if (str.Value(i) == c) != ne {
				bitutil.SetBit(out.bits, i)
			}
		} else if ne {
			bitutil.SetBit(out.bits, i)
		}
	}
	if v := validityOf(lo.arr); !v.all {
		bitutil.CopyBitmap(v.bits, v.off, ec.n, out.vbits, 0)
		out.nulls = lo.arr.NullN()
	}
	return out.finish(), true
}

func constNull(ec *evalCtx, dt arrow.DataType) arrow.Array {
	return array.MakeArrayOfNull(ec.mem, dt, ec.n)
}

// nullSafe turns the result of l = r into l <=> r: TRUE when both are NULL,
// FALSE when one is.
func nullSafe(ec *evalCtx, eq arrow.Array, lo, ro operand) arrow.Array {
	ok := func(o operand) func(int) bool {
		if o.isConst {
			return func(int) bool { return o.val != nil }
		}
		v := validityOf(o.arr)
		return v.ok
	}
	lok, rok := ok(lo), ok(ro)
	ev := viewBool(eq)
	out := newBoolOut(ec.mem, ec.n)
	for i := 0; i < ec.n; i++ {
		a, b := lok(i), rok(i)
		switch {
		case a && b:
			out.set(i, ev.state(i) == 1)
		default:
			out.set(i, a == b)
		}
	}
	return out.finish()
}

func opHolds(op BinaryOp, c int) bool {
	switch op {
	case OpEq, OpNullSafeEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	}
	return c >= 0
}

// compareRows compares row by row with a comparator for kind.
func compareRows(ec *evalCtx, kind cmpKind, op BinaryOp, lo, ro operand) arrow.Array {
	out := newBoolOut(ec.mem, ec.n)
	switch {
	case kind == cmpFloat && lo.dt.ID() == arrow.FLOAT32:
		compareFloats[float32](out, op, lo, ro)
	case kind == cmpFloat:
		compareFloats[float64](out, op, lo, ro)
	case kind == cmpDecimal:
		compareDecimals(out, op, lo, ro)
	default:
		lg, rg := rowGetter(lo), rowGetter(ro)
		for i := 0; i < ec.n; i++ {
			a, b := lg(i), rg(i)
			if a == nil || b == nil {
				out.setNull(i)
				continue
			}
			out.set(i, opHolds(op, compareValues(a, b, lo.dt, ro.dt)))
		}
	}
	return out.finish()
}

func rowGetter(o operand) func(int) any {
	if o.isConst {
		return func(int) any { return o.val }
	}
	return getter(o.arr)
}

// sparkFloatCmp orders floats as Spark does: -0.0 = 0.0, NaN = NaN, and NaN
// above every other value.
func sparkFloatCmp(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compareFloats[T float32 | float64](out *boolOut, op BinaryOp, lo, ro operand) {
	n := out.n
	get := func(o operand) ([]T, T, validity) {
		if o.isConst {
			return nil, T(o.val.(float64)), validity{all: true}
		}
		return arrow.GetValues[T](o.arr.Data(), 1), 0, validityOf(o.arr)
	}
	la, lc, lv := get(lo)
	ra, rc, rv := get(ro)
	for i := 0; i < n; i++ {
		if !lv.ok(i) || !rv.ok(i) {
			out.setNull(i)
			continue
		}
		a, b := lc, rc
		if la != nil {
			a = la[i]
		}
		if ra != nil {
			b = ra[i]
		}
		out.set(i, opHolds(op, sparkFloatCmp(float64(a), float64(b))))
	}
}

func compareDecimals(out *boolOut, op BinaryOp, lo, ro operand) {
	n := out.n
	ls, rs := lo.dt.(*arrow.Decimal128Type).Scale, ro.dt.(*arrow.Decimal128Type).Scale
	get := func(o operand) ([]decimal128.Num, decimal128.Num, validity) {
		if o.isConst {
			return nil, o.val.(decimal128.Num), validity{all: true}
		}
		return arrow.GetValues[decimal128.Num](o.arr.Data(), 1), decimal128.Num{}, validityOf(o.arr)
	}
	la, lc, lv := get(lo)
	ra, rc, rv := get(ro)
	for i := 0; i < n; i++ {
		if !lv.ok(i) || !rv.ok(i) {
			out.setNull(i)
			continue
		}
		a, b := lc, rc
		if la != nil {
			a = la[i]
		}
		if ra != nil {
			b = ra[i]
		}
		var c int
		if ls == rs {
			c = a.Cmp(b)
		} else {
			c = cmpDecimalScaled(a, ls, b, rs)
		}
		out.set(i, opHolds(op, c))
	}
}

// cmpDecimalScaled compares a (scale sa) with b (scale sb) exactly.
func cmpDecimalScaled(a decimal128.Num, sa int32, b decimal128.Num, sb int32) int {
	if a.Sign() != b.Sign() {
		return cmpInt(a.Sign(), b.Sign())
	}
	x, y := a.BigInt(), b.BigInt()
	if sa < sb {
		x.Mul(x, pow10Big(int(sb-sa)))
	} else {
		y.Mul(y, pow10Big(int(sa-sb)))
	}
	return x.Cmp(y)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// compareValues compares two non-NULL canonical values of types that
// commonType accepted and the binder made equal (or decimal).
func compareValues(a, b any, at, bt arrow.DataType) int {
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int64:
		y := b.(int64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case float64:
		return sparkFloatCmp(x, b.(float64))
	case decimal128.Num:
		return cmpDecimalScaled(x, at.(*arrow.Decimal128Type).Scale, b.(decimal128.Num), bt.(*arrow.Decimal128Type).Scale)
	case string:
		y := b.(string)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	case []byte:
		return bytes.Compare(x, b.([]byte))
	}
	panic("expr: incomparable values")
}
