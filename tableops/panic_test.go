package tableops_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestPanicInWorkerIsAnError: a panic in a goroutine a command starts
// (here the match of a copy-on-write delete, which runs in write's
// errgroup workers, one per data file) is an error wrapping
// safe.ErrInternal, with nothing committed, instead of a crash of the
// process with a stack trace (before, this test's binary died).
func TestPanicInWorkerIsAnError(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null, v string", "bucket(4, id)", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := int64(1); i <= 16; i++ {
		data = append(data, []any{i, fmt.Sprint("a", i)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
		t.Fatal(err)
	}
	before, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	p := &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		var out []bool
		return out[:rec.NumRows()+1], nil // a bug: slice bounds out of range
	}}
	_, err = tableops.Delete(e.Ctx, e.Target("t", ""), p)
	if !errors.Is(err, safe.ErrInternal) || !strings.Contains(err.Error(), "internal error") || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("want an internal error naming the panic, got %v", err)
	}
	after, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Fatal("the table changed")
	}
}
