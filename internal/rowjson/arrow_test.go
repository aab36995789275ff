package rowjson

import (
	"errors"
	"iter"
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
)

// one builds a single-element array of type dt, filled by fill.
func one(t *testing.T, mem memory.Allocator, dt arrow.DataType, fill func(array.Builder)) arrow.Array {
	t.Helper()
	b := array.NewBuilder(mem, dt)
	defer b.Release()
	fill(b)
	return b.NewArray()
}

func TestValue(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)

	tsUS := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tsNS := &arrow.TimestampType{Unit: arrow.Nanosecond}
	tsMS := &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "America/New_York"}
	mapType := arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)
	structType := arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true},
	)
	u := uuid.MustParse("0f8fad5b-d9cb-469f-a165-70867728950e")

	tests := []struct {
		name string
		dt   arrow.DataType
		fill func(array.Builder)
		want string // canonical text
	}{
		{"null value", arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.AppendNull() }, "null"},
		{"bool", arrow.FixedWidthTypes.Boolean, func(b array.Builder) { b.(*array.BooleanBuilder).Append(true) }, "true"},
		{"int8", arrow.PrimitiveTypes.Int8, func(b array.Builder) { b.(*array.Int8Builder).Append(-8) }, "-8"},
		{"int64 max", arrow.PrimitiveTypes.Int64, func(b array.Builder) { b.(*array.Int64Builder).Append(math.MaxInt64) }, "9223372036854775807"},
		{"uint64 max", arrow.PrimitiveTypes.Uint64, func(b array.Builder) { b.(*array.Uint64Builder).Append(math.MaxUint64) }, "18446744073709551615"},
		{"float32", arrow.PrimitiveTypes.Float32, func(b array.Builder) { b.(*array.Float32Builder).Append(0.1) }, "0.10000000149011612"},
		{"float64 NaN", arrow.PrimitiveTypes.Float64, func(b array.Builder) { b.(*array.Float64Builder).Append(math.NaN()) }, `"NaN"`},
		{"float64 -Inf", arrow.PrimitiveTypes.Float64, func(b array.Builder) { b.(*array.Float64Builder).Append(math.Inf(-1)) }, `"-Infinity"`},
		{"decimal keeps scale", &arrow.Decimal128Type{Precision: 10, Scale: 2}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(150))
		}, `"1.50"`},
		{"small negative decimal", &arrow.Decimal128Type{Precision: 10, Scale: 2}, func(b array.Builder) {
			b.(*array.Decimal128Builder).Append(decimal128.FromI64(-5))
		}, `"-0.05"`},
		{"decimal32", &arrow.Decimal32Type{Precision: 5, Scale: 3}, func(b array.Builder) {
			b.(*array.Decimal32Builder).Append(-1234)
		}, `"-1.234"`},
		{"string", arrow.BinaryTypes.String, func(b array.Builder) { b.(*array.StringBuilder).Append("a\"b") }, `"a\"b"`},
		{"binary base64", arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{1, 2, 0xff}) }, `"AQL/"`},
		{"empty binary", arrow.BinaryTypes.Binary, func(b array.Builder) { b.(*array.BinaryBuilder).Append([]byte{}) }, `""`},
		{"fixed binary", &arrow.FixedSizeBinaryType{ByteWidth: 2}, func(b array.Builder) {
			b.(*array.FixedSizeBinaryBuilder).Append([]byte{0, 1})
		}, `"AAE="`},
		{"date32", arrow.FixedWidthTypes.Date32, func(b array.Builder) { b.(*array.Date32Builder).Append(19724) }, `"2024-01-02"`},
		{"date before epoch", arrow.FixedWidthTypes.Date32, func(b array.Builder) { b.(*array.Date32Builder).Append(-1) }, `"1969-12-31"`},
		{"time64 us", arrow.FixedWidthTypes.Time64us, func(b array.Builder) {
			b.(*array.Time64Builder).Append(arrow.Time64((3*3600+4*60+5)*1e6 + 7))
		}, `"03:04:05.000007"`},
		{"timestamptz us", tsUS, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(1704164645123456))
		}, `"2024-01-02T03:04:05.123456Z"`},
		{"timestamptz one microsecond before epoch", tsUS, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(-1)
		}, `"1969-12-31T23:59:59.999999Z"`},
		{"timestamp ns without zone", tsNS, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(1704164645123456789))
		}, `"2024-01-02T03:04:05.123456789"`},
		{"timestamp ms in another zone shows UTC", tsMS, func(b array.Builder) {
			b.(*array.TimestampBuilder).Append(arrow.Timestamp(1704164645123))
		}, `"2024-01-02T03:04:05.123Z"`},
		{"list with null element", arrow.ListOf(arrow.PrimitiveTypes.Int64), func(b array.Builder) {
			lb := b.(*array.ListBuilder)
			lb.Append(true)
			vb := lb.ValueBuilder().(*array.Int64Builder)
			vb.Append(1)
			vb.AppendNull()
			vb.Append(3)
		}, `[1,null,3]`},
		{"struct", structType, func(b array.Builder) {
			sb := b.(*array.StructBuilder)
			sb.Append(true)
			sb.FieldBuilder(0).(*array.Int32Builder).Append(7)
			sb.FieldBuilder(1).(*array.StringBuilder).AppendNull()
		}, `{"x":7,"y":null}`},
		{"map entries sorted by key", mapType, func(b array.Builder) {
			mb := b.(*array.MapBuilder)
			mb.Append(true)
			kb := mb.KeyBuilder().(*array.StringBuilder)
			ib := mb.ItemBuilder().(*array.Int64Builder)
			kb.Append("z")
			ib.Append(1)
			kb.Append("a")
			ib.Append(2)
		}, `[["a",2],["z",1]]`},
		{"uuid", extensions.NewUUIDType(), func(b array.Builder) {
			b.(*extensions.UUIDBuilder).Append(u)
		}, `"0f8fad5b-d9cb-469f-a165-70867728950e"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arr := one(t, mem, tc.dt, tc.fill)
			defer arr.Release()
			v, err := Value(arr, 0)
			if err != nil {
				t.Fatalf("Value: %v", err)
			}
			if got := Canonical(v); got != tc.want {
				t.Errorf("Value = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestValueSlicedStructAndList(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.Int64Builder)
	for i := int64(0); i < 3; i++ {
		lb.Append(true)
		vb.AppendValues([]int64{i, i * 10}, nil)
	}
	arr := lb.NewArray()
	defer arr.Release()
	sl := array.NewSlice(arr, 1, 3)
	defer sl.Release()
	v, err := Value(sl, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := Canonical(v); got != "[2,20]" {
		t.Errorf("element 1 of slice [1:3] = %s, want [2,20]", got)
	}
}

func TestFromArrow(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	batch := func(ids []int64, vs []string) arrow.RecordBatch {
		b := array.NewRecordBuilder(mem, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
		b.Field(1).(*array.StringBuilder).AppendValues(vs, nil)
		return b.NewRecordBatch()
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		if !yield(batch([]int64{1, 2}, []string{"a", "b"}), nil) {
			return
		}
		yield(batch([]int64{3}, []string{"c"}), nil)
	}
	tbl, err := FromArrow(schema, seq)
	if err != nil {
		t.Fatal(err)
	}
	want := &Table{Columns: []Column{{Name: "id"}, {Name: "v"}}, Rows: [][]any{{Int(3), "c"}, {Int(1), "a"}, {Int(2), "b"}}}
	if d := Diff(want, tbl); d != "" {
		t.Fatalf("FromArrow rows differ:\n%s", d)
	}
	if tbl.Columns[0].Type != "int64" {
		t.Errorf("column type = %q, want Arrow's spelling int64", tbl.Columns[0].Type)
	}

	boom := errors.New("boom")
	var failing iter.Seq2[arrow.RecordBatch, error] = func(yield func(arrow.RecordBatch, error) bool) {
		if !yield(batch([]int64{1}, []string{"a"}), nil) {
			return
		}
		yield(nil, boom)
	}
	if _, err := FromArrow(schema, failing); !errors.Is(err, boom) {
		t.Errorf("FromArrow with a failing stream: err = %v, want the stream's error", err)
	}
}

func TestValueUnsupportedType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	arr := one(t, mem, arrow.FixedWidthTypes.MonthInterval, func(b array.Builder) {
		b.(*array.MonthIntervalBuilder).Append(3)
	})
	defer arr.Release()
	if _, err := Value(arr, 0); !errors.Is(err, ErrUnsupportedType) {
		t.Fatalf("Value(month interval) error = %v, want ErrUnsupportedType", err)
	}
}

func TestFormatTimestampUnits(t *testing.T) {
	tests := []struct {
		v     int64
		unit  arrow.TimeUnit
		zoned bool
		want  string
	}{
		{0, arrow.Second, true, "1970-01-01T00:00:00Z"},
		{-1, arrow.Millisecond, false, "1969-12-31T23:59:59.999"},
		{-1_000_001, arrow.Microsecond, true, "1969-12-31T23:59:58.999999Z"},
		{253402300799999999, arrow.Microsecond, true, "9999-12-31T23:59:59.999999Z"},
		{-62135596800000000, arrow.Microsecond, true, "0001-01-01T00:00:00.000000Z"},
	}
	for _, tc := range tests {
		if got := FormatTimestamp(tc.v, tc.unit, tc.zoned); got != tc.want {
			t.Errorf("FormatTimestamp(%d, %s, %v) = %s, want %s", tc.v, tc.unit, tc.zoned, got, tc.want)
		}
	}
}
