package expr

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// family groups Arrow types that behave alike in the language.
type family int

const (
	famOther family = iota // lists, maps, unions...: only IS [NOT] NULL
	famNull
	famBool
	famInt
	famFloat
	famDecimal
	famString
	famBinary
	famDate
	famTime
	famTimestamp
	famStruct
)

func familyOf(dt arrow.DataType) family {
	switch dt.ID() {
	case arrow.NULL:
		return famNull
	case arrow.BOOL:
		return famBool
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		return famInt
	case arrow.FLOAT32, arrow.FLOAT64:
		return famFloat
	case arrow.DECIMAL128:
		return famDecimal
	case arrow.STRING, arrow.LARGE_STRING:
		return famString
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.FIXED_SIZE_BINARY:
		return famBinary
	case arrow.DATE32:
		return famDate
	case arrow.TIME64:
		return famTime
	case arrow.TIMESTAMP:
		return famTimestamp
	case arrow.STRUCT:
		return famStruct
	}
	return famOther
}

func isNumeric(dt arrow.DataType) bool {
	f := familyOf(dt)
	return f == famInt || f == famFloat || f == famDecimal
}

func intBits(dt arrow.DataType) int {
	switch dt.ID() {
	case arrow.INT8:
		return 8
	case arrow.INT16:
		return 16
	case arrow.INT32:
		return 32
	}
	return 64
}

func intType(bits int) arrow.DataType {
	switch bits {
	case 8:
		return arrow.PrimitiveTypes.Int8
	case 16:
		return arrow.PrimitiveTypes.Int16
	case 32:
		return arrow.PrimitiveTypes.Int32
	}
	return arrow.PrimitiveTypes.Int64
}

func intRange(bits int) (lo, hi int64) {
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// decimalOf returns the decimal type able to hold every value of an integer
// type, as Spark does when mixing integers and decimals.
func decimalOf(dt arrow.DataType) *arrow.Decimal128Type {
	switch dt := dt.(type) {
	case *arrow.Decimal128Type:
		return dt
	}
	p := map[int]int32{8: 3, 16: 5, 32: 10, 64: 20}[intBits(dt)]
	return &arrow.Decimal128Type{Precision: p, Scale: 0}
}

func decType(p, s int32) *arrow.Decimal128Type {
	return &arrow.Decimal128Type{Precision: p, Scale: s}
}

// boundedDecimal caps precision and scale at 38, as Spark's DecimalType.bounded.
func boundedDecimal(p, s int32) *arrow.Decimal128Type {
	return decType(min(p, 38), min(s, 38))
}

// adjustDecimal is Spark's DecimalType.adjustPrecisionScale with
// spark.sql.decimalOperations.allowPrecisionLoss=true: results wider than 38
// digits keep their integral digits and give up scale, but keep at least
// min(scale, 6) fraction digits.
func adjustDecimal(p, s int32) *arrow.Decimal128Type {
	if p <= 38 {
		return decType(p, s)
	}
	intDigits := p - s
	minScale := min(s, 6)
	return decType(38, max(38-intDigits, minScale))
}

// widerDecimal is the smallest decimal holding both (bounded at 38 digits).
func widerDecimal(a, b *arrow.Decimal128Type) *arrow.Decimal128Type {
	s := max(a.Scale, b.Scale)
	r := max(a.Precision-a.Scale, b.Precision-b.Scale)
	return boundedDecimal(r+s, s)
}

// widerNumeric returns the type both numeric operands are converted to for
// arithmetic and comparison, following Spark: integers widen to the larger
// integer; an integer with a decimal becomes a decimal; anything with DOUBLE
// is DOUBLE; FLOAT with an integer stays FLOAT, FLOAT with a decimal is DOUBLE.
func widerNumeric(a, b arrow.DataType) arrow.DataType {
	fa, fb := familyOf(a), familyOf(b)
	switch {
	case fa == famNull:
		return b
	case fb == famNull:
		return a
	case fa == famInt && fb == famInt:
		return intType(max(intBits(a), intBits(b)))
	case a.ID() == arrow.FLOAT64 || b.ID() == arrow.FLOAT64:
		return arrow.PrimitiveTypes.Float64
	case fa == famFloat || fb == famFloat:
		if fa == famDecimal || fb == famDecimal {
			return arrow.PrimitiveTypes.Float64
		}
		return arrow.PrimitiveTypes.Float32
	}
	return widerDecimal(decimalOf(a), decimalOf(b))
}

// widerTimestamp returns a timestamp type for comparing or combining a and b
// (dates and timestamps): the finer unit, with a zone when either has one.
func widerTimestamp(a, b arrow.DataType) *arrow.TimestampType {
	out := &arrow.TimestampType{Unit: arrow.Microsecond}
	for _, dt := range []arrow.DataType{a, b} {
		if ts, ok := dt.(*arrow.TimestampType); ok {
			if ts.Unit > out.Unit {
				out.Unit = ts.Unit
			}
			if ts.TimeZone != "" {
				out.TimeZone = "UTC"
			}
		}
	}
	return out
}

// commonType returns the type that values of types a and b are converted to
// when they meet in a comparison, IN list, CASE, COALESCE or BETWEEN, and
// false when they cannot meet.
func commonType(a, b arrow.DataType) (arrow.DataType, bool) {
	fa, fb := familyOf(a), familyOf(b)
	switch {
	case arrow.TypeEqual(a, b):
		return a, true
	case fa == famNull:
		return b, true
	case fb == famNull:
		return a, true
	case isNumeric(a) && isNumeric(b):
		return widerNumeric(a, b), true
	case fa == famString && fb == famString:
		return arrow.BinaryTypes.String, true
	case fa == famBinary && fb == famBinary:
		return arrow.BinaryTypes.Binary, true
	case (fa == famDate || fa == famTimestamp) && (fb == famDate || fb == famTimestamp):
		return widerTimestamp(a, b), true
	case fa == famTime && fb == famTime:
		return &arrow.Time64Type{Unit: max(a.(*arrow.Time64Type).Unit, b.(*arrow.Time64Type).Unit)}, true
	}
	return nil, false
}

// typeName renders a type in lower case for messages: int, bigint,
// decimal(10,2), string, timestamp...
func typeName(dt arrow.DataType) string {
	switch familyOf(dt) {
	case famNull:
		return "null"
	case famOther, famStruct, famTime:
		return dt.String()
	}
	if dt.ID() == arrow.FIXED_SIZE_BINARY {
		return dt.String()
	}
	return strings.ToLower(TypeSQL(dt))
}

// describe renders an operand for type error messages: `string column
// "data"`, `number 5`, `string 'x'`, `int expression "a + 1"`.
func describe(e Expr, dt arrow.DataType) string {
	switch e := e.(type) {
	case *ColumnRef:
		return fmt.Sprintf("%s column %q", typeName(dt), strings.Join(e.Parts, "."))
	case *Literal:
		switch familyOf(e.Type) {
		case famInt, famFloat, famDecimal:
			return "number " + e.Text
		case famString:
			return "string " + e.Text
		case famBool:
			return "boolean " + e.Text
		case famNull:
			return "NULL"
		}
		return e.Text
	}
	return fmt.Sprintf("%s expression %q", typeName(dt), e.String())
}
