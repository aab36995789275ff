package rows

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// toInt64 converts the integer-like Go values iceberg-go uses for
// partition values and literals.
func toInt64(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case iceberg.Date:
		return int64(v), true
	case iceberg.Time:
		return int64(v), true
	case iceberg.Timestamp:
		return int64(v), true
	case iceberg.TimestampNano:
		return int64(v), true
	case time.Duration:
		return int64(v), true
	}
	return 0, false
}

func scalarOf(dt arrow.DataType, v any) (scalar.Scalar, error) {
	if v == nil {
		return scalar.MakeNullScalar(dt), nil
	}
	bad := func() (scalar.Scalar, error) {
		return nil, fmt.Errorf("cannot use %v (%T) as a %s value", v, v, dt)
	}
	switch dt := dt.(type) {
	case *arrow.BooleanType:
		if b, ok := v.(bool); ok {
			return scalar.NewBooleanScalar(b), nil
		}
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type,
		*arrow.Date32Type, *arrow.Time64Type, *arrow.TimestampType:
		n, ok := toInt64(v)
		if !ok {
			if t, isTime := v.(time.Time); isTime {
				if ts, isTS := dt.(*arrow.TimestampType); isTS && ts.Unit == arrow.Nanosecond {
					n, ok = t.UnixNano(), true
				} else {
					n, ok = t.UnixMicro(), true
				}
			}
		}
		if !ok {
			return bad()
		}
		switch dt := dt.(type) {
		case *arrow.Int8Type:
			return scalar.NewInt8Scalar(int8(n)), nil
		case *arrow.Int16Type:
			return scalar.NewInt16Scalar(int16(n)), nil
		case *arrow.Int32Type:
			return scalar.NewInt32Scalar(int32(n)), nil
		case *arrow.Int64Type:
			return scalar.NewInt64Scalar(n), nil
		case *arrow.Date32Type:
			return scalar.NewDate32Scalar(arrow.Date32(n)), nil
		case *arrow.Time64Type:
			return scalar.NewTime64Scalar(arrow.Time64(n), dt), nil
		case *arrow.TimestampType:
			return scalar.NewTimestampScalar(arrow.Timestamp(n), dt), nil
		}
	case *arrow.Float32Type:
		switch f := v.(type) {
		case float32:
			return scalar.NewFloat32Scalar(f), nil
		case float64:
			return scalar.NewFloat32Scalar(float32(f)), nil
		}
	case *arrow.Float64Type:
		switch f := v.(type) {
		case float32:
			return scalar.NewFloat64Scalar(float64(f)), nil
		case float64:
			return scalar.NewFloat64Scalar(f), nil
		}
	case *arrow.StringType:
		if s, ok := v.(string); ok {
			return scalar.NewStringScalar(s), nil
		}
	case *arrow.LargeStringType:
		if s, ok := v.(string); ok {
			return scalar.NewLargeStringScalar(s), nil
		}
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.FixedSizeBinaryType:
		var b []byte
		switch x := v.(type) {
		case []byte:
			b = x
		case uuid.UUID:
			b = x[:]
		case string:
			b = []byte(x)
		default:
			return bad()
		}
		buf := memory.NewBufferBytes(append([]byte(nil), b...))
		switch dt := dt.(type) {
		case *arrow.BinaryType:
			return scalar.NewBinaryScalar(buf, dt), nil
		case *arrow.LargeBinaryType:
			return scalar.NewLargeBinaryScalar(buf), nil
		case *arrow.FixedSizeBinaryType:
			return scalar.NewFixedSizeBinaryScalar(buf, dt), nil
		}
	case *arrow.Decimal128Type:
		switch d := v.(type) {
		case iceberg.Decimal:
			val := d.Val
			if int32(d.Scale) != dt.Scale {
				val = val.IncreaseScaleBy(dt.Scale - int32(d.Scale))
			}
			return scalar.NewDecimal128Scalar(val, dt), nil
		case decimal128.Num:
			return scalar.NewDecimal128Scalar(d, dt), nil
		}
	case arrow.ExtensionType:
		st, err := scalarOf(dt.StorageType(), v)
		if err != nil {
			return nil, err
		}
		return scalar.NewExtensionScalar(st, dt), nil
	}
	return bad()
}

func scalarToArray(sc scalar.Scalar, n int) (arrow.Array, error) {
	return scalar.MakeArrayFromScalar(sc, n, memory.DefaultAllocator)
}
