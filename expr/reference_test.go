package expr

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// refEval is a deliberately simple row-at-a-time interpreter of bound
// trees, written independently of the vectorized kernels: exact arithmetic
// with math/big, comparisons on rationals, a recursive LIKE matcher. The
// randomized test checks that both agree. Casts outside the numeric and
// temporal widenings fall back to castValue, which the vectorized path also
// uses for them.
func refEval(n node, rec arrow.RecordBatch, row int) (any, error) {
	switch n := n.(type) {
	case *constNode:
		return n.val, nil
	case *colNode:
		var arr arrow.Array = rec.Column(n.path[0])
		for _, idx := range n.path[1:] {
			st := arr.(*array.Struct)
			if st.IsNull(row) {
				return nil, nil
			}
			arr = st.Field(idx)
		}
		return getter(arr)(row), nil
	case *castNode:
		v, err := refEval(n.x, rec, row)
		if err != nil || v == nil {
			return nil, err
		}
		return refCast(v, n.x.dataType(), n.to)
	case *notNode:
		v, err := refEval(n.x, rec, row)
		if err != nil || v == nil {
			return nil, err
		}
		return !v.(bool), nil
	case *logicNode:
		l, err := refEval(n.l, rec, row)
		if err != nil {
			return nil, err
		}
		// the decided value: FALSE for AND, TRUE for OR
		if l != nil && l.(bool) == n.or {
			return n.or, nil
		}
		r, err := refEval(n.r, rec, row)
		if err != nil {
			return nil, err
		}
		switch {
		case r != nil && r.(bool) == n.or:
			return n.or, nil
		case l == nil || r == nil:
			return nil, nil
		}
		return !n.or, nil
	case *isNullNode:
		v, err := refEval(n.x, rec, row)
		if err != nil {
			return nil, err
		}
		return (v == nil) != n.not, nil
	case *isBoolNode:
		v, err := refEval(n.x, rec, row)
		if err != nil {
			return nil, err
		}
		return (v != nil && v.(bool) == n.value) != n.not, nil
	case *cmpNode:
		l, err := refEval(n.l, rec, row)
		if err != nil {
			return nil, err
		}
		r, err := refEval(n.r, rec, row)
		if err != nil {
			return nil, err
		}
		if l == nil || r == nil {
			if n.op == OpNullSafeEq {
				return l == nil && r == nil, nil
			}
			return nil, nil
		}
		return opHolds(n.op, refCompare(l, n.l.dataType(), r, n.r.dataType())), nil
	case *arithNode:
		l, err := refEval(n.l, rec, row)
		if err != nil {
			return nil, err
		}
		r, err := refEval(n.r, rec, row)
		if err != nil || l == nil || r == nil {
			return nil, err
		}
		return refArith(n.op, l, n.l.dataType(), r, n.r.dataType(), n.dt)
	case *negNode:
		v, err := refEval(n.x, rec, row)
		if err != nil || v == nil {
			return nil, err
		}
		dt := n.dataType()
		switch familyOf(dt) {
		case famFloat:
			return -v.(float64), nil
		case famDecimal:
			return v.(decimal128.Num).Negate(), nil
		}
		return refFitInt(new(big.Int).Neg(big.NewInt(v.(int64))), dt)
	case *inNode:
		v, err := refEval(n.x, rec, row)
		if err != nil || v == nil {
			return nil, err
		}
		for _, x := range n.set.values {
			if refCompare(v, n.x.dataType(), x, n.set.dt) == 0 {
				return !n.not, nil
			}
		}
		if n.set.hasNull {
			return nil, nil
		}
		return n.not, nil
	case *likeNode:
		v, err := refEval(n.x, rec, row)
		if err != nil || v == nil {
			return nil, err
		}
		return refLike(v.(string), n.m.src) != n.not, nil
	case *caseNode:
		for k, c := range n.conds {
			cv, err := refEval(c, rec, row)
			if err != nil {
				return nil, err
			}
			if cv != nil && cv.(bool) {
				return refEval(n.results[k], rec, row)
			}
		}
		return refEval(n.els, rec, row)
	case *coalesceNode:
		for _, a := range n.args {
			v, err := refEval(a, rec, row)
			if err != nil || v != nil {
				return v, err
			}
		}
		return nil, nil
	case *funcNode:
		args := make([]any, len(n.args))
		for i, a := range n.args {
			v, err := refEval(a, rec, row)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		for _, a := range args {
			if a == nil {
				return nil, nil
			}
		}
		switch n.name {
		case "CONCAT":
			var b strings.Builder
			for _, a := range args {
				b.WriteString(a.(string))
			}
			return b.String(), nil
		case "LOWER":
			return strings.ToLower(args[0].(string)), nil
		case "UPPER":
			return strings.ToUpper(args[0].(string)), nil
		case "TRIM":
			return strings.Trim(args[0].(string), " "), nil
		case "LENGTH":
			if b, ok := args[0].([]byte); ok {
				return int64(len(b)), nil
			}
			return int64(utf8.RuneCountInString(args[0].(string))), nil
		case "ABS":
			switch v := args[0].(type) {
			case float64:
				return math.Abs(v), nil
			case decimal128.Num:
				return v.Abs(), nil
			}
			return refFitInt(new(big.Int).Abs(big.NewInt(args[0].(int64))), n.dt)
		}
	}
	panic(fmt.Sprintf("refEval: %T", n))
}

// refLike matches a LIKE pattern by recursion over runes.
func refLike(s, pat string) bool {
	sr, pr := []rune(s), []rune(pat)
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if j == len(pr) {
			return i == len(sr)
		}
		switch pr[j] {
		case '%':
			for k := i; k <= len(sr); k++ {
				if match(k, j+1) {
					return true
				}
			}
			return false
		case '_':
			return i < len(sr) && match(i+1, j+1)
		case '\\':
			j++
		}
		return i < len(sr) && sr[i] == pr[j] && match(i+1, j+1)
	}
	return match(0, 0)
}

func refRat(v any, dt arrow.DataType) *big.Rat {
	switch x := v.(type) {
	case int64:
		return new(big.Rat).SetInt64(x)
	case decimal128.Num:
		return new(big.Rat).SetFrac(x.BigInt(), pow10Big(int(dt.(*arrow.Decimal128Type).Scale)))
	case float64:
		return new(big.Rat).SetFloat64(x)
	}
	panic(fmt.Sprintf("refRat %T", v))
}

func refCompare(a any, at arrow.DataType, b any, bt arrow.DataType) int {
	switch x := a.(type) {
	case float64:
		return refFloatCmp(x, b.(float64))
	case int64, decimal128.Num:
		if isNumeric(at) {
			return refRat(a, at).Cmp(refRat(b, bt))
		}
		y := b.(int64)
		switch {
		case x.(int64) < y:
			return -1
		case x.(int64) > y:
			return 1
		}
		return 0
	case string:
		return strings.Compare(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	}
	panic(fmt.Sprintf("refCompare %T", a))
}

// refFloatCmp is Spark's float order: NaN equals NaN and is above all
// numbers, -0.0 equals 0.0.
func refFloatCmp(a, b float64) int {
	if math.IsNaN(a) || math.IsNaN(b) {
		switch {
		case math.IsNaN(a) && math.IsNaN(b):
			return 0
		case math.IsNaN(b):
			return -1
		}
		return 1
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func refFitInt(v *big.Int, dt arrow.DataType) (any, error) {
	lo, hi := intRange(intBits(dt))
	if !v.IsInt64() || v.Int64() < lo || v.Int64() > hi {
		return nil, ErrOverflow
	}
	return v.Int64(), nil
}

// refDecimal rounds an exact value half away from zero to dt's scale and
// checks the precision.
func refDecimal(r *big.Rat, dt *arrow.Decimal128Type) (any, error) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow10Big(int(dt.Scale))))
	// round half away from zero: trunc(|x| + 1/2) with x's sign
	abs := new(big.Rat).Abs(scaled)
	abs.Add(abs, big.NewRat(1, 2))
	q := new(big.Int).Quo(abs.Num(), abs.Denom())
	if scaled.Sign() < 0 {
		q.Neg(q)
	}
	if digits(q) > int(dt.Precision) {
		return nil, ErrOverflow
	}
	return decimal128.FromBigInt(q), nil
}

func refArith(op BinaryOp, a any, at arrow.DataType, b any, bt arrow.DataType, dt arrow.DataType) (any, error) {
	switch familyOf(dt) {
	case famFloat:
		x, y := a.(float64), b.(float64)
		var r float64
		switch op {
		case OpAdd:
			r = x + y
		case OpSub:
			r = x - y
		case OpMul:
			r = x * y
		case OpDiv, OpMod:
			if y == 0 {
				return nil, ErrDivideByZero
			}
			if op == OpDiv {
				r = x / y
			} else {
				r = math.Mod(x, y)
			}
		}
		if dt.ID() == arrow.FLOAT32 {
			r = float64(float32(r))
		}
		return r, nil
	case famInt:
		x, y := big.NewInt(a.(int64)), big.NewInt(b.(int64))
		switch op {
		case OpAdd:
			return refFitInt(x.Add(x, y), dt)
		case OpSub:
			return refFitInt(x.Sub(x, y), dt)
		case OpMul:
			return refFitInt(x.Mul(x, y), dt)
		}
		if y.Sign() == 0 {
			return nil, ErrDivideByZero
		}
		return refFitInt(x.Rem(x, y), dt)
	}
	x, y := refRat(a, at), refRat(b, bt)
	var r *big.Rat
	switch op {
	case OpAdd:
		r = new(big.Rat).Add(x, y)
	case OpSub:
		r = new(big.Rat).Sub(x, y)
	case OpMul:
		r = new(big.Rat).Mul(x, y)
	case OpDiv, OpMod:
		if y.Sign() == 0 {
			return nil, ErrDivideByZero
		}
		q := new(big.Rat).Quo(x, y)
		if op == OpDiv {
			r = q
		} else {
			t := new(big.Int).Quo(q.Num(), q.Denom()) // truncated quotient
			r = new(big.Rat).Sub(x, new(big.Rat).Mul(y, new(big.Rat).SetInt(t)))
		}
	}
	return refDecimal(r, dt.(*arrow.Decimal128Type))
}

func refCast(v any, from, to arrow.DataType) (any, error) {
	ff, tf := familyOf(from), familyOf(to)
	switch {
	case arrow.TypeEqual(from, to):
		return v, nil
	case ff == famInt && tf == famInt:
		return refFitInt(big.NewInt(v.(int64)), to)
	case (ff == famInt || ff == famDecimal) && tf == famDecimal:
		return refDecimal(refRat(v, from), to.(*arrow.Decimal128Type))
	case (ff == famInt || ff == famDecimal) && tf == famFloat:
		f, _ := refRat(v, from).Float64()
		if to.ID() == arrow.FLOAT32 {
			f = float64(float32(f))
		}
		return f, nil
	case ff == famFloat && to.ID() == arrow.FLOAT64:
		return v, nil
	case ff == famDate && tf == famTimestamp:
		return v.(int64) * unitsPerDay(to.(*arrow.TimestampType).Unit), nil
	case ff == famString && tf == famString:
		return v, nil
	}
	out, err := castValue(v, from, to)
	if err != nil {
		return nil, errors.Join(kindOf(err), err)
	}
	return out, nil
}
