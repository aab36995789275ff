package expr

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Values travel through the slow (per-row) paths in a canonical Go form that
// depends only on the type family (see Literal for the list): bool, int64
// for integers, dates (days), times and timestamps (in the type's unit),
// float64 for both float widths, decimal128.Num (unscaled, the scale is in
// the type), string, []byte, and nil for NULL.

// getter returns a function reading row i of arr in canonical form.
func getter(arr arrow.Array) func(i int) any {
	valid := func(i int) bool { return arr.IsValid(i) }
	switch a := arr.(type) {
	case *array.Null:
		return func(int) any { return nil }
	case *array.Boolean:
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return a.Value(i)
		}
	case *array.Int8:
		return intGetter(a.Int8Values(), valid)
	case *array.Int16:
		return intGetter(a.Int16Values(), valid)
	case *array.Int32:
		return intGetter(a.Int32Values(), valid)
	case *array.Int64:
		return intGetter(a.Int64Values(), valid)
	case *array.Date32:
		return intGetter(a.Date32Values(), valid)
	case *array.Time64:
		return intGetter(a.Time64Values(), valid)
	case *array.Timestamp:
		return intGetter(a.TimestampValues(), valid)
	case *array.Float32:
		vals := a.Float32Values()
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return float64(vals[i])
		}
	case *array.Float64:
		vals := a.Float64Values()
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return vals[i]
		}
	case *array.Decimal128:
		vals := a.Values()
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return vals[i]
		}
	case *array.String:
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return a.Value(i)
		}
	case *array.LargeString:
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return a.Value(i)
		}
	case *array.Binary:
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return a.Value(i)
		}
	case *array.LargeBinary:
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return a.Value(i)
		}
	case *array.FixedSizeBinary:
		return func(i int) any {
			if !valid(i) {
				return nil
			}
			return a.Value(i)
		}
	}
	panic(fmt.Sprintf("expr: no getter for %s", arr.DataType()))
}

func intGetter[T ~int8 | ~int16 | ~int32 | ~int64](vals []T, valid func(int) bool) func(int) any {
	return func(i int) any {
		if !valid(i) {
			return nil
		}
		return int64(vals[i])
	}
}

// appendValue appends a canonical value (nil = NULL) to a builder of the
// matching type.
func appendValue(b array.Builder, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int8Builder:
		b.Append(int8(v.(int64)))
	case *array.Int16Builder:
		b.Append(int16(v.(int64)))
	case *array.Int32Builder:
		b.Append(int32(v.(int64)))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int64)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	default:
		panic(fmt.Sprintf("expr: cannot append to %T", b))
	}
}

// makeScalar converts a canonical value to an Arrow scalar of type dt.
func makeScalar(dt arrow.DataType, v any) scalar.Scalar {
	if v == nil {
		return scalar.MakeNullScalar(dt)
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		return scalar.NewBooleanScalar(v.(bool))
	case *arrow.Int8Type:
		return scalar.NewInt8Scalar(int8(v.(int64)))
	case *arrow.Int16Type:
		return scalar.NewInt16Scalar(int16(v.(int64)))
	case *arrow.Int32Type:
		return scalar.NewInt32Scalar(int32(v.(int64)))
	case *arrow.Int64Type:
		return scalar.NewInt64Scalar(v.(int64))
	case *arrow.Float32Type:
		return scalar.NewFloat32Scalar(float32(v.(float64)))
	case *arrow.Float64Type:
		return scalar.NewFloat64Scalar(v.(float64))
	case *arrow.Date32Type:
		return scalar.NewDate32Scalar(arrow.Date32(v.(int64)))
	case *arrow.Time64Type:
		return scalar.NewTime64Scalar(arrow.Time64(v.(int64)), dt)
	case *arrow.TimestampType:
		return scalar.NewTimestampScalar(arrow.Timestamp(v.(int64)), dt)
	case *arrow.Decimal128Type:
		return scalar.NewDecimal128Scalar(v.(decimal128.Num), dt)
	case *arrow.StringType:
		return scalar.NewStringScalar(v.(string))
	case *arrow.LargeStringType:
		return scalar.NewLargeStringScalar(v.(string))
	case *arrow.BinaryType:
		return scalar.NewBinaryScalar(memory.NewBufferBytes(v.([]byte)), dt)
	case *arrow.LargeBinaryType:
		return scalar.NewLargeBinaryScalar(memory.NewBufferBytes(v.([]byte)))
	case *arrow.FixedSizeBinaryType:
		return scalar.NewFixedSizeBinaryScalar(memory.NewBufferBytes(v.([]byte)), dt)
	}
	panic(fmt.Sprintf("expr: no scalar for %s", dt))
}

// castValue converts a canonical value of type from to type to with ANSI
// semantics: values that do not fit are ErrOverflow, unparsable strings
// ErrInvalidCast. The error message does not name the expression; callers
// wrap it.
func castValue(v any, from, to arrow.DataType) (any, error) {
	if v == nil {
		return nil, nil
	}
	if arrow.TypeEqual(from, to) {
		return v, nil
	}
	ff, tf := familyOf(from), familyOf(to)
	overflow := func() error {
		return fmt.Errorf("%w: %s value %s does not fit %s", ErrOverflow, typeName(from), formatValue(v, from), typeName(to))
	}
	switch tf {
	case famString:
		return formatValue(v, from), nil
	case famBool:
		switch ff {
		case famInt:
			return v.(int64) != 0, nil
		case famFloat:
			return v.(float64) != 0, nil
		case famDecimal:
			return v.(decimal128.Num).Sign() != 0, nil
		case famString:
			switch strings.ToLower(strings.TrimSpace(v.(string))) {
			case "t", "true", "y", "yes", "1":
				return true, nil
			case "f", "false", "n", "no", "0":
				return false, nil
			}
			return nil, fmt.Errorf("%w: string %s is not a boolean", ErrInvalidCast, quoteString(v.(string)))
		}
	case famInt:
		lo, hi := intRange(intBits(to))
		var x int64
		switch ff {
		case famBool:
			if v.(bool) {
				x = 1
			}
		case famInt:
			x = v.(int64)
		case famFloat:
			f := math.Trunc(v.(float64))
			if math.IsNaN(f) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 {
				return nil, overflow()
			}
			x = int64(f)
		case famDecimal:
			b := v.(decimal128.Num).BigInt()
			b.Quo(b, pow10Big(int(from.(*arrow.Decimal128Type).Scale)))
			if !b.IsInt64() {
				return nil, overflow()
			}
			x = b.Int64()
		case famString:
			s := strings.TrimSpace(v.(string))
			u, scale, ok := parseDecimalText(s)
			if !ok || strings.ContainsAny(s, "eE") {
				return nil, fmt.Errorf("%w: string %s is not a number", ErrInvalidCast, quoteString(v.(string)))
			}
			if scale > 0 {
				u.Quo(u, pow10Big(scale))
			}
			if !u.IsInt64() {
				return nil, overflow()
			}
			x = u.Int64()
		default:
			return nil, badCast(from, to)
		}
		if x < lo || x > hi {
			return nil, overflow()
		}
		return x, nil
	case famFloat:
		var f float64
		switch ff {
		case famBool:
			if v.(bool) {
				f = 1
			}
		case famInt:
			f = float64(v.(int64))
		case famFloat:
			f = v.(float64)
		case famDecimal:
			f = decimalToFloat(v.(decimal128.Num), from.(*arrow.Decimal128Type).Scale)
		case famString:
			s := strings.TrimSpace(v.(string))
			var err error
			f, err = strconv.ParseFloat(s, 64)
			if err != nil && !strings.Contains(err.Error(), "range") {
				return nil, fmt.Errorf("%w: string %s is not a number", ErrInvalidCast, quoteString(v.(string)))
			}
		default:
			return nil, badCast(from, to)
		}
		if to.ID() == arrow.FLOAT32 {
			f = float64(float32(f))
		}
		return f, nil
	case famDecimal:
		dt := to.(*arrow.Decimal128Type)
		var u *big.Int
		scale := 0
		switch ff {
		case famBool:
			u = big.NewInt(0)
			if v.(bool) {
				u.SetInt64(1)
			}
		case famInt:
			u = big.NewInt(v.(int64))
		case famDecimal:
			u, scale = v.(decimal128.Num).BigInt(), int(from.(*arrow.Decimal128Type).Scale)
		case famFloat:
			f := v.(float64)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, overflow()
			}
			// NB: like Scala's BigDecimal(double), start from the shortest
			// decimal representation, so 0.1 becomes 0.1 and not
			// 0.1000000000000000055511151231257827.
			var ok bool
			u, scale, ok = parseDecimalText(strconv.FormatFloat(f, 'g', -1, 64))
			if !ok {
				return nil, overflow()
			}
		case famString:
			var ok bool
			s := strings.TrimSpace(v.(string))
			u, scale, ok = parseDecimalText(s)
			if !ok {
				return nil, fmt.Errorf("%w: string %s is not a number", ErrInvalidCast, quoteString(v.(string)))
			}
		default:
			return nil, badCast(from, to)
		}
		r := rescaleHalfUp(u, scale, int(dt.Scale))
		if digits(r) > int(dt.Precision) {
			return nil, overflow()
		}
		return decimal128.FromBigInt(r), nil
	case famDate:
		switch ff {
		case famString:
			d, err := parseDate(v.(string))
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidCast, err)
			}
			return d, nil
		case famTimestamp:
			per := unitsPerDay(from.(*arrow.TimestampType).Unit)
			return floorDiv(v.(int64), per), nil
		}
	case famTimestamp:
		tt := to.(*arrow.TimestampType)
		switch ff {
		case famString:
			us, err := parseTimestamp(v.(string), tt.TimeZone != "")
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrInvalidCast, err)
			}
			return convertUnit(us, arrow.Microsecond, tt.Unit, overflow)
		case famDate:
			d := v.(int64)
			per := unitsPerDay(tt.Unit)
			if d > math.MaxInt64/per || d < math.MinInt64/per {
				return nil, overflow()
			}
			return d * per, nil
		case famTimestamp:
			return convertUnit(v.(int64), from.(*arrow.TimestampType).Unit, tt.Unit, overflow)
		}
	case famTime:
		if ff == famTime {
			return convertUnit(v.(int64), from.(*arrow.Time64Type).Unit, to.(*arrow.Time64Type).Unit, overflow)
		}
	case famBinary:
		var b []byte
		switch ff {
		case famString:
			b = []byte(v.(string))
		case famBinary:
			b = v.([]byte)
		default:
			return nil, badCast(from, to)
		}
		if fs, ok := to.(*arrow.FixedSizeBinaryType); ok && len(b) != fs.ByteWidth {
			return nil, fmt.Errorf("%w: %d bytes do not fit %s", ErrInvalidCast, len(b), to)
		}
		return b, nil
	}
	return nil, badCast(from, to)
}

func badCast(from, to arrow.DataType) error {
	return fmt.Errorf("%w: cannot cast %s to %s", ErrInvalidCast, typeName(from), typeName(to))
}

// canCast reports whether castValue supports converting from to to.
func canCast(from, to arrow.DataType) bool {
	ff, tf := familyOf(from), familyOf(to)
	switch {
	case arrow.TypeEqual(from, to) || ff == famNull:
		return true
	case ff == famStruct || ff == famOther:
		return false
	}
	switch tf {
	case famString:
		return true
	case famBool, famInt, famFloat, famDecimal:
		return ff == famBool || isNumeric(from) || ff == famString
	case famDate, famTimestamp:
		return ff == famString || ff == famDate || ff == famTimestamp
	case famBinary:
		return ff == famString || ff == famBinary
	case famTime:
		return ff == famTime
	}
	return false
}

func unitsPerDay(u arrow.TimeUnit) int64 {
	return 86_400 * unitsPerSecond(u)
}

func unitsPerSecond(u arrow.TimeUnit) int64 {
	switch u {
	case arrow.Second:
		return 1
	case arrow.Millisecond:
		return 1_000
	case arrow.Microsecond:
		return 1_000_000
	}
	return 1_000_000_000
}

// convertUnit converts a time value between units, flooring when the target
// is coarser.
func convertUnit(v int64, from, to arrow.TimeUnit, overflow func() error) (any, error) {
	fs, ts := unitsPerSecond(from), unitsPerSecond(to)
	switch {
	case fs == ts:
		return v, nil
	case ts > fs:
		m := ts / fs
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return nil, overflow()
		}
		return v * m, nil
	}
	return floorDiv(v, fs/ts), nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// rescaleHalfUp converts unscaled u at scale from to scale to, rounding half
// away from zero when digits are dropped.
func rescaleHalfUp(u *big.Int, from, to int) *big.Int {
	switch {
	case to == from:
		return new(big.Int).Set(u)
	case to > from:
		return new(big.Int).Mul(u, pow10Big(to-from))
	}
	return divHalfUp(u, pow10Big(from-to))
}

// divHalfUp returns n/d rounded half away from zero.
func divHalfUp(n, d *big.Int) *big.Int {
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Sign() == 0 {
		return q
	}
	r2 := new(big.Int).Abs(r)
	r2.Lsh(r2, 1)
	if r2.Cmp(new(big.Int).Abs(d)) >= 0 {
		if (n.Sign() < 0) != (d.Sign() < 0) {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// decimalToFloat converts exactly-rounded (nearest) like Java's
// BigDecimal.doubleValue.
func decimalToFloat(n decimal128.Num, scale int32) float64 {
	if n.HighBits() == 0 && n.LowBits() < 1<<53 || n.HighBits() == -1 && n.LowBits() > math.MaxUint64-(1<<53) {
		// small unscaled values: one correctly rounded division
		u := float64(int64(n.LowBits()))
		if scale >= 0 && scale <= 22 {
			return u / math.Pow10(int(scale))
		}
	}
	r := new(big.Rat).SetFrac(n.BigInt(), pow10Big(int(scale)))
	f, _ := r.Float64()
	return f
}

// formatValue renders a canonical value the way CAST(... AS STRING) does.
func formatValue(v any, dt arrow.DataType) string {
	if v == nil {
		return "NULL"
	}
	switch familyOf(dt) {
	case famBool:
		return strconv.FormatBool(v.(bool))
	case famInt:
		return strconv.FormatInt(v.(int64), 10)
	case famFloat:
		bits := 64
		if dt.ID() == arrow.FLOAT32 {
			bits = 32
		}
		return javaFloatString(v.(float64), bits)
	case famDecimal:
		return v.(decimal128.Num).ToString(dt.(*arrow.Decimal128Type).Scale)
	case famString:
		return v.(string)
	case famBinary:
		return string(v.([]byte))
	case famDate:
		return formatDate(v.(int64))
	case famTimestamp:
		return formatTimestamp(v.(int64), dt.(*arrow.TimestampType).Unit)
	case famTime:
		u := dt.(*arrow.Time64Type).Unit
		return formatTimestamp(v.(int64), u)[11:]
	}
	return fmt.Sprint(v)
}

// javaFloatString formats like Java's Double.toString / Float.toString, which
// Spark uses for CAST(double AS STRING): 1.0, 0.001, 1.0E7, 1.0E-4, NaN,
// Infinity.
func javaFloatString(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	a := math.Abs(f)
	if a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}
