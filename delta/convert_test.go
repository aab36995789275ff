package delta

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestConformLeaves(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	c := &converter{ctx: context.Background(), mem: mem}
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	tests := []struct {
		name string
		src  arrow.DataType
		in   string // JSON array
		dt   DataType
		want string // JSON of the result
		err  error
	}{
		{"same type", arrow.PrimitiveTypes.Int64, `[1,null]`, TypeLong, `[1,null]`, nil},
		{"large string", arrow.BinaryTypes.LargeString, `["a",null]`, TypeString, `["a",null]`, nil},
		{"string view", arrow.BinaryTypes.StringView, `["a",null]`, TypeString, `["a",null]`, nil},
		{"int widening", arrow.PrimitiveTypes.Int32, `[7,-1]`, TypeLong, `[7,-1]`, nil},
		{"int narrowing in range", arrow.PrimitiveTypes.Int32, `[7,-1]`, TypeByte, `[7,-1]`, nil},
		{"int narrowing overflow", arrow.PrimitiveTypes.Int32, `[700]`, TypeByte, ``, ErrUnsupportedFeature},
		{"float widening", arrow.PrimitiveTypes.Float32, `[1.5]`, TypeDouble, `[1.5]`, nil},
		{"decimal precision", &arrow.Decimal128Type{Precision: 9, Scale: 2}, `["1.25"]`, DecimalType{Precision: 12, Scale: 2}, `["1.25"]`, nil},
		{"ms to us", ts(arrow.Millisecond, "UTC"), `["1970-01-01T00:00:01.5Z"]`, TypeTimestamp, `["1970-01-01T00:00:01.5Z"]`, nil},
		{"ns to us floors", ts(arrow.Nanosecond, "UTC"), `["1969-12-31T23:59:59.9999995Z"]`, TypeTimestamp, `["1969-12-31T23:59:59.999999Z"]`, nil},
		{"zone relabel", ts(arrow.Microsecond, ""), `["2024-01-01T00:00:00"]`, TypeTimestamp, `["2024-01-01T00:00:00Z"]`, nil},
		{"ntz from us", ts(arrow.Microsecond, "UTC"), `["2024-01-01T00:00:00Z"]`, TypeTimestampNTZ, `["2024-01-01T00:00:00"]`, nil},
		{"string as long", arrow.BinaryTypes.String, `["x"]`, TypeLong, ``, ErrUnsupportedFeature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, _, err := array.FromJSON(mem, tc.src, strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			defer in.Release()
			dst, err := ArrowType(tc.dt)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.conform(in, tc.dt, dst, "col")
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), `"col"`) {
					t.Fatalf("want %v naming the column, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			if !arrow.TypeEqual(out.DataType(), dst) {
				t.Fatalf("type %s, want %s", out.DataType(), dst)
			}
			got, _ := out.MarshalJSON()
			if string(got) != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSelectionMask(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	rows := roaring64.BitmapOf(1, 5, 6, 12)
	tests := []struct {
		name  string
		sel   *rowSelection
		first int64
		n     int
		want  string // kept rows of the batch as 0/1, "" for no mask
		none  bool
	}{
		{"no selection", nil, 0, 4, "", false},
		{"drop some", &rowSelection{rows: rows}, 0, 8, "10111001", false},
		{"drop none in range", &rowSelection{rows: rows}, 7, 5, "", false},
		{"drop all in range", &rowSelection{rows: rows}, 5, 2, "", true},
		{"keep some", &rowSelection{rows: rows, keep: true}, 4, 4, "0110", false},
		{"keep none in range", &rowSelection{rows: rows, keep: true}, 7, 5, "", true},
		{"keep all in range", &rowSelection{rows: rows, keep: true}, 5, 2, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mask, none := selectionMask(mem, tc.sel, tc.first, tc.n)
			if none != tc.none {
				t.Fatalf("none = %v, want %v", none, tc.none)
			}
			got := ""
			if mask != nil {
				b := mask.(*array.Boolean)
				for i := 0; i < b.Len(); i++ {
					got += map[bool]string{true: "1", false: "0"}[b.Value(i)]
				}
				mask.Release()
			}
			if got != tc.want {
				t.Fatalf("mask %q, want %q", got, tc.want)
			}
		})
	}
}
