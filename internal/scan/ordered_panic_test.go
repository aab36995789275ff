package scan

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/safe"
)

// TestOrderedWorkerPanic: a panic in a task's reader (a worker goroutine
// of the scan) ends the stream with an error wrapping safe.ErrInternal
// after the batches of the tasks before it, instead of crashing the
// process.
func TestOrderedWorkerPanic(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	var produced atomic.Int64
	tasks := make([]orderedTask, 5)
	for i := range tasks {
		tasks[i] = orderedTask{id: i, batches: 10, failAt: -1}
	}
	inner := orderedReader(mem, &produced)
	read := func(ctx context.Context, task orderedTask, emit func(arrow.RecordBatch) bool) error {
		if task.id == 3 {
			var p *orderedTask
			_ = p.batches // a nil dereference
		}
		return inner(ctx, task, emit)
	}
	n, gotErr := 0, error(nil)
	for rec, err := range ordered(context.Background(), 2, tasks, read) {
		if err != nil {
			gotErr = err
			continue
		}
		n++
		rec.Release()
	}
	if !errors.Is(gotErr, safe.ErrInternal) || n != 30 {
		t.Fatalf("got %d batches then %v; want 30 batches then an internal error", n, gotErr)
	}
	waitReleased(t, mem)
}
