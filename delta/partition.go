package delta

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// ParsePartitionValue parses a serialized partition value (PROTOCOL.md
// "Partition Value Serialization") of Delta type dt into an Arrow scalar of
// ArrowType(dt). nil is NULL; an empty string is NULL except for string and
// binary columns, where it is the empty value (as kernel-rs and Spark read
// it). Timestamps are "YYYY-MM-DD HH:MM:SS[.ffffff]" read as UTC, or RFC 3339
// with a zone; timestamp_ntz takes the first form. Malformed values fail with
// ErrCorruptLog.
func ParsePartitionValue(raw *string, dt DataType) (scalar.Scalar, error) {
	at, err := ArrowType(dt)
	if err != nil {
		return nil, err
	}
	if raw == nil {
		return scalar.MakeNullScalar(at), nil
	}
	v := *raw
	bad := func(err error) (scalar.Scalar, error) {
		msg := ""
		if err != nil {
			msg = ": " + err.Error()
		}
		return nil, fmt.Errorf("%w: partition value %q is not a valid %s%s", ErrCorruptLog, v, dt, msg)
	}
	if v == "" {
		switch dt {
		case TypeString:
			return scalar.NewStringScalar(""), nil
		case TypeBinary:
			return scalar.NewBinaryScalar(memory.NewBufferBytes(nil), arrow.BinaryTypes.Binary), nil
		}
		return scalar.MakeNullScalar(at), nil
	}
	switch t := dt.(type) {
	case PrimitiveType:
		switch t {
		case TypeString:
			return scalar.NewStringScalar(v), nil
		case TypeBinary:
			return scalar.NewBinaryScalar(memory.NewBufferBytes([]byte(v)), arrow.BinaryTypes.Binary), nil
		case TypeLong, TypeInteger, TypeShort, TypeByte:
			bits := map[PrimitiveType]int{TypeLong: 64, TypeInteger: 32, TypeShort: 16, TypeByte: 8}[t]
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits)
			if err != nil {
				return bad(err)
			}
			switch t {
			case TypeLong:
				return scalar.NewInt64Scalar(n), nil
			case TypeInteger:
				return scalar.NewInt32Scalar(int32(n)), nil
			case TypeShort:
				return scalar.NewInt16Scalar(int16(n)), nil
			default:
				return scalar.NewInt8Scalar(int8(n)), nil
			}
		case TypeFloat, TypeDouble:
			f, err := parseFloat(v)
			if err != nil {
				return bad(err)
			}
			if t == TypeFloat {
				return scalar.NewFloat32Scalar(float32(f)), nil
			}
			return scalar.NewFloat64Scalar(f), nil
		case TypeBoolean:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "true":
				return scalar.NewBooleanScalar(true), nil
			case "false":
				return scalar.NewBooleanScalar(false), nil
			}
			return bad(nil)
		case TypeDate:
			d, err := time.Parse("2006-01-02", strings.TrimSpace(v))
			if err != nil {
				return bad(err)
			}
			return scalar.NewDate32Scalar(arrow.Date32FromTime(d)), nil
		case TypeTimestamp, TypeTimestampNTZ:
			ts, err := parsePartitionTimestamp(strings.TrimSpace(v), t == TypeTimestamp)
			if err != nil {
				return bad(err)
			}
			return scalar.NewTimestampScalar(arrow.Timestamp(ts.UnixMicro()), at), nil
		}
	case DecimalType:
		v := strings.TrimSpace(v)
		if _, frac, ok := strings.Cut(v, "."); ok && !strings.ContainsAny(v, "eE") {
			if d := len(strings.TrimRight(frac, "0")); d > t.Scale {
				return bad(fmt.Errorf("%d fractional digits do not fit scale %d", d, t.Scale))
			}
		}
		n, err := decimal128.FromString(v, int32(t.Precision), int32(t.Scale))
		if err != nil {
			return bad(err)
		}
		return scalar.NewDecimal128Scalar(n, at), nil
	}
	return nil, fmt.Errorf("%w: partition column of type %s", ErrUnsupportedFeature, dt)
}

func parseFloat(v string) (float64, error) {
	switch strings.TrimSpace(v) {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "+Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(strings.TrimSpace(v), 64)
}

var naiveTimestampLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02T15:04:05",
}

func parsePartitionTimestamp(v string, zoned bool) (time.Time, error) {
	for _, layout := range naiveTimestampLayouts {
		if ts, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return ts, nil
		}
	}
	if zoned {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
			if ts, err := time.Parse(layout, v); err == nil {
				return ts.UTC(), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("want YYYY-MM-DD HH:MM:SS[.ffffff]%s", map[bool]string{true: " or RFC 3339", false: ""}[zoned])
}

// hivePartitionValues recovers partition values from Hive-style directories
// ("col=value/") of a path, for remove actions written without
// partitionValues (extendedFileMetadata=false, old writers).
// __HIVE_DEFAULT_PARTITION__ is NULL.
func hivePartitionValues(rawPath string) map[string]*string {
	dir := rawPath
	if i := strings.LastIndexByte(dir, '/'); i >= 0 {
		dir = dir[:i]
	} else {
		return nil
	}
	out := map[string]*string{}
	for _, seg := range strings.Split(dir, "/") {
		k, v, ok := strings.Cut(seg, "=")
		if !ok {
			continue
		}
		// Paths in the log are URIs and Hive escapes again inside them.
		for i := 0; i < 2; i++ {
			if d, err := url.PathUnescape(k); err == nil {
				k = d
			}
			if d, err := url.PathUnescape(v); err == nil {
				v = d
			}
		}
		if v == "__HIVE_DEFAULT_PARTITION__" {
			out[k] = nil
			continue
		}
		val := v
		out[k] = &val
	}
	return out
}
