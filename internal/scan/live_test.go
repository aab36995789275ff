package scan

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestKeepLivePositions checks keepLive against a row-by-row filter for
// batches of consecutive positions (the fast path that walks the deleted
// positions in the batch's range) and of scattered ones, with deleted
// positions before, inside, at both edges of and after the batch.
func TestKeepLivePositions(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	deleted := []uint64{0, 3, 99, 100, 101, 150, 199, 200, 1 << 33}
	bm := roaring64.New()
	bm.AddMany(deleted)
	ds := &DeleteSet{Positions: bm}
	fr := &FileRows{Schema: sch, Requested: 1, outSchema: sch}
	for _, tc := range []struct {
		name string
		pos  []int64
	}{
		{"consecutive from 0", seq(0, 50)},
		{"consecutive across deletes", seq(90, 210)},
		{"consecutive, none deleted", seq(300, 400)},
		{"consecutive, all deleted", seq(99, 102)},
		{"consecutive past 2^32", seq(1<<33-5, 1<<33+5)},
		{"scattered", []int64{0, 2, 3, 50, 100, 150, 151, 1 << 33}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			b.AppendValues(tc.pos, nil)
			arr := b.NewArray()
			b.Release()
			rec := array.NewRecordBatch(sch, []arrow.Array{arr}, int64(len(tc.pos)))
			arr.Release()
			defer rec.Release()
			var buf []byte
			out, err := keepLive(context.Background(), fr, Batch{Rec: rec, Pos: tc.pos}, ds, &buf)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			var want []int64
			for _, p := range tc.pos {
				if !slices.Contains(deleted, uint64(p)) {
					want = append(want, p)
				}
			}
			got := out.Rec.Column(0).(*array.Int64).Int64Values()
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(out.Pos) != fmt.Sprint(want) {
				t.Fatalf("rows %v, positions %v; want %v", got, out.Pos, want)
			}
		})
	}
}

func seq(from, to int64) []int64 {
	out := make([]int64, 0, to-from)
	for p := from; p < to; p++ {
		out = append(out, p)
	}
	return out
}

// SetDirect turns direct reads on or off and returns the previous
// setting (for the tests of package scan_test).
func SetDirect(on bool) bool {
	prev := useDirect
	useDirect = on
	return prev
}

// DirectReads is how many files were read directly so far.
func DirectReads() int64 { return directReads.Load() }
