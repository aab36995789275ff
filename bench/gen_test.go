package bench

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

var genSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
}, nil)

// TestBatch checks that generated data is deterministic, depends on the
// seed, and stays in the documented ranges.
func TestBatch(t *testing.T) {
	a, err := Batch(genSchema, 100, 500, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := Batch(genSchema, 100, 500, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if !array.RecordEqual(a, b) {
		t.Fatal("the same seed and range generated different rows")
	}
	c, err := Batch(genSchema, 100, 500, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if array.RecordEqual(a, c) {
		t.Fatal("another seed generated the same rows")
	}
	ids := a.Column(0).(*array.Int64)
	names := a.Column(1).(*array.String)
	amounts := a.Column(2).(*array.Decimal128)
	ts := a.Column(3).(*array.Timestamp)
	lo := baseTime.UnixMicro()
	hi := baseTime.Add(Days * 24 * time.Hour).UnixMicro()
	for i := range int(a.NumRows()) {
		if ids.Value(i) != int64(100+i) {
			t.Fatalf("row %d: id %d, want %d", i, ids.Value(i), 100+i)
		}
		if n := names.Value(i); len(n) < 6 || len(n) > 20 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
			t.Fatalf("row %d: name %q", i, n)
		}
		if v := amounts.Value(i); v.Less(decimal128.FromI64(0)) || !v.Less(decimal128.FromI64(100_000_000)) {
			t.Fatalf("row %d: amount %v out of range", i, v)
		}
		if v := int64(ts.Value(i)); v < lo || v >= hi {
			t.Fatalf("row %d: ts %d outside [%d, %d)", i, v, lo, hi)
		}
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "f", Type: arrow.FixedWidthTypes.Boolean}}, nil)
	if _, err := Batch(bad, 0, 1, 1); err == nil || !strings.Contains(err.Error(), "column f") {
		t.Fatalf("a boolean column: err %v, want an error naming column f", err)
	}
}

// TestStream checks batch sizes and that streaming equals generating.
func TestStream(t *testing.T) {
	recs, err := Generate(genSchema, 1000, 300, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer Release(recs)
	var sizes []int64
	for _, r := range recs {
		sizes = append(sizes, r.NumRows())
	}
	if len(sizes) != 4 || sizes[0] != 300 || sizes[3] != 100 {
		t.Fatalf("batch sizes %v, want 300 300 300 100", sizes)
	}
	one, err := Batch(genSchema, 300, 300, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Release()
	if !array.RecordEqual(one, recs[1]) {
		t.Fatal("the second streamed batch differs from Batch(start=300)")
	}
}
