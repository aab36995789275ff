package changelog

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// joinColumns takes the same columns of a run of rows that spans new
// batches of any sizes (the old and the new file read in batches that do
// not line up) and the other columns from the old file's batch.
func TestJoinColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "c", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	diffSch := arrow.NewSchema([]arrow.Field{sch.Field(1)}, nil)
	same := []bool{true, false, true}
	for trial := range 200 {
		// New batches holding rows 0..total-1: a = row, c = -row.
		var pend []arrow.RecordBatch
		total := int64(0)
		for range 1 + rng.IntN(4) {
			n := int64(1 + rng.IntN(20))
			b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
			for i := range n {
				b.Field(0).(*array.Int64Builder).Append(total + i)
				b.Field(1).(*array.StringBuilder).Append("new")
				b.Field(2).(*array.Int64Builder).Append(-(total + i))
			}
			pend = append(pend, b.NewRecordBatch())
			b.Release()
			total += n
		}
		off := rng.Int64N(pend[0].NumRows())
		n := 1 + rng.Int64N(total-off)
		db := array.NewRecordBuilder(memory.DefaultAllocator, diffSch)
		for i := range n {
			db.Field(0).(*array.StringBuilder).Append("old" + string(rune('a'+i%26)))
		}
		diff := db.NewRecordBatch()
		db.Release()
		got, err := joinColumns(pend, off, n, diff, same)
		if err != nil {
			t.Fatal(err)
		}
		if got.NumRows() != n || got.NumCols() != 3 {
			t.Fatalf("trial %d: %d rows, %d columns, want %d, 3", trial, got.NumRows(), got.NumCols(), n)
		}
		for i := range n {
			a := got.Column(0).(*array.Int64).Value(int(i))
			s := got.Column(1).(*array.String).Value(int(i))
			c := got.Column(2).(*array.Int64).Value(int(i))
			if a != off+i || c != -(off+i) || s != "old"+string(rune('a'+i%26)) {
				t.Fatalf("trial %d (off %d, n %d): row %d is (%d, %q, %d)", trial, off, n, i, a, s, c)
			}
		}
		got.Release()
		diff.Release()
		for _, r := range pend {
			r.Release()
		}
	}
}
