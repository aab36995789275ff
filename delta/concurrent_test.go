package delta_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/testdir"
)

// TestConcurrentReads uses one Table from several goroutines (Changes,
// snapshots, timestamp lookups) and requires identical results; run with
// -race to check the shared commit cache.
func TestConcurrentReads(t *testing.T) {
	dir := filepath.Join(testdir.Shared(t, "delta"), "deltars-cdf-table-with-cdc-and-dvs")
	ctx := context.Background()
	tbl, err := delta.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := readChanges(t, tbl, delta.ChangesOptions{Start: delta.AtVersion(0)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			schema, seq, err := tbl.Changes(ctx, delta.ChangesOptions{Start: delta.AtVersion(0)})
			if err != nil {
				errs <- err.Error()
				return
			}
			got, err := deltatest.Rows(schema, seq, nil)
			if err != nil {
				errs <- err.Error()
				return
			}
			if d := deltatest.DiffMultisets(got, want); d != "" {
				errs <- d
			}
			ci, err := tbl.CommitInfo(ctx, 12)
			if err != nil {
				errs <- err.Error()
				return
			}
			if v, err := tbl.VersionAtOrBefore(ctx, ci.Timestamp); err != nil || v != 12 {
				errs <- fmt.Sprintf("VersionAtOrBefore(%s) = %d, %v; want 12", ci.Timestamp, v, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
