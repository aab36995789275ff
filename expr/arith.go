package expr

import (
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// arithNode is l op r for + - * / %. The binder has converted both sides to
// dt for integer and float results; for decimal results each side keeps its
// own decimal type and dt is Spark's result type.
type arithNode struct {
	op   BinaryOp
	l, r node
	dt   arrow.DataType
	src  *Binary
}

func (n *arithNode) dataType() arrow.DataType { return n.dt }
func (n *arithNode) kids() []node             { return []node{n.l, n.r} }

func (n *arithNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	lo, ro, err := evalOperands(ec, n.l, n.r, sel)
	if err != nil {
		return nil, err
	}
	defer lo.release()
	defer ro.release()
	if (lo.isConst && lo.val == nil) || (ro.isConst && ro.val == nil) {
		return constNull(ec, n.dt), nil
	}
	switch n.dt.ID() {
	case arrow.INT8:
		return arithInts[int8](ec, n, lo, ro, sel)
	case arrow.INT16:
		return arithInts[int16](ec, n, lo, ro, sel)
	case arrow.INT32:
		return arithInts[int32](ec, n, lo, ro, sel)
	case arrow.INT64:
		return arithInts[int64](ec, n, lo, ro, sel)
	case arrow.FLOAT32, arrow.FLOAT64:
		if n.op == OpAdd || n.op == OpSub || n.op == OpMul {
			// IEEE arithmetic cannot fail: arrow's kernels are exact for it.
			fn := map[BinaryOp]string{OpAdd: "add_unchecked", OpSub: "sub_unchecked", OpMul: "multiply_unchecked"}[n.op]
			return callCompute(ec, fn, lo.datum(), ro.datum())
		}
		if n.dt.ID() == arrow.FLOAT32 {
			return divFloats[float32](ec, n, lo, ro, sel)
		}
		return divFloats[float64](ec, n, lo, ro, sel)
	case arrow.DECIMAL128:
		return arithDecimals(ec, n, lo, ro, sel)
	}
	return nil, fmt.Errorf("expr: arithmetic on %s", n.dt)
}

// side reads one operand of a fixed-width type: values or a constant.
func side[T arrow.FixedWidthType](o operand, conv func(any) T) ([]T, T, validity) {
	if o.isConst {
		return nil, conv(o.val), validity{all: true}
	}
	return arrow.GetValues[T](o.arr.Data(), 1), *new(T), validityOf(o.arr)
}

func intConv[T int8 | int16 | int32 | int64](v any) T { return T(v.(int64)) }

// add64 adds with an overflow flag: overflow happens only when a and b have
// the same sign and the sum has the other.
func add64(a, b int64) (int64, bool) {
	s := a + b
	return s, (a >= 0) != (b >= 0) || (s >= 0) == (a >= 0)
}

func sub64(a, b int64) (int64, bool) {
	d := a - b
	return d, (a >= 0) == (b >= 0) || (d >= 0) == (a >= 0)
}

func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	p := a * b
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) || p/b != a {
		return p, false
	}
	return p, true
}

func arithInts[T int8 | int16 | int32 | int64](ec *evalCtx, n *arithNode, lo, ro operand, sel []byte) (arrow.Array, error) {
	la, lc, lv := side(lo, intConv[T])
	ra, rc, rv := side(ro, intConv[T])
	lim, him := intRange(intBits(n.dt))
	o := newFixedOut[T](ec.mem, ec.n)
	for i := 0; i < ec.n; i++ {
		if !lv.ok(i) || !rv.ok(i) {
			o.setNull(i)
			continue
		}
		a, b := lc, rc
		if la != nil {
			a = la[i]
		}
		if ra != nil {
			b = ra[i]
		}
		var r int64
		ok := true
		var fail error
		switch n.op {
		case OpAdd:
			r, ok = add64(int64(a), int64(b))
		case OpSub:
			r, ok = sub64(int64(a), int64(b))
		case OpMul:
			r, ok = mul64(int64(a), int64(b))
		case OpMod:
			if b == 0 {
				fail = ErrDivideByZero
			} else {
				r = int64(a) % int64(b)
			}
		}
		if fail == nil && (!ok || r < lim || r > him) {
			fail = fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(n.dt))
		}
		if fail != nil {
			if active(sel, i) {
				o.discard()
				return nil, evalErr(n.src, i, fail)
			}
			o.setNull(i)
			continue
		}
		o.vals[i] = T(r)
	}
	return o.finish(n.dt), nil
}

func floatConv[T float32 | float64](v any) T { return T(v.(float64)) }

// divFloats is / and % on floats: a zero divisor is an error (ANSI).
func divFloats[T float32 | float64](ec *evalCtx, n *arithNode, lo, ro operand, sel []byte) (arrow.Array, error) {
	la, lc, lv := side(lo, floatConv[T])
	ra, rc, rv := side(ro, floatConv[T])
	o := newFixedOut[T](ec.mem, ec.n)
	for i := 0; i < ec.n; i++ {
		if !lv.ok(i) || !rv.ok(i) {
			o.setNull(i)
			continue
		}
		a, b := lc, rc
		if la != nil {
			a = la[i]
		}
		if ra != nil {
			b = ra[i]
		}
		if b == 0 {
			if active(sel, i) {
				o.discard()
				return nil, evalErr(n.src, i, ErrDivideByZero)
			}
			o.setNull(i)
			continue
		}
		if n.op == OpDiv {
			o.vals[i] = T(float64(a) / float64(b))
		} else {
			o.vals[i] = T(math.Mod(float64(a), float64(b)))
		}
	}
	return o.finish(n.dt), nil
}

func decConv(v any) decimal128.Num { return v.(decimal128.Num) }

var pow10Int64 = func() []int64 {
	out := make([]int64, 19)
	out[0] = 1
	for i := 1; i < len(out); i++ {
		out[i] = out[i-1] * 10
	}
	return out
}()

// roundHalfUp64 divides v by 10^k rounding half away from zero.
func roundHalfUp64(v int64, k int32) int64 {
	if k == 0 {
		return v
	}
	d := pow10Int64[k]
	q, r := v/d, v%d
	if r < 0 {
		r = -r
	}
	if 2*r >= d {
		if v < 0 {
			q--
		} else {
			q++
		}
	}
	return q
}

// arithDecimals follows Spark: exact operation, then rounding half up to the
// result scale; a result with more digits than the result precision is an
// overflow error.
func arithDecimals(ec *evalCtx, n *arithNode, lo, ro operand, sel []byte) (arrow.Array, error) {
	lt, rt, dt := lo.dt.(*arrow.Decimal128Type), ro.dt.(*arrow.Decimal128Type), n.dt.(*arrow.Decimal128Type)
	p1, s1, p2, s2, p, s := lt.Precision, lt.Scale, rt.Precision, rt.Scale, dt.Precision, dt.Scale
	m := max(s1, s2)
	// NB: the int64 fast path applies when every intermediate value stays
	// below 10^18, which the input precisions guarantee.
	fast := false
	switch n.op {
	case OpAdd, OpSub, OpMod:
		fast = p1+m-s1 <= 18 && p2+m-s2 <= 18
	case OpMul:
		fast = p1+p2 <= 18
	}
	la, lc, lv := side(lo, decConv)
	ra, rc, rv := side(ro, decConv)
	o := newFixedOut[decimal128.Num](ec.mem, ec.n)
	var limit int64 = math.MaxInt64
	if p <= 18 {
		limit = pow10Int64[p]
	}
	overflow := fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(dt))
	for i := 0; i < ec.n; i++ {
		if !lv.ok(i) || !rv.ok(i) {
			o.setNull(i)
			continue
		}
		a, b := lc, rc
		if la != nil {
			a = la[i]
		}
		if ra != nil {
			b = ra[i]
		}
		var fail error
		if fast {
			x, y := int64(a.LowBits()), int64(b.LowBits())
			var r int64
			switch n.op {
			case OpAdd, OpSub:
				x *= pow10Int64[m-s1]
				y *= pow10Int64[m-s2]
				if n.op == OpAdd {
					r = x + y
				} else {
					r = x - y
				}
				r = roundHalfUp64(r, m-s)
			case OpMul:
				r = roundHalfUp64(x*y, s1+s2-s)
			case OpMod:
				x *= pow10Int64[m-s1]
				y *= pow10Int64[m-s2]
				if y == 0 {
					fail = ErrDivideByZero
				} else {
					r = roundHalfUp64(x%y, m-s)
				}
			}
			if fail == nil && (r >= limit || r <= -limit) {
				fail = overflow
			}
			if fail == nil {
				o.vals[i] = decimal128.FromI64(r)
				continue
			}
		} else {
			r, err := decimalOpBig(n.op, a.BigInt(), s1, b.BigInt(), s2, s)
			switch {
			case err != nil:
				fail = err
			case digits(r) > int(p):
				fail = overflow
			default:
				o.vals[i] = decimal128.FromBigInt(r)
				continue
			}
		}
		if active(sel, i) {
			o.discard()
			return nil, evalErr(n.src, i, fail)
		}
		o.setNull(i)
	}
	return o.finish(dt), nil
}

// decimalOpBig computes x op y for unscaled x (scale s1) and y (scale s2)
// and returns the unscaled result at scale s, rounded half up.
func decimalOpBig(op BinaryOp, x *big.Int, s1 int32, y *big.Int, s2 int32, s int32) (*big.Int, error) {
	m := max(s1, s2)
	switch op {
	case OpAdd, OpSub:
		x.Mul(x, pow10Big(int(m-s1)))
		y.Mul(y, pow10Big(int(m-s2)))
		if op == OpAdd {
			x.Add(x, y)
		} else {
			x.Sub(x, y)
		}
		return rescaleHalfUp(x, int(m), int(s)), nil
	case OpMul:
		x.Mul(x, y)
		return rescaleHalfUp(x, int(s1+s2), int(s)), nil
	case OpDiv:
		if y.Sign() == 0 {
			return nil, ErrDivideByZero
		}
		// value = (x/10^s1) / (y/10^s2); unscaled at s = x*10^(s2+s) / (y*10^s1)
		x.Mul(x, pow10Big(int(s2+s)))
		y.Mul(y, pow10Big(int(s1)))
		return divHalfUp(x, y), nil
	}
	if y.Sign() == 0 {
		return nil, ErrDivideByZero
	}
	x.Mul(x, pow10Big(int(m-s1)))
	y.Mul(y, pow10Big(int(m-s2)))
	x.Rem(x, y)
	return rescaleHalfUp(x, int(m), int(s)), nil
}

// negNode is -x.
type negNode struct {
	x   node
	src *Unary
}

func (n *negNode) dataType() arrow.DataType { return n.x.dataType() }
func (n *negNode) kids() []node             { return []node{n.x} }
func (n *negNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := n.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	dt := x.DataType()
	switch familyOf(dt) {
	case famFloat:
		return callCompute(ec, "negate_unchecked", compute.NewDatumWithoutOwning(x))
	case famDecimal:
		return mapFixed(ec, x, dt, func(v decimal128.Num) (decimal128.Num, error) { return v.Negate(), nil }, sel, n.src)
	}
	lim, _ := intRange(intBits(dt))
	negInt := func(v int64) (int64, error) {
		if v == lim {
			return 0, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(dt))
		}
		return -v, nil
	}
	switch dt.ID() {
	case arrow.INT8:
		return mapFixed(ec, x, dt, func(v int8) (int8, error) { r, err := negInt(int64(v)); return int8(r), err }, sel, n.src)
	case arrow.INT16:
		return mapFixed(ec, x, dt, func(v int16) (int16, error) { r, err := negInt(int64(v)); return int16(r), err }, sel, n.src)
	case arrow.INT32:
		return mapFixed(ec, x, dt, func(v int32) (int32, error) { r, err := negInt(int64(v)); return int32(r), err }, sel, n.src)
	}
	return mapFixed(ec, x, dt, negInt, sel, n.src)
}

// mapFixed applies f to every valid value of a fixed-width array. Errors on
// rows outside sel give NULL.
func mapFixed[T, R arrow.FixedWidthType](ec *evalCtx, x arrow.Array, dt arrow.DataType, f func(T) (R, error), sel []byte, src Expr) (arrow.Array, error) {
	vals := arrow.GetValues[T](x.Data(), 1)
	v := validityOf(x)
	o := newFixedOut[R](ec.mem, x.Len())
	for i := 0; i < x.Len(); i++ {
		if !v.ok(i) {
			o.setNull(i)
			continue
		}
		r, err := f(vals[i])
		if err != nil {
			if active(sel, i) {
				o.discard()
				return nil, evalErr(src, i, err)
			}
			o.setNull(i)
			continue
		}
		o.vals[i] = r
	}
	return o.finish(dt), nil
}
