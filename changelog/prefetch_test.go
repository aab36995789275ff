package changelog

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPrefetch checks that a prefetched stream yields the batches and the
// error of its source in order, and that a consumer stopping early, or an
// interleave stopping at an error, leaves no batch unreleased and stops
// the source.
func TestPrefetch(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var recs []arrow.RecordBatch
	for i := range 9 {
		b := array.NewInt64Builder(mem)
		b.AppendValues([]int64{int64(i), int64(i)}, nil)
		a := b.NewArray()
		b.Release()
		recs = append(recs, array.NewRecordBatch(sch, []arrow.Array{a}, 2))
		a.Release()
	}
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	boom := errors.New("boom")
	source := func(failAt int, stopped *bool) func(func(arrow.RecordBatch, error) bool) {
		return func(yield func(arrow.RecordBatch, error) bool) {
			for i, r := range recs {
				if i == failAt {
					yield(nil, boom)
					return
				}
				r.Retain()
				if !yield(r, nil) {
					*stopped = true
					return
				}
			}
		}
	}
	ctx := context.Background()
	// Whole stream, in order.
	var stopped bool
	i := 0
	for rec, err := range prefetch(ctx, source(-1, &stopped)) {
		if err != nil {
			t.Fatal(err)
		}
		if rec != recs[i] {
			t.Fatalf("batch %d out of order", i)
		}
		rec.Release()
		i++
	}
	if i != len(recs) {
		t.Fatalf("%d batches, want %d", i, len(recs))
	}
	// An error comes after the batches before it, and ends the stream.
	i = 0
	var got error
	for rec, err := range prefetch(ctx, source(4, &stopped)) {
		if err != nil {
			got = err
			continue
		}
		rec.Release()
		i++
	}
	if i != 4 || !errors.Is(got, boom) {
		t.Fatalf("%d batches then %v, want 4 then boom", i, got)
	}
	// A consumer that stops early.
	for rec, err := range prefetch(ctx, source(-1, &stopped)) {
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		break
	}
	if !stopped {
		t.Error("the source went on after the consumer stopped")
	}
	// interleave alternates, and returns the first error.
	var order []arrow.RecordBatch
	err := interleave(prefetch(ctx, source(-1, &stopped)), prefetch(ctx, source(3, &stopped)), func(rec arrow.RecordBatch) error {
		order = append(order, rec)
		rec.Release()
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("interleave: %v, want boom", err)
	}
	want := []arrow.RecordBatch{recs[0], recs[0], recs[1], recs[1], recs[2], recs[2], recs[3]}
	if len(order) != len(want) {
		t.Fatalf("interleave emitted %d batches before the error, want %d", len(order), len(want))
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("interleave: batch %d out of order", i)
		}
	}
}
