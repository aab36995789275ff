package scan

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var orderedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "task", Type: arrow.PrimitiveTypes.Int64},
	{Name: "j", Type: arrow.PrimitiveTypes.Int64},
}, nil)

type orderedTask struct {
	id, batches int
	failAt      int // fail after this many batches; -1 never
}

var errOrderedTest = errors.New("task failed")

// orderedReader produces 1-row batches (task id, batch number) from mem,
// counting what it has produced.
func orderedReader(mem memory.Allocator, produced *atomic.Int64) func(context.Context, orderedTask, func(arrow.RecordBatch) bool) error {
	return func(ctx context.Context, t orderedTask, emit func(arrow.RecordBatch) bool) error {
		for j := range t.batches {
			if j == t.failAt {
				return errOrderedTest
			}
			b := array.NewRecordBuilder(mem, orderedSchema)
			b.Field(0).(*array.Int64Builder).Append(int64(t.id))
			b.Field(1).(*array.Int64Builder).Append(int64(j))
			rec := b.NewRecordBatch()
			b.Release()
			produced.Add(1)
			if !emit(rec) {
				return ctx.Err()
			}
		}
		return nil
	}
}

// waitReleased waits for the asynchronous clean-up of an abandoned scan to
// release every batch (a deadlock shows as a failure, not a hang).
func waitReleased(t *testing.T, mem *memory.CheckedAllocator) {
	t.Helper()
	for range 500 {
		if mem.CurrentAlloc() == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d bytes of batches never released", mem.CurrentAlloc())
}

// TestOrdered checks that batches come in task order, that tasks read
// ahead of their turn hold a bounded number of batches, that stopping
// early releases everything, and that a task's error ends the stream
// after the batches before it.
func TestOrdered(t *testing.T) {
	const conc = 2
	tasks := make([]orderedTask, 6)
	for i := range tasks {
		tasks[i] = orderedTask{id: i, batches: 30, failAt: -1}
	}
	t.Run("order and bounded read-ahead", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var produced atomic.Int64
		consumed, maxAhead := int64(0), int64(0)
		lastTask, lastJ := 0, int64(-1)
		for rec, err := range ordered(context.Background(), conc, tasks, orderedReader(mem, &produced)) {
			if err != nil {
				t.Fatal(err)
			}
			consumed++
			maxAhead = max(maxAhead, produced.Load()-consumed)
			task, j := int(rec.Column(0).(*array.Int64).Value(0)), rec.Column(1).(*array.Int64).Value(0)
			if task < lastTask || (task == lastTask && j != lastJ+1) || (task > lastTask && j != 0) {
				t.Fatalf("batch (%d,%d) after (%d,%d)", task, j, lastTask, lastJ)
			}
			lastTask, lastJ = task, j
			rec.Release()
			// Let the readers run ahead as far as they can.
			time.Sleep(time.Millisecond)
		}
		if consumed != 6*30 {
			t.Fatalf("consumed %d batches, want 180", consumed)
		}
		// Each started task may hold orderedAhead batches in its channel
		// and one in hand.
		if bound := int64(conc * (orderedAhead + 1)); maxAhead > bound {
			t.Fatalf("up to %d batches read ahead, want at most %d", maxAhead, bound)
		}
		waitReleased(t, mem)
	})
	t.Run("stop early", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var produced atomic.Int64
		n := 0
		for rec, err := range ordered(context.Background(), conc, tasks, orderedReader(mem, &produced)) {
			if err != nil {
				t.Fatal(err)
			}
			rec.Release()
			if n++; n == 35 {
				break
			}
		}
		waitReleased(t, mem)
	})
	t.Run("error", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var produced atomic.Int64
		failing := append([]orderedTask{}, tasks...)
		failing[2].failAt = 7
		n, gotErr := 0, error(nil)
		for rec, err := range ordered(context.Background(), conc, failing, orderedReader(mem, &produced)) {
			if err != nil {
				gotErr = err
				continue
			}
			if gotErr != nil {
				t.Fatal("a batch after the error")
			}
			n++
			rec.Release()
		}
		if !errors.Is(gotErr, errOrderedTest) || n != 30+30+7 {
			t.Fatalf("got %d batches then %v; want 67 batches then the task's error", n, gotErr)
		}
		waitReleased(t, mem)
	})
	t.Run("cancelled", func(t *testing.T) {
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		var produced atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n, gotErr := 0, error(nil)
		for rec, err := range ordered(ctx, conc, tasks, orderedReader(mem, &produced)) {
			if err != nil {
				gotErr = err
				break
			}
			rec.Release()
			if n++; n == 10 {
				cancel()
			}
		}
		if !errors.Is(gotErr, context.Canceled) {
			t.Fatalf("after cancelling: %d batches, err %v; want context.Canceled", n, gotErr)
		}
		waitReleased(t, mem)
	})
}
