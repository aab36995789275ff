package delta_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/testdir"
)

// TestNoArrowMemoryLeaks reads change data and snapshots of fixture tables
// with a checked allocator and requires every Arrow buffer to be released
// once the caller has released the batches, including when the caller
// stops early.
func TestNoArrowMemoryLeaks(t *testing.T) {
	root := testdir.Shared(t, "delta")
	ctx := context.Background()
	for _, name := range []string{
		"deltars-cdf-table-with-cdc-and-dvs",
		"kernelrs-cdf-table-with-dv",
		"kernelrs-cdf-column-mapping-name-mode",
		"deltars-cdf-table",
		"kernelrs-cdf-table-backtick-column-names",
		"deltars-checkpoint-cdf-table",
	} {
		t.Run(name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			tbl, err := delta.Open(ctx, filepath.Join(root, name), delta.WithAllocator(mem), delta.WithBatchSize(2))
			if err != nil {
				t.Fatal(err)
			}
			earliest, err := tbl.EarliestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Start where change data is recorded (column mapping tables
			// enable it at version 1).
			start := earliest
			for ; ; start++ {
				s, err := tbl.Snapshot(ctx, start)
				if err != nil {
					t.Fatal(err)
				}
				if s.ChangeDataFeedEnabled() {
					break
				}
			}
			_, seq, err := tbl.Changes(ctx, delta.ChangesOptions{Start: delta.AtVersion(start)})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for b, err := range seq {
				if err != nil {
					t.Fatal(err)
				}
				n += int(b.NumRows())
				b.Release()
			}
			if n == 0 {
				t.Fatal("no change rows read")
			}
			// Stop after the first batch.
			_, seq, err = tbl.Changes(ctx, delta.ChangesOptions{Start: delta.AtVersion(start)})
			if err != nil {
				t.Fatal(err)
			}
			for b, err := range seq {
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
				break
			}
			s, err := tbl.LatestSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, seq, err = s.Scan(ctx, delta.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for b, err := range seq {
				if err != nil {
					t.Fatal(err)
				}
				b.Release()
			}
		})
	}
}
