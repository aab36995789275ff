package expr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// binder turns an AST into a tree of typed nodes, inserting the implicit
// casts of the type rules and folding constant sub-trees.
type binder struct {
	schema *arrow.Schema
	opts   options
	used   map[int]bool
	now    int64 // microseconds; see nowMicros
}

func bindErr(pos int, kind error, format string, args ...any) *BindError {
	return &BindError{Pos: pos, Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func (b *binder) bind(e Expr) (node, error) {
	n, err := b.bindNode(e)
	if err != nil {
		return nil, err
	}
	return b.fold(n), nil
}

func (b *binder) bindNode(e Expr) (node, error) {
	switch e := e.(type) {
	case *Literal:
		if _, ok := isInterval(e); ok {
			return nil, bindErr(e.P, ErrType, "%s can only be added to or subtracted from a date or timestamp", e.Text)
		}
		return &constNode{dt: e.Type, val: e.Value}, nil
	case *ColumnRef:
		r, err := b.resolve(e)
		if err != nil {
			return nil, err
		}
		if b.used == nil {
			b.used = map[int]bool{}
		}
		b.used[r.path[0]] = true
		return &colNode{path: r.path, names: r.names, dt: r.dt}, nil
	case *Unary:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if e.Op == OpNot {
			x, err := b.toBool(x, e.X, "NOT")
			if err != nil {
				return nil, err
			}
			return &notNode{x: x}, nil
		}
		switch familyOf(x.dataType()) {
		case famNull:
			return x, nil
		case famInt, famFloat, famDecimal:
			return &negNode{x: x, src: e}, nil
		}
		return nil, bindErr(e.P, ErrType, "cannot negate %s", describe(e.X, x.dataType()))
	case *Binary:
		if iv, ok := isInterval(e.R); ok && (e.Op == OpAdd || e.Op == OpSub) {
			sign := int64(1)
			if e.Op == OpSub {
				sign = -1
			}
			return b.bindInterval(e, e.L, iv, sign)
		}
		if iv, ok := isInterval(e.L); ok && e.Op == OpAdd {
			return b.bindInterval(e, e.R, iv, 1)
		}
		l, err := b.bind(e.L)
		if err != nil {
			return nil, err
		}
		r, err := b.bind(e.R)
		if err != nil {
			return nil, err
		}
		switch {
		case e.Op == OpAnd || e.Op == OpOr:
			if l, err = b.toBool(l, e.L, e.Op.String()); err != nil {
				return nil, err
			}
			if r, err = b.toBool(r, e.R, e.Op.String()); err != nil {
				return nil, err
			}
			return &logicNode{or: e.Op == OpOr, l: l, r: r}, nil
		case e.Op.IsComparison():
			return b.compare(e.Op, e.L, e.R, l, r, e.OpPos)
		case e.Op == OpConcat:
			return b.concat([]Expr{e.L, e.R}, []node{l, r}, e.OpPos)
		}
		return b.arith(e, l, r)
	case *IsNull:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		return &isNullNode{x: x, not: e.Not}, nil
	case *IsBool:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if x, err = b.toBool(x, e.X, "IS TRUE/FALSE"); err != nil {
			return nil, err
		}
		return &isBoolNode{x: x, not: e.Not, value: e.Value}, nil
	case *Between:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		lo, err := b.bind(e.Lo)
		if err != nil {
			return nil, err
		}
		hi, err := b.bind(e.Hi)
		if err != nil {
			return nil, err
		}
		// NB: Spark rewrites BETWEEN to x >= lo AND x <= hi, and NOT BETWEEN to
		// x < lo OR x > hi; both keep three-valued logic.
		opLo, opHi := OpGe, OpLe
		if e.Not {
			opLo, opHi = OpLt, OpGt
		}
		cl, err := b.compare(opLo, e.X, e.Lo, x, lo, e.OpPos)
		if err != nil {
			return nil, err
		}
		ch, err := b.compare(opHi, e.X, e.Hi, x, hi, e.OpPos)
		if err != nil {
			return nil, err
		}
		return &logicNode{or: e.Not, l: b.fold(cl), r: b.fold(ch)}, nil
	case *In:
		return b.in(e)
	case *Like:
		return b.like(e)
	case *Case:
		return b.caseExpr(e)
	case *Cast:
		x, err := b.bind(e.X)
		if err != nil {
			return nil, err
		}
		if !canCast(x.dataType(), e.To) {
			return nil, bindErr(e.P, ErrType, "cannot cast %s to %s", describe(e.X, x.dataType()), typeName(e.To))
		}
		return b.castTo(x, e.To, e)
	case *Call:
		return b.call(e)
	}
	return nil, bindErr(e.Pos(), ErrUnsupported, "unsupported expression %s", e)
}

// fold evaluates n at compile time when it reads no column and cannot fail.
// Constant sub-trees that fail (1/0) are left for Eval, which reports them
// with a row number.
func (b *binder) fold(n node) node {
	if _, ok := n.(*constNode); ok || !constKids(n) {
		return n
	}
	ec := &evalCtx{ctx: compute.WithAllocator(context.Background(), b.opts.mem), mem: b.opts.mem, n: 1}
	arr, err := n.eval(ec, nil)
	if err != nil {
		return n
	}
	defer arr.Release()
	return &constNode{dt: n.dataType(), val: getter(arr)(0)}
}

// constKids reports whether every child of n is a constant: n is folded
// bottom-up, so a constant sub-tree that can be evaluated is a constNode by
// the time its parent is bound. NB: checking the whole sub-tree at every
// level made binding quadratic in the depth (chains of NOT).
func constKids(n node) bool {
	switch n.(type) {
	case *colNode:
		return false
	}
	for _, k := range n.kids() {
		if _, ok := k.(*constNode); !ok {
			return false
		}
	}
	return true
}

// store converts the result of e to type dt under Spark's ANSI store
// assignment rules (see WithResultType).
func (b *binder) store(x node, e Expr, dt arrow.DataType) (node, error) {
	from := x.dataType()
	ff, tf := familyOf(from), familyOf(dt)
	ok := false
	switch {
	case ff == famNull || arrow.TypeEqual(from, dt):
		ok = true
	case isNumeric(from) && isNumeric(dt):
		ok = true
	case (ff == famDate || ff == famTimestamp) && (tf == famDate || tf == famTimestamp):
		ok = true
	case ff == tf && (ff == famString || ff == famBinary || ff == famTime):
		ok = true
	}
	if !ok {
		return nil, bindErr(e.Pos(), ErrType, "cannot store %s into a column of type %s", describe(e, from), typeName(dt))
	}
	n, err := b.castTo(x, dt, e)
	if err != nil {
		return nil, err
	}
	return b.fold(n), nil
}

// toBool checks that x is boolean; a NULL literal becomes a NULL boolean.
func (b *binder) toBool(x node, e Expr, what string) (node, error) {
	switch familyOf(x.dataType()) {
	case famBool:
		return x, nil
	case famNull:
		return &constNode{dt: arrow.FixedWidthTypes.Boolean}, nil
	}
	return nil, bindErr(e.Pos(), ErrType, "%s needs a boolean operand but found %s", what, describe(e, x.dataType()))
}

// castTo converts x to type to. Constants are converted now; a constant that
// does not convert is an ErrInvalidCast/ErrOverflow BindError.
func (b *binder) castTo(x node, to arrow.DataType, src Expr) (node, error) {
	if arrow.TypeEqual(x.dataType(), to) {
		return x, nil
	}
	if c, ok := x.(*constNode); ok {
		v, err := castValue(c.val, c.dt, to)
		if err != nil {
			return nil, &BindError{Pos: src.Pos(), Kind: kindOf(err), Msg: fmt.Sprintf("%v in %s", err, src)}
		}
		return &constNode{dt: to, val: v}, nil
	}
	return &castNode{x: x, to: to, src: src}, nil
}

func kindOf(err error) error {
	for _, k := range []error{ErrOverflow, ErrInvalidCast, ErrDivideByZero, ErrInvalidArgument} {
		if errors.Is(err, k) {
			return k
		}
	}
	return ErrInvalidCast
}

// coerceStringLiteral converts a constant string compared with a value of
// type other: to a number literal when other is numeric, else to other's
// type (DATE, TIMESTAMP, BOOLEAN). It returns the node unchanged when no
// coercion applies.
func (b *binder) coerceStringLiteral(n node, e Expr, other arrow.DataType, otherExpr Expr) (node, error) {
	c, ok := n.(*constNode)
	if !ok || familyOf(c.dt) != famString || c.val == nil {
		return n, nil
	}
	s := c.val.(string)
	switch familyOf(other) {
	case famInt, famFloat, famDecimal:
		t := strings.TrimSpace(s)
		neg := strings.HasPrefix(t, "-")
		body := t
		if neg || strings.HasPrefix(t, "+") {
			body = t[1:]
		}
		tok := token{kind: tNumber, text: body, end: len(body)}
		var lit *Literal
		var err error
		if body != "" && (isDigit(body[0]) || body[0] == '.') && validNumber(body) {
			minus := -1
			if neg {
				minus = 0
			}
			lit, err = numberLiteral(body, tok, minus)
		} else {
			err = fmt.Errorf("not a number")
		}
		if err != nil {
			return nil, bindErr(e.Pos(), ErrInvalidCast, "cannot compare %s with string %s: it is not a number",
				describe(otherExpr, other), quoteString(s))
		}
		return &constNode{dt: lit.Type, val: lit.Value}, nil
	case famDate, famTimestamp, famBool:
		v, err := castValue(s, c.dt, other)
		if err != nil {
			return nil, bindErr(e.Pos(), ErrInvalidCast, "cannot compare %s with string %s: %v",
				describe(otherExpr, other), quoteString(s), err)
		}
		return &constNode{dt: other, val: v}, nil
	}
	return n, nil
}

func validNumber(s string) bool {
	_, _, ok := parseDecimalText(s)
	return ok
}

// compare binds l op r for a comparison operator.
func (b *binder) compare(op BinaryOp, le, re Expr, l, r node, pos int) (node, error) {
	var err error
	if l, err = b.coerceStringLiteral(l, le, r.dataType(), re); err != nil {
		return nil, err
	}
	if r, err = b.coerceStringLiteral(r, re, l.dataType(), le); err != nil {
		return nil, err
	}
	lt, rt := l.dataType(), r.dataType()
	t, ok := commonType(lt, rt)
	if !ok || familyOf(t) == famStruct || familyOf(t) == famOther {
		return nil, bindErr(pos, ErrType, "cannot compare %s with %s", describe(le, lt), describe(re, rt))
	}
	cmp := &cmpNode{op: op}
	switch familyOf(t) {
	case famNull:
		if op == OpNullSafeEq {
			return &constNode{dt: arrow.FixedWidthTypes.Boolean, val: true}, nil
		}
		return &constNode{dt: arrow.FixedWidthTypes.Boolean}, nil
	case famDecimal:
		// NB: decimals are compared exactly whatever their scales; integers
		// are viewed as decimals of their width (literals of their digits).
		if l, err = b.castTo(l, asDecimal(l), le); err != nil {
			return nil, err
		}
		if r, err = b.castTo(r, asDecimal(r), re); err != nil {
			return nil, err
		}
		l, r = alignDecimalConst(l, r)
		cmp.kind = cmpDecimal
	case famFloat:
		cmp.kind = cmpFloat
		fallthrough
	default:
		if familyOf(t) == famString {
			t = stringTarget(lt, rt)
		}
		if familyOf(t) == famBinary || familyOf(t) == famBool {
			// arrow has no ordering kernels for booleans, nor kernels for
			// fixed_size_binary against binary
			cmp.kind = cmpGeneric
		}
		if l, err = b.castTo(l, t, le); err != nil {
			return nil, err
		}
		if r, err = b.castTo(r, t, re); err != nil {
			return nil, err
		}
	}
	cmp.l, cmp.r = l, r
	return cmp, nil
}

// stringTarget picks the string type both sides of a string comparison are
// brought to: large_string only when both are.
func stringTarget(a, b arrow.DataType) arrow.DataType {
	if a.ID() == arrow.LARGE_STRING && (b.ID() == arrow.LARGE_STRING || familyOf(b) == famNull) {
		return a
	}
	if b.ID() == arrow.LARGE_STRING && familyOf(a) == famNull {
		return b
	}
	return arrow.BinaryTypes.String
}

// asDecimal gives the decimal type a numeric node is viewed as when it meets
// a decimal: integer literals take the precision of their digits (Spark's
// rule for literals), other integers the width of their type.
func asDecimal(n node) arrow.DataType {
	dt := n.dataType()
	switch familyOf(dt) {
	case famDecimal:
		return dt
	case famNull:
		return decType(1, 0)
	}
	if c, ok := n.(*constNode); ok && c.val != nil {
		v := c.val.(int64)
		d := 1
		for x := v; x >= 10 || x <= -10; x /= 10 {
			d++
		}
		return decType(int32(d), 0)
	}
	return decimalOf(dt)
}

// alignDecimalConst rescales a decimal constant to the scale of the other
// (non-constant) side when that is exact, so the comparison kernel compares
// unscaled values directly.
func alignDecimalConst(l, r node) (node, node) {
	align := func(c *constNode, other node) node {
		if c.val == nil {
			return c
		}
		ct, ot := c.dt.(*arrow.Decimal128Type), other.dataType().(*arrow.Decimal128Type)
		if ct.Scale > ot.Scale {
			return c
		}
		u := rescaleHalfUp(c.val.(decimal128.Num).BigInt(), int(ct.Scale), int(ot.Scale))
		p := int32(max(digits(u), int(ot.Scale), 1))
		if p > 38 {
			return c
		}
		return &constNode{dt: decType(p, ot.Scale), val: decimal128.FromBigInt(u)}
	}
	if c, ok := r.(*constNode); ok {
		if _, lc := l.(*constNode); !lc {
			return l, align(c, l)
		}
	}
	if c, ok := l.(*constNode); ok {
		if _, rc := r.(*constNode); !rc {
			return align(c, r), r
		}
	}
	return l, r
}

// arith binds + - * / %.
func (b *binder) arith(e *Binary, l, r node) (node, error) {
	lt, rt := l.dataType(), r.dataType()
	fl, fr := familyOf(lt), familyOf(rt)
	if n, ok, err := b.dateArith(e, l, r); ok {
		return n, err
	}
	if !(isNumeric(lt) || fl == famNull) || !(isNumeric(rt) || fr == famNull) {
		return nil, bindErr(e.OpPos, ErrType, "cannot apply %q to %s and %s", e.Op.String(), describe(e.L, lt), describe(e.R, rt))
	}
	if fl == famNull && fr == famNull {
		return &constNode{dt: arrow.Null}, nil
	}
	var err error
	t := widerNumeric(lt, rt)
	if e.Op == OpDiv && familyOf(t) == famInt {
		t = arrow.PrimitiveTypes.Float64
	}
	switch familyOf(t) {
	case famInt, famFloat:
		if l, err = b.castTo(l, t, e.L); err != nil {
			return nil, err
		}
		if r, err = b.castTo(r, t, e.R); err != nil {
			return nil, err
		}
		return &arithNode{op: e.Op, l: l, r: r, dt: t, src: e}, nil
	}
	ld, rd := asDecimal(l).(*arrow.Decimal128Type), asDecimal(r).(*arrow.Decimal128Type)
	if l, err = b.castTo(l, ld, e.L); err != nil {
		return nil, err
	}
	if r, err = b.castTo(r, rd, e.R); err != nil {
		return nil, err
	}
	return &arithNode{op: e.Op, l: l, r: r, dt: decimalResult(e.Op, ld, rd), src: e}, nil
}

// decimalResult is Spark's result type for decimal arithmetic.
func decimalResult(op BinaryOp, a, b *arrow.Decimal128Type) *arrow.Decimal128Type {
	p1, s1, p2, s2 := a.Precision, a.Scale, b.Precision, b.Scale
	switch op {
	case OpAdd, OpSub:
		s := max(s1, s2)
		return adjustDecimal(max(p1-s1, p2-s2)+s+1, s)
	case OpMul:
		return adjustDecimal(p1+p2+1, s1+s2)
	case OpDiv:
		s := max(6, s1+p2+1)
		return adjustDecimal(p1-s1+s2+s, s)
	}
	s := max(s1, s2)
	return adjustDecimal(min(p1-s1, p2-s2)+s, s)
}

// concat binds CONCAT(args) and a || b: every argument is converted to
// STRING.
func (b *binder) concat(exprs []Expr, args []node, pos int) (node, error) {
	out := make([]node, len(args))
	for i, a := range args {
		s, err := b.toString(a, exprs[i], "CONCAT")
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return &funcNode{name: "CONCAT", args: out, dt: arrow.BinaryTypes.String}, nil
}

func (b *binder) toString(a node, e Expr, what string) (node, error) {
	dt := a.dataType()
	if familyOf(dt) == famNull {
		return &constNode{dt: arrow.BinaryTypes.String}, nil
	}
	if dt.ID() == arrow.STRING {
		return a, nil
	}
	if !canCast(dt, arrow.BinaryTypes.String) {
		return nil, bindErr(e.Pos(), ErrType, "%s needs string arguments but found %s", what, describe(e, dt))
	}
	return b.castTo(a, arrow.BinaryTypes.String, e)
}

func (b *binder) in(e *In) (node, error) {
	x, err := b.bind(e.X)
	if err != nil {
		return nil, err
	}
	items := make([]node, len(e.List))
	allConst := true
	for i, it := range e.List {
		n, err := b.bind(it)
		if err != nil {
			return nil, err
		}
		if n, err = b.coerceStringLiteral(n, it, x.dataType(), e.X); err != nil {
			return nil, err
		}
		items[i] = n
		_, isConst := n.(*constNode)
		allConst = allConst && isConst
	}
	t := x.dataType()
	for i, it := range items {
		ct, ok := commonType(t, it.dataType())
		if !ok || familyOf(ct) == famStruct || familyOf(ct) == famOther {
			return nil, bindErr(e.List[i].Pos(), ErrType, "cannot compare %s with %s in the IN list", describe(e.X, x.dataType()), describe(e.List[i], it.dataType()))
		}
		t = ct
	}
	if !allConst || familyOf(t) == famNull {
		// x IN (a, b) is x = a OR x = b, with the same NULL semantics.
		var or node
		for i, it := range items {
			c, err := b.compare(OpEq, e.X, e.List[i], x, it, e.OpPos)
			if err != nil {
				return nil, err
			}
			c = b.fold(c)
			if or == nil {
				or = c
			} else {
				or = &logicNode{or: true, l: or, r: c}
			}
		}
		if e.Not {
			return &notNode{x: or}, nil
		}
		return or, nil
	}
	if t.ID() == arrow.LARGE_STRING {
		t = arrow.BinaryTypes.String
	}
	if x, err = b.castTo(x, t, e.X); err != nil {
		return nil, err
	}
	set := newValueSet(t)
	for i, it := range items {
		c, err := b.castTo(it, t, e.List[i])
		if err != nil {
			return nil, err
		}
		set.add(c.(*constNode).val)
	}
	return &inNode{x: x, set: set, not: e.Not}, nil
}

func (b *binder) like(e *Like) (node, error) {
	x, err := b.bind(e.X)
	if err != nil {
		return nil, err
	}
	pat, err := b.bind(e.Pattern)
	if err != nil {
		return nil, err
	}
	switch familyOf(x.dataType()) {
	case famString, famNull:
	default:
		return nil, bindErr(e.X.Pos(), ErrType, "LIKE needs a string operand but found %s", describe(e.X, x.dataType()))
	}
	c, ok := pat.(*constNode)
	if !ok {
		return nil, bindErr(e.Pattern.Pos(), ErrUnsupported, "LIKE needs a constant string pattern but found %s", describe(e.Pattern, pat.dataType()))
	}
	switch familyOf(c.dt) {
	case famNull:
		return &constNode{dt: arrow.FixedWidthTypes.Boolean}, nil
	case famString:
	default:
		return nil, bindErr(e.Pattern.Pos(), ErrType, "LIKE needs a string pattern but found %s", describe(e.Pattern, c.dt))
	}
	m, err := compileLike(c.val.(string))
	if err != nil {
		return nil, bindErr(e.Pattern.Pos(), ErrType, "bad LIKE pattern %s: %v", quoteString(c.val.(string)), err)
	}
	if familyOf(x.dataType()) == famNull {
		return &constNode{dt: arrow.FixedWidthTypes.Boolean}, nil
	}
	return &likeNode{x: x, m: m, not: e.Not}, nil
}

// unify converts nodes to one common type, for CASE results and COALESCE.
func (b *binder) unify(exprs []Expr, nodes []node, what string) ([]node, arrow.DataType, error) {
	t := arrow.DataType(arrow.Null)
	for i, n := range nodes {
		ct, ok := commonType(t, n.dataType())
		if !ok {
			return nil, nil, bindErr(exprs[i].Pos(), ErrType, "%s has incompatible types: %s does not fit %s", what, describe(exprs[i], n.dataType()), typeName(t))
		}
		t = ct
	}
	if familyOf(t) == famString {
		t = arrow.BinaryTypes.String
	}
	out := make([]node, len(nodes))
	for i, n := range nodes {
		c, err := b.castTo(n, t, exprs[i])
		if err != nil {
			return nil, nil, err
		}
		out[i] = c
	}
	return out, t, nil
}

func (b *binder) caseExpr(e *Case) (node, error) {
	var operand node
	var err error
	if e.Operand != nil {
		if operand, err = b.bind(e.Operand); err != nil {
			return nil, err
		}
	}
	cn := &caseNode{}
	var resExprs []Expr
	var results []node
	for _, w := range e.Whens {
		c, err := b.bind(w.Cond)
		if err != nil {
			return nil, err
		}
		if operand != nil {
			if c, err = b.compare(OpEq, e.Operand, w.Cond, operand, c, w.Cond.Pos()); err != nil {
				return nil, err
			}
			c = b.fold(c)
		} else if c, err = b.toBool(c, w.Cond, "WHEN"); err != nil {
			return nil, err
		}
		r, err := b.bind(w.Result)
		if err != nil {
			return nil, err
		}
		cn.conds = append(cn.conds, c)
		results = append(results, r)
		resExprs = append(resExprs, w.Result)
	}
	if e.Else != nil {
		r, err := b.bind(e.Else)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
		resExprs = append(resExprs, e.Else)
	}
	results, t, err := b.unify(resExprs, results, "CASE")
	if err != nil {
		return nil, err
	}
	cn.dt = t
	cn.results = results[:len(e.Whens)]
	if e.Else != nil {
		cn.els = results[len(e.Whens)]
	} else {
		cn.els = &constNode{dt: t}
	}
	return cn, nil
}

func (b *binder) call(e *Call) (node, error) {
	args := make([]node, len(e.Args))
	for i, a := range e.Args {
		n, err := b.bind(a)
		if err != nil {
			return nil, err
		}
		args[i] = n
	}
	if f, ok := builtinByName[e.Name]; ok && f.bind != nil {
		return f.bind(b, e, args)
	}
	switch e.Name {
	case "COALESCE", "IFNULL":
		out, t, err := b.unify(e.Args, args, e.Name)
		if err != nil {
			return nil, err
		}
		return &coalesceNode{args: out, dt: t}, nil
	case "NULLIF":
		c, err := b.compare(OpEq, e.Args[0], e.Args[1], args[0], args[1], e.P)
		if err != nil {
			return nil, err
		}
		t := args[0].dataType()
		return &caseNode{conds: []node{b.fold(c)}, results: []node{&constNode{dt: t}}, els: args[0], dt: t}, nil
	case "CONCAT":
		return b.concat(e.Args, args, e.P)
	case "LOWER", "UPPER", "TRIM":
		s, err := b.toString(args[0], e.Args[0], e.Name)
		if err != nil {
			return nil, err
		}
		return &funcNode{name: e.Name, args: []node{s}, dt: arrow.BinaryTypes.String}, nil
	case "LENGTH":
		a := args[0]
		if familyOf(a.dataType()) != famBinary {
			s, err := b.toString(a, e.Args[0], e.Name)
			if err != nil {
				return nil, err
			}
			a = s
		}
		return &funcNode{name: e.Name, args: []node{a}, dt: arrow.PrimitiveTypes.Int32}, nil
	case "ABS":
		dt := args[0].dataType()
		switch familyOf(dt) {
		case famNull:
			return args[0], nil
		case famInt, famFloat, famDecimal:
			return &funcNode{name: e.Name, args: args, dt: dt, src: e}, nil
		}
		return nil, bindErr(e.Args[0].Pos(), ErrType, "ABS needs a number but found %s", describe(e.Args[0], dt))
	}
	return nil, bindErr(e.P, ErrUnknownFunction, "unknown function %s", e.Name)
}
