package expr

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// roundBig rounds the unscaled value u by dropping drop > 0 decimal
// digits, half up (away from zero) or half to even.
func roundBig(u *big.Int, drop int, even bool) *big.Int {
	div := pow10Big(drop)
	q, r := new(big.Int).QuoRem(u, div, new(big.Int))
	twice := new(big.Int).Abs(r)
	twice.Lsh(twice, 1)
	c := twice.Cmp(div)
	if c > 0 || (c == 0 && (!even || q.Bit(0) == 1)) {
		if u.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// roundFloat rounds x to d decimal places the way Spark does: on the
// shortest decimal that reads back as x (Scala's BigDecimal(double)).
func roundFloat(x float64, d int64, even bool) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x == 0 {
		return x
	}
	s := strconv.FormatFloat(x, 'e', -1, 64) // -d.ddddde±xx
	mant, exp, _ := strings.Cut(s, "e")
	e, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	u, _ := new(big.Int).SetString(digits, 10)
	frac := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		frac = len(mant) - i - 1
	}
	scale := int64(frac - e) // x = u * 10^-scale
	if scale <= d {
		return x
	}
	drop := scale - d
	if drop > int64(len(digits))+1 {
		return math.Copysign(0, 1)
	}
	r := roundBig(u, int(drop), even)
	f, _ := strconv.ParseFloat(r.String()+"e"+strconv.FormatInt(-d, 10), 64)
	if f == 0 {
		return 0
	}
	return f
}

func roundBind(even bool) func(*binder, *Call, []node) (node, error) {
	return func(b *binder, e *Call, args []node) (node, error) {
		x := args[0]
		var d int64
		if len(args) > 1 {
			var err error
			if d, err = constIntArg(e, args, 1, "the scale"); err != nil {
				return nil, err
			}
			if d < -400 || d > 400 {
				return nil, bindErr(e.Args[1].Pos(), ErrInvalidArgument, "%s: scale %d is out of range -400 to 400", strings.ToLower(e.Name), d)
			}
		}
		dt := x.dataType()
		switch familyOf(dt) {
		case famNull:
			return &constNode{dt: f64Type}, nil
		case famInt:
			if d >= 0 {
				return x, nil
			}
			lo, hi := intRange(intBits(dt))
			return fn(e, dt, []node{x}, func(v []any) (any, error) {
				r := roundBig(big.NewInt(v[0].(int64)), int(-d), even)
				r.Mul(r, pow10Big(int(-d)))
				if !r.IsInt64() || r.Int64() < lo || r.Int64() > hi {
					return nil, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(dt))
				}
				return r.Int64(), nil
			}), nil
		case famFloat:
			return pureFn(e, dt, []node{x}, func(v []any) any {
				r := roundFloat(v[0].(float64), d, even)
				if dt.ID() == arrow.FLOAT32 {
					return float64(float32(r))
				}
				return r
			}), nil
		case famDecimal:
			t := dt.(*arrow.Decimal128Type)
			p, s := t.Precision, t.Scale
			var out *arrow.Decimal128Type
			if d < 0 {
				out = decType(min(max(p-s+1, int32(-d)+1), 38), 0)
			} else {
				ns := min(s, int32(d))
				out = decType(min(p-s+1+ns, 38), ns)
			}
			return fn(e, out, []node{x}, func(v []any) (any, error) {
				u := v[0].(decimal128.Num).BigInt()
				if int64(s) > d {
					u = roundBig(u, int(int64(s)-d), even)
					if d < 0 {
						u.Mul(u, pow10Big(int(-d)))
					}
				}
				if digits(u) > int(out.Precision) {
					return nil, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(out))
				}
				return decimal128.FromBigInt(u), nil
			}), nil
		}
		return nil, argTypeErr(e, 0, "a number", x)
	}
}

// javaLong converts like Java's (long) cast: NaN is 0, out of range
// saturates.
func javaLong(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func ceilFloorBind(ceil bool) func(*binder, *Call, []node) (node, error) {
	return func(b *binder, e *Call, args []node) (node, error) {
		x := args[0]
		dt := x.dataType()
		switch familyOf(dt) {
		case famNull:
			return &constNode{dt: i64Type}, nil
		case famInt:
			return b.castTo(x, i64Type, e.Args[0])
		case famFloat:
			return pureFn(e, i64Type, []node{x}, func(v []any) any {
				if ceil {
					return javaLong(math.Ceil(v[0].(float64)))
				}
				return javaLong(math.Floor(v[0].(float64)))
			}), nil
		case famDecimal:
			t := dt.(*arrow.Decimal128Type)
			out := decType(min(t.Precision-t.Scale+1, 38), 0)
			return fn(e, out, []node{x}, func(v []any) (any, error) {
				u := v[0].(decimal128.Num).BigInt()
				q, r := new(big.Int).QuoRem(u, pow10Big(int(t.Scale)), new(big.Int))
				if ceil && r.Sign() > 0 {
					q.Add(q, big.NewInt(1))
				}
				if !ceil && r.Sign() < 0 {
					q.Sub(q, big.NewInt(1))
				}
				if digits(q) > int(out.Precision) {
					return nil, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(out))
				}
				return decimal128.FromBigInt(q), nil
			}), nil
		}
		return nil, argTypeErr(e, 0, "a number", x)
	}
}

func pmodBind(b *binder, e *Call, args []node) (node, error) {
	for i, a := range args {
		if f := familyOf(a.dataType()); f != famNull && !isNumeric(a.dataType()) {
			return nil, argTypeErr(e, i, "a number", a)
		}
	}
	lt, rt := args[0].dataType(), args[1].dataType()
	if familyOf(lt) == famNull && familyOf(rt) == famNull {
		return &constNode{dt: i32Type}, nil
	}
	t := widerNumeric(lt, rt)
	zero := fmt.Errorf("%w: pmod by zero", ErrDivideByZero)
	switch familyOf(t) {
	case famInt, famFloat:
		x, err := b.castTo(args[0], t, e.Args[0])
		if err != nil {
			return nil, err
		}
		n, err := b.castTo(args[1], t, e.Args[1])
		if err != nil {
			return nil, err
		}
		if familyOf(t) == famFloat {
			return fn(e, t, []node{x, n}, func(v []any) (any, error) {
				a, m := v[0].(float64), v[1].(float64)
				if m == 0 {
					return nil, zero
				}
				r := math.Mod(a, m)
				if r < 0 {
					r = math.Mod(r+m, m)
				}
				return r, nil
			}), nil
		}
		return fn(e, t, []node{x, n}, func(v []any) (any, error) {
			a, m := v[0].(int64), v[1].(int64)
			if m == 0 {
				return nil, zero
			}
			r := a % m
			if r < 0 {
				// |r| < |m|: r + m cannot overflow when m > 0; for m < 0 Spark
				// gives (r + m) % m as well
				r = (r + m) % m
			}
			return r, nil
		}), nil
	}
	ld, rd := asDecimal(args[0]).(*arrow.Decimal128Type), asDecimal(args[1]).(*arrow.Decimal128Type)
	x, err := b.castTo(args[0], ld, e.Args[0])
	if err != nil {
		return nil, err
	}
	n, err := b.castTo(args[1], rd, e.Args[1])
	if err != nil {
		return nil, err
	}
	out := decimalResult(OpMod, ld, rd)
	return fn(e, out, []node{x, n}, func(v []any) (any, error) {
		s := out.Scale
		a := rescaleHalfUp(v[0].(decimal128.Num).BigInt(), int(ld.Scale), int(s))
		m := rescaleHalfUp(v[1].(decimal128.Num).BigInt(), int(rd.Scale), int(s))
		if m.Sign() == 0 {
			return nil, zero
		}
		r := new(big.Int).Rem(a, m)
		if r.Sign() < 0 {
			r.Add(r, m)
			r.Rem(r, m)
		}
		if digits(r) > int(out.Precision) {
			return nil, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(out))
		}
		return decimal128.FromBigInt(r), nil
	}), nil
}

// extremeBind is greatest (sign 1) and least (sign -1): NULLs are skipped.
func extremeBind(sign int) func(*binder, *Call, []node) (node, error) {
	return func(b *binder, e *Call, args []node) (node, error) {
		out, t, err := b.unify(e.Args, args, e.Name)
		if err != nil {
			return nil, err
		}
		switch familyOf(t) {
		case famStruct, famOther, famTime:
			return nil, argTypeErr(e, 0, "comparable values", args[0])
		case famNull:
			return &constNode{dt: t}, nil
		}
		r := pureFn(e, t, out, func(v []any) any {
			var best any
			for _, x := range v {
				if x != nil && (best == nil || compareValues(x, best, t, t)*sign > 0) {
					best = x
				}
			}
			return best
		})
		r.lenient = true
		return r, nil
	}
}

func mathBuiltins() []*builtin {
	f64 := func(v any) float64 { return v.(float64) }
	unary := func(name string, aliases []string, doc string, f func(x float64) any) *builtin {
		return def(name, aliases, 1, 1, strings.ToLower(name)+"(x DOUBLE) -> DOUBLE", doc,
			simplePure(f64Type, func(v []any) any { return f(f64(v[0])) }, aDouble))
	}
	logOf := func(g func(float64) float64) func(x float64) any {
		return func(x float64) any {
			if x <= 0 {
				return nil
			}
			return g(x)
		}
	}
	return []*builtin{
		def("ROUND", nil, 1, 2, "round(x NUMERIC[, d INT]) -> type of x", "x rounded half up to d decimal places (0 by default; negative d rounds left of the point); a DECIMAL(p,s) becomes DECIMAL(p-s+1+min(s,d), min(s,d)) as in Spark.",
			roundBind(false)),
		def("BROUND", nil, 1, 2, "bround(x NUMERIC[, d INT]) -> type of x", "x rounded half to even (banker's rounding) to d decimal places.",
			roundBind(true)),
		def("CEIL", []string{"CEILING"}, 1, 1, "ceil(x NUMERIC) -> BIGINT | DECIMAL(p-s+1,0)", "The smallest integer not below x.",
			ceilFloorBind(true)),
		def("FLOOR", nil, 1, 1, "floor(x NUMERIC) -> BIGINT | DECIMAL(p-s+1,0)", "The largest integer not above x.",
			ceilFloorBind(false)),
		def("MOD", nil, 2, 2, "mod(a NUMERIC, b NUMERIC) -> common type", "The remainder of a / b with the sign of a (as a % b); b = 0 is an error.",
			func(b *binder, e *Call, args []node) (node, error) {
				return b.arith(&Binary{OpPos: e.P, Op: OpMod, L: e.Args[0], R: e.Args[1]}, args[0], args[1])
			}),
		def("PMOD", nil, 2, 2, "pmod(a NUMERIC, b NUMERIC) -> common type", "The remainder of a / b made non-negative for b > 0; b = 0 is an error.",
			pmodBind),
		def("POWER", []string{"POW"}, 2, 2, "power(x DOUBLE, y DOUBLE) -> DOUBLE", "x raised to the power y.",
			simplePure(f64Type, func(v []any) any { return math.Pow(f64(v[0]), f64(v[1])) }, aDouble)),
		unary("SQRT", nil, "The square root of x (NaN for negative x).", func(x float64) any { return math.Sqrt(x) }),
		unary("EXP", nil, "e raised to the power x.", func(x float64) any { return exp(x) }),
		unary("LN", nil, "The natural logarithm of x; NULL for x <= 0.", logOf(math.Log)),
		unary("LOG10", nil, "The base-10 logarithm of x; NULL for x <= 0.", logOf(log10)),
		unary("LOG2", nil, "The base-2 logarithm of x; NULL for x <= 0.", logOf(func(x float64) float64 { return math.Log(x) / math.Ln2 })),
		def("LOG", nil, 1, 2, "log([base DOUBLE,] x DOUBLE) -> DOUBLE", "The logarithm of x to base (e by default); NULL when x or base <= 0.",
			simplePure(f64Type, func(v []any) any {
				if len(v) == 1 {
					return logOf(math.Log)(f64(v[0]))
				}
				base, x := f64(v[0]), f64(v[1])
				if base <= 0 || x <= 0 {
					return nil
				}
				return math.Log(x) / math.Log(base)
			}, aDouble)),
		unary("SIGN", []string{"SIGNUM"}, "-1.0, 0.0 or 1.0 as x is negative, zero or positive.", func(x float64) any {
			switch {
			case x > 0:
				return 1.0
			case x < 0:
				return -1.0
			}
			return x // 0, -0 or NaN
		}),
		def("GREATEST", nil, 2, -1, "greatest(a, b, ...) -> common type", "The largest argument, skipping NULLs; NULL only when all are NULL.",
			extremeBind(1)),
		def("LEAST", nil, 2, -1, "least(a, b, ...) -> common type", "The smallest argument, skipping NULLs; NULL only when all are NULL.",
			extremeBind(-1)),
	}
}

// log10 is fdlibm's __ieee754_log10, which Java's StrictMath.log10 and so
// Spark use; Go's math.Log10 differs from it in the last digit.
func log10(x float64) float64 {
	const (
		two54     = 1.80143985094819840000e+16
		ivln10    = 4.34294481903251816668e-01
		log10_2hi = 3.01029995663611771306e-01
		log10_2lo = 3.69423907715893078616e-13
	)
	bits := math.Float64bits(x)
	hx := int32(bits >> 32)
	k := int32(0)
	switch {
	case math.IsNaN(x) || x < 0:
		return math.NaN()
	case x == 0:
		return math.Inf(-1)
	case math.IsInf(x, 1):
		return x
	}
	if hx < 0x00100000 { // subnormal
		k -= 54
		x *= two54
		bits = math.Float64bits(x)
		hx = int32(bits >> 32)
	}
	k += hx>>20 - 1023
	i := int32(uint32(k) >> 31)
	hx = hx&0x000fffff | (0x3ff-i)<<20
	y := float64(k + i)
	x = math.Float64frombits(uint64(uint32(hx))<<32 | bits&0xffffffff)
	z := y*log10_2lo + ivln10*math.Log(x)
	return z + y*log10_2hi
}

// exp is fdlibm's __ieee754_exp, which Java's StrictMath.exp and so Spark
// use (Go's math.Exp runs an assembly version on some platforms that can
// differ in the last digit).
func exp(x float64) float64 {
	const (
		ln2hi  = 6.93147180369123816490e-01
		ln2lo  = 1.90821492927058770002e-10
		invln2 = 1.44269504088896338700e+00
		p1     = 1.66666666666666019037e-01
		p2     = -2.77777777770155933842e-03
		p3     = 6.61375632143793436117e-05
		p4     = -1.65339022054652515390e-06
		p5     = 4.13813679705723846039e-08
		over   = 7.09782712893383973096e+02
		under  = -7.45133219101941108420e+02
	)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return x
	case math.IsInf(x, -1):
		return 0
	case x > over:
		return math.Inf(1)
	case x < under:
		return 0
	case math.Abs(x) < 1.0/(1<<28):
		return 1 + x
	}
	var hi, lo float64
	k := 0
	if math.Abs(x) > 0.5*math.Ln2 {
		if x < 0 {
			k = int(invln2*x - 0.5)
		} else {
			k = int(invln2*x + 0.5)
		}
		hi = x - float64(k)*ln2hi
		lo = float64(k) * ln2lo
		x = hi - lo
	}
	t := x * x
	c := x - t*(p1+t*(p2+t*(p3+t*(p4+t*p5))))
	if k == 0 {
		return 1 - ((x*c)/(c-2) - x)
	}
	y := 1 - ((lo - (x*c)/(2-c)) - hi)
	return math.Ldexp(y, k)
}
