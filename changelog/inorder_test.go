package changelog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

// TestProcessInOrder checks processInOrder against the one-by-one loop it
// replaces: the same results in partition order with one worker and with
// several (partitions finishing out of order), the first error in
// partition order (of the partitions, of fn, of out) returned, the results
// of the partitions in flight released, no goroutine left behind, and the
// partitions in flight kept within the budget when one is given.
func TestProcessInOrder(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	const nParts = 23
	// parts yields nParts partitions of two batches each (partition p holds
	// the values p*10 .. p*10+3), and failAt's error instead of partition
	// failAt.
	parts := func(mem memory.Allocator, failAt int) iter.Seq2[[]arrow.RecordBatch, error] {
		return func(yield func([]arrow.RecordBatch, error) bool) {
			for p := range nParts {
				if p == failAt {
					yield(nil, fmt.Errorf("read partition %d", p))
					return
				}
				var recs []arrow.RecordBatch
				for b := range 2 {
					bld := array.NewInt64Builder(mem)
					bld.AppendValues([]int64{int64(p*10 + 2*b), int64(p*10 + 2*b + 1)}, nil)
					a := bld.NewArray()
					bld.Release()
					recs = append(recs, array.NewRecordBatch(sch, []arrow.Array{a}, 2))
					a.Release()
				}
				if !yield(recs, nil) {
					for _, r := range recs {
						r.Release()
					}
					return
				}
			}
		}
	}
	// fn sums each partition into a one-row batch (nothing for partitions
	// that are multiples of 5), later partitions faster than earlier ones,
	// and fails at partition failAt.
	var running, most atomic.Int64
	fn := func(mem memory.Allocator, failAt int) func(context.Context, []arrow.RecordBatch) (arrow.RecordBatch, error) {
		return func(ctx context.Context, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
			n := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			var sum int64
			for _, r := range recs {
				for _, v := range r.Column(0).(*array.Int64).Int64Values() {
					sum += v
				}
			}
			p := int(sum / 40) // partition p sums to 40p+6
			time.Sleep(time.Duration(nParts-p) * 200 * time.Microsecond)
			if p == failAt {
				return nil, fmt.Errorf("process partition %d", p)
			}
			if p%5 == 0 {
				return nil, nil
			}
			bld := array.NewInt64Builder(mem)
			defer bld.Release()
			bld.Append(sum)
			a := bld.NewArray()
			defer a.Release()
			return array.NewRecordBatch(sch, []arrow.Array{a}, 1), nil
		}
	}
	type outcome struct {
		sums []int64
		err  string
	}
	run := func(t *testing.T, workers int, budget int64, failRead, failFn, failOut int) outcome {
		t.Helper()
		defer SetProcessWorkers(workers)()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		before := runtime.NumGoroutine()
		var o outcome
		err := processInOrder(context.Background(), parts(mem, failRead), budget, fn(mem, failFn), func(rec arrow.RecordBatch) error {
			defer rec.Release()
			s := rec.Column(0).(*array.Int64).Value(0)
			if int(s/40) == failOut {
				return fmt.Errorf("write partition %d", failOut)
			}
			o.sums = append(o.sums, s)
			return nil
		})
		if err != nil {
			o.err = err.Error()
		}
		// Every worker has returned (the goroutine count settles back).
		for i := 0; runtime.NumGoroutine() > before; i++ {
			if i == 200 {
				t.Fatalf("%d goroutines left running", runtime.NumGoroutine()-before)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return o
	}
	var want []int64
	for p := range nParts {
		if p%5 != 0 {
			want = append(want, int64(40*p+6))
		}
	}
	for _, tc := range []struct {
		name                      string
		failRead, failFn, failOut int
		wantErr                   string
		wantN                     int // results before the error
	}{
		{name: "all", failRead: -1, failFn: -1, failOut: -1},
		{name: "read error", failRead: 9, failFn: -1, failOut: -1, wantErr: "read partition 9", wantN: 7},
		{name: "fn error", failRead: -1, failFn: 12, failOut: -1, wantErr: "process partition 12", wantN: 9},
		{name: "out error", failRead: -1, failFn: -1, failOut: 3, wantErr: "write partition 3", wantN: 2},
		{name: "two fn errors", failRead: -1, failFn: 1, failOut: -1, wantErr: "process partition 1", wantN: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, workers := range []int{1, 2, 4} {
				most.Store(0)
				got := run(t, workers, 0, tc.failRead, tc.failFn, tc.failOut)
				if got.err != tc.wantErr {
					t.Fatalf("%d workers: error %q, want %q", workers, got.err, tc.wantErr)
				}
				w := want
				if tc.wantErr != "" {
					w = want[:tc.wantN]
				}
				if fmt.Sprint(got.sums) != fmt.Sprint(w) {
					t.Fatalf("%d workers: results %v, want %v", workers, got.sums, w)
				}
				if m := most.Load(); m > int64(workers) || (tc.name == "all" && workers > 1 && m < 2) {
					t.Fatalf("%d workers: %d partitions processed at once", workers, m)
				}
			}
		})
	}
	// A budget that holds one partition keeps one in flight; one that
	// holds three, at most three.
	size := int64(0)
	for recs := range parts(memory.NewGoAllocator(), -1) {
		for _, r := range recs {
			size += rows.RecordSize(r)
			r.Release()
		}
		break
	}
	for _, tc := range []struct {
		budget int64
		most   int64
	}{{size, 1}, {3 * size, 3}} {
		most.Store(0)
		got := run(t, 8, tc.budget, -1, -1, -1)
		if got.err != "" || fmt.Sprint(got.sums) != fmt.Sprint(want) {
			t.Fatalf("budget %d: %v, %v", tc.budget, got.sums, got.err)
		}
		if m := most.Load(); m > tc.most {
			t.Fatalf("budget %d (%d partitions): %d partitions processed at once", tc.budget, tc.budget/size, m)
		}
	}
	// A cancelled context stops it with the context's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := processInOrder(ctx, parts(memory.NewGoAllocator(), -1), 0, fn(memory.NewGoAllocator(), -1), func(rec arrow.RecordBatch) error {
		rec.Release()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
