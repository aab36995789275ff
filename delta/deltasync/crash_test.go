package deltasync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/commit"
)

var errCrash = errors.New("injected crash")

// crashHistory is peopleTable plus a new column at version 8 and a row
// using it at version 9, so that every step of a run happens.
func crashHistory(t *testing.T) *gen {
	g := peopleTable(t)
	wide := arrow.NewSchema(append(peopleSchema.Fields(), arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	g.setSchema(wide)
	g.commit("WRITE", actions(g.data(row{"id": 20, "name": "n", "region": "eu", "note": "hello"}))...)
	return g
}

// TestSyncCrash stops a run at every step boundary (the n-th time it is
// reached), as a crash would, then reruns until the table is up to date:
// the table must equal the Delta snapshot, and the Iceberg snapshots must
// hold every Delta version's changes exactly once.
func TestSyncCrash(t *testing.T) {
	g := crashHistory(t)
	src := g.open()
	const last = 9
	steps := []struct {
		step string
		max  int // occurrences in a clean run
	}{
		{stepCreated, 1}, {stepMigrateCommit, 1}, {stepMigrated, 1},
		{stepBatchRead, last - 1}, {stepBatchDone, last - 1}, {stepEvolved, 1},
	}
	for _, s := range steps {
		for n := 1; n <= s.max; n++ {
			t.Run(fmt.Sprintf("%s_%d", s.step, n), func(t *testing.T) {
				ctx := context.Background()
				cat := openCatalog(t)
				ident := table.Identifier{"db", "people"}
				seen := 0
				opts := Options{EqualityColumns: []string{"id"}, PartitionBy: "region", EvolveSchema: true, MaxVersions: 1,
					Start: delta.AtVersion(1)}
				opts.hook = func(step string) error {
					if step == s.step {
						seen++
						if seen == n {
							return errCrash
						}
					}
					return nil
				}
				res, err := Sync(ctx, cat, src, ident, opts)
				if !errors.Is(err, errCrash) {
					t.Fatalf("the crash did not happen: %v", err)
				}
				// The crashed run reports the watermark the table holds.
				want := ""
				if tbl, err := cat.Load(ctx, ident); err == nil {
					want = tbl.Properties()[PropSourceVersion]
				}
				if got := strconv.FormatInt(res.Watermark, 10); (want == "" && res.Watermark != -1) || (want != "" && got != want) {
					t.Fatalf("crashed run reports watermark %d, the table holds %q", res.Watermark, want)
				}
				opts.hook = nil
				res, err = Sync(ctx, cat, src, ident, opts)
				if err != nil {
					t.Fatalf("rerun: %v", err)
				}
				if res.Watermark != last {
					t.Fatalf("rerun stopped at %d", res.Watermark)
				}
				checkEqual(t, cat, ident, src, last)
				checkOnce(t, cat, ident, 2, last)
			})
		}
	}
}

// checkOnce checks that the Iceberg snapshots written by batches cover
// Delta versions from..to without overlap and that at most one migration
// snapshot exists.
func checkOnce(t *testing.T, cat *catalog.Catalog, ident table.Identifier, from, to int64) {
	t.Helper()
	tbl, err := cat.Load(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	var ranges [][2]int64
	migrations := 0
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		if _, ok := s.Summary.Properties[PropSourceVersion]; ok {
			migrations++
		}
		r, ok := s.Summary.Properties["floe.delta.source-versions"]
		if !ok {
			continue
		}
		a, b, _ := strings.Cut(r, "-")
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		ranges = append(ranges, [2]int64{x, y})
	}
	if migrations > 1 {
		t.Fatalf("%d migration snapshots", migrations)
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i][0] < ranges[j][0] })
	for i := 1; i < len(ranges); i++ {
		if ranges[i][0] <= ranges[i-1][1] {
			t.Fatalf("Delta versions applied twice: snapshots for %v and %v", ranges[i-1], ranges[i])
		}
	}
	for _, r := range ranges {
		if r[0] < from || r[1] > to {
			t.Fatalf("snapshot for versions %v outside %d..%d", r, from, to)
		}
	}
}

// TestSyncStaleRun lets another run apply the same changes while a run is
// between reading them and committing: the late run must fail with
// commit.ErrWatermarkMoved and commit nothing.
func TestSyncStaleRun(t *testing.T) {
	g := peopleTable(t)
	src := g.open()
	ctx := context.Background()
	cat := openCatalog(t)
	ident := table.Identifier{"db", "people"}
	syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 1)
	var inner *Result
	opts := Options{End: delta.AtVersion(4)}
	opts.hook = func(step string) error {
		if step == stepBatchRead && inner == nil {
			var err error
			if inner, err = Sync(ctx, cat, src, ident, Options{End: delta.AtVersion(4)}); err != nil {
				t.Errorf("inner run: %v", err)
			}
		}
		return nil
	}
	_, err := Sync(ctx, cat, src, ident, opts)
	if !errors.Is(err, commit.ErrWatermarkMoved) {
		t.Fatalf("stale run: got %v, want commit.ErrWatermarkMoved", err)
	}
	if inner == nil || inner.Watermark != 4 {
		t.Fatalf("inner run: %+v", inner)
	}
	checkEqual(t, cat, ident, src, 4)
	checkOnce(t, cat, ident, 2, 4)
}

// TestSyncConcurrent runs several syncs of one table at once, first runs
// included: each succeeds or fails with commit.ErrWatermarkMoved, and the
// table ends equal to the Delta snapshot with every version applied once.
func TestSyncConcurrent(t *testing.T) {
	g := peopleTable(t)
	src := g.open()
	ctx := context.Background()
	cat := openCatalog(t)
	ident := table.Identifier{"db", "people"}
	for round, end := range []int64{1, 4, 7} {
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = Sync(ctx, cat, src, ident, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1), End: delta.AtVersion(end), MaxVersions: 1})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil && !errors.Is(err, commit.ErrWatermarkMoved) && !errors.Is(err, commit.ErrTooManyConflicts) {
				t.Fatalf("round %d run %d: %v", round, i, err)
			}
		}
		// Whatever lost, a rerun completes the range.
		syncTo(t, cat, ident, src, Options{}, end)
		checkOnce(t, cat, ident, 2, end)
	}
}
