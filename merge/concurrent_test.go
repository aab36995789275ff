package merge_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
)

// TestConcurrentApplies: applies racing on one table all commit (retrying
// on conflicts), and the table ends with every change exactly once.
func TestConcurrentApplies(t *testing.T) {
	for _, props := range []iceberg.Properties{
		{"format-version": "2"},
		{"format-version": "3", "write.merge.mode": "merge-on-read"},
		{"format-version": "2", "floe.write.mode": "auto"},
		{"format-version": "3", "floe.write.mode": "auto"},
	} {
		// Racing writers on one key need more than Iceberg's default 4
		// retries; the table says so, as a user's would.
		props["commit.retry.num-retries"] = "20"
		props["commit.retry.min-wait-ms"] = "20"
		t.Run(props["format-version"]+props["floe.write.mode"], func(t *testing.T) {
			e := tabletest.New(t)
			if _, err := e.Create("t", "id long not null, owner string", "", nil, props); err != nil {
				t.Fatal(err)
			}
			sch := changesSchema(t, "id long, owner string, _change_type string")
			const writers, perWriter = 4, 5
			var wg sync.WaitGroup
			errs := make(chan error, writers*perWriter)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for k := 0; k < perWriter; k++ {
						// Each writer upserts its own keys and one key all
						// writers share (id 0), so they conflict.
						data := [][]any{{int64(1000*(w+1) + k), fmt.Sprint("w", w), "INSERT"}, {int64(0), fmt.Sprint("w", w), "INSERT"}}
						rec, err := tabletest.Record(sch, data)
						if err != nil {
							errs <- err
							return
						}
						_, err = merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch,
							func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, []string{"id"})
						if err != nil {
							errs <- fmt.Errorf("writer %d: %w", w, err)
							return
						}
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			got, err := e.Rows(e.Load("t"), scan.At{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != writers*perWriter+1 {
				t.Fatalf("got %d rows, want %d (no duplicates of the shared key): %v", len(got), writers*perWriter+1, got)
			}
			shared := 0
			for _, r := range got {
				if strings.HasPrefix(r, "(0,") {
					shared++
				}
			}
			if shared != 1 {
				t.Fatalf("the shared key has %d rows", shared)
			}
		})
	}
}
