package delta

import (
	"errors"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

func TestParsePartitionValue(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		raw  *string
		dt   DataType
		want string // scalar String(); "null" for NULL
		err  error
	}{
		{"null", nil, TypeLong, "null", nil},
		{"empty long is null", str(""), TypeLong, "null", nil},
		{"empty string is empty", str(""), TypeString, "", nil},
		{"string", str("a b=c"), TypeString, "a b=c", nil},
		{"long", str("-42"), TypeLong, "-42", nil},
		{"integer", str("2147483647"), TypeInteger, "2147483647", nil},
		{"integer overflow", str("2147483648"), TypeInteger, "", ErrCorruptLog},
		{"short", str("7"), TypeShort, "7", nil},
		{"byte", str("-128"), TypeByte, "-128", nil},
		{"double", str("3.25"), TypeDouble, "3.25", nil},
		{"float NaN", str("NaN"), TypeFloat, "NaN", nil},
		{"double infinity", str("-Infinity"), TypeDouble, "-Inf", nil},
		{"boolean", str("TRUE"), TypeBoolean, "true", nil},
		{"boolean bad", str("yes"), TypeBoolean, "", ErrCorruptLog},
		{"date", str("2024-02-29"), TypeDate, "2024-02-29", nil},
		{"date bad", str("2024-02-30"), TypeDate, "", ErrCorruptLog},
		{"timestamp naive is UTC", str("2024-01-02 03:04:05.123456"), TypeTimestamp, "2024-01-02 03:04:05.123456Z", nil},
		{"timestamp with zone", str("2024-01-02T03:04:05+02:00"), TypeTimestamp, "2024-01-02 01:04:05Z", nil},
		{"timestamp_ntz", str("2024-01-02 03:04:05"), TypeTimestampNTZ, "2024-01-02 03:04:05", nil},
		{"timestamp_ntz refuses a zone", str("2024-01-02T03:04:05Z"), TypeTimestampNTZ, "", ErrCorruptLog},
		{"decimal", str("-12.34"), DecimalType{Precision: 5, Scale: 2}, "-12.34", nil},
		{"decimal too precise", str("1.234"), DecimalType{Precision: 5, Scale: 2}, "", ErrCorruptLog},
		{"binary", str("raw"), TypeBinary, "raw", nil},
		{"unsupported type", str("x"), PrimitiveType("variant"), "", ErrUnsupportedFeature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePartitionValue(tc.raw, tc.dt)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("want %v, got %v, %v", tc.err, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ArrowType(tc.dt)
			if !arrow.TypeEqual(got.DataType(), want) {
				t.Fatalf("scalar type %s, want %s", got.DataType(), want)
			}
			if tc.want == "null" {
				if got.IsValid() {
					t.Fatalf("got %s, want NULL", got)
				}
				return
			}
			if s := scalarText(got); s != tc.want {
				t.Fatalf("got %q, want %q", s, tc.want)
			}
		})
	}
}

func scalarText(s scalar.Scalar) string {
	switch v := s.(type) {
	case *scalar.Float32:
		if math.IsNaN(float64(v.Value)) {
			return "NaN"
		}
	case *scalar.Binary:
		return string(v.Data())
	case *scalar.Timestamp:
		unit := v.Type.(*arrow.TimestampType)
		ts := v.Value.ToTime(unit.Unit)
		out := ts.Format("2006-01-02 15:04:05.999999")
		if unit.TimeZone != "" {
			out += "Z"
		}
		return out
	case *scalar.Date32:
		return v.Value.ToTime().Format("2006-01-02")
	}
	return s.String()
}

func TestHivePartitionValues(t *testing.T) {
	got := hivePartitionValues("p=a%2520b/q=__HIVE_DEFAULT_PARTITION__/part-0.parquet")
	if v := got["p"]; v == nil || *v != "a b" {
		t.Errorf("p = %v, want \"a b\"", v)
	}
	if v, ok := got["q"]; !ok || v != nil {
		t.Errorf("q = %v (present %v), want NULL", v, ok)
	}
	if hivePartitionValues("part-0.parquet") != nil {
		t.Error("a file at the root has no partition directories")
	}
}
