package merge_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
)

// seedMerge is the MERGE of the seeds' native-changelog filter example
// (003), on a per-key latest changelog of the source.
const seedMerge = `MERGE INTO ns.out AS target
USING changes AS source
ON source.id = target.id
WHEN MATCHED AND (
    source._change_type = 'DELETE' OR source.status IS NULL OR source.status <> 'active'
) THEN DELETE
WHEN MATCHED AND source._change_type IN ('INSERT', 'UPDATE_AFTER')
    AND source.status = 'active' THEN UPDATE SET *
WHEN NOT MATCHED AND source._change_type IN ('INSERT', 'UPDATE_AFTER')
    AND source.status = 'active' THEN INSERT *`

// TestSeedFilterPropagation runs the seeds' incremental filter end to end:
// random changes to a source table, its per-key latest changelog since the
// watermark, the seed's MERGE committed with the new watermark. After every
// round the output must hold exactly the source's active rows.
func TestSeedFilterPropagation(t *testing.T) {
	for _, props := range []iceberg.Properties{
		{"format-version": "2"},
		{"format-version": "2", "write.merge.mode": "merge-on-read", "write.delete.mode": "merge-on-read"},
		{"format-version": "3", "write.merge.mode": "merge-on-read", "write.delete.mode": "merge-on-read"},
	} {
		t.Run(fmt.Sprint(props), func(t *testing.T) {
			e := tabletest.New(t)
			for _, name := range []string{"src", "out"} {
				if _, err := e.Create(name, "id long not null, status string, v string", "", []string{"id"}, props); err != nil {
					t.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(3, 17))
			model := map[int64][2]any{} // id -> status (nil = NULL), v
			sch := changesSchema(t, "id long, status string, v string, _change_type string")
			statuses := []any{"active", "active", "inactive", nil}
			commitChanges := func() {
				var data [][]any
				seen := map[int64]bool{}
				for k := 0; k < 6; k++ {
					id := rng.Int64N(25)
					if seen[id] {
						continue
					}
					seen[id] = true
					if _, ok := model[id]; ok && rng.IntN(4) == 0 {
						delete(model, id)
						data = append(data, []any{id, nil, nil, "DELETE"})
						continue
					}
					row := [2]any{statuses[rng.IntN(len(statuses))], fmt.Sprintf("v%d", rng.IntN(1000))}
					model[id] = row
					data = append(data, []any{id, row[0], row[1], "UPDATE_AFTER"})
				}
				rec, err := tabletest.Record(sch, data)
				if err != nil {
					t.Fatal(err)
				}
				defer rec.Release()
				if _, err := merge.Apply(e.Ctx, e.Cat, e.Target("src", "").Ident, sch, seqOf(rec), []string{"id"}); err != nil {
					t.Fatal(err)
				}
			}
			commitChanges()
			stmt, err := expr.ParseMerge(seedMerge)
			if err != nil {
				t.Fatal(err)
			}
			// The first build reads the source's current state (as a table
			// source) into the output.
			head := e.Load("src").CurrentSnapshot().SnapshotID
			init, err := expr.ParseMerge(`MERGE INTO ns.out AS t USING ns.src AS s ON t.id = s.id WHEN NOT MATCHED AND s.status = 'active' THEN INSERT *`)
			if err != nil {
				t.Fatal(err)
			}
			schema, seq, err := scan.Rows(e.Ctx, e.Load("src"), scan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := merge.Merge(e.Ctx, e.Cat, init, merge.Source{Schema: schema, Rows: seq},
				merge.WithCommitProperties(map[string]string{"watermark.source-snapshot-id": fmt.Sprint(head)})); err != nil {
				t.Fatal(err)
			}
			checkActive(t, e, model)
			for round := 0; round < 6; round++ {
				for k := 0; k <= rng.IntN(3); k++ {
					commitChanges()
				}
				start := head
				head = e.Load("src").CurrentSnapshot().SnapshotID
				schema, seq, err := changelog.Scan(e.Ctx, e.Load("src"), changelog.Options{
					StartSnapshotID: &start, EndSnapshotID: &head, IdentifierColumns: []string{"id"}, PerKey: changelog.PerKeyLatest})
				if err != nil {
					t.Fatal(err)
				}
				res, err := merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Schema: schema, Rows: seq},
					merge.WithCommitProperties(map[string]string{"watermark.source-snapshot-id": fmt.Sprint(head)}),
					merge.WithExpectedProperties(map[string]string{"watermark.source-snapshot-id": fmt.Sprint(start)}))
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if res.NumAffectedRows != res.NumUpdatedRows+res.NumDeletedRows+res.NumInsertedRows {
					t.Fatalf("round %d: affected %d is not the sum of %+v", round, res.NumAffectedRows, res)
				}
				checkActive(t, e, model)
				if got := e.Load("out").Properties()["watermark.source-snapshot-id"]; got != fmt.Sprint(head) {
					t.Fatalf("round %d: watermark %s, want %d", round, got, head)
				}
			}
			// A stale build (computed from an older watermark) commits
			// nothing.
			stale := "1"
			_, err = merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Schema: sch, Rows: seqOf()},
				merge.WithExpectedProperties(map[string]string{"watermark.source-snapshot-id": stale}))
			if !errors.Is(err, commit.ErrWatermarkMoved) {
				t.Fatalf("want ErrWatermarkMoved, got %v", err)
			}
		})
	}
}

// checkActive compares the output table with the model's active rows.
func checkActive(t *testing.T, e *tabletest.Env, model map[int64][2]any) {
	t.Helper()
	var want []string
	for id, row := range model {
		if row[0] == "active" {
			want = append(want, fmt.Sprintf("(%d,'active','%s')", id, row[1]))
		}
	}
	slices.Sort(want)
	got, err := e.Rows(e.Load("out"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("output rows\n got %v\nwant %v", got, want)
	}
}

// TestConcurrentMerges: upserting MERGEs racing on one table all commit,
// retrying on conflicts; a retry recomputes which source rows match, so a
// row another writer inserted meanwhile is updated, not inserted twice.
func TestConcurrentMerges(t *testing.T) {
	for _, props := range []iceberg.Properties{
		{"format-version": "2"},
		{"format-version": "3", "write.merge.mode": "merge-on-read"},
	} {
		t.Run(props["format-version"], func(t *testing.T) {
			e := tabletest.New(t)
			if _, err := e.Create("t", "id long not null, owner string", "", nil, props); err != nil {
				t.Fatal(err)
			}
			stmt, err := expr.ParseMerge(`MERGE INTO ns.t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`)
			if err != nil {
				t.Fatal(err)
			}
			sch := changesSchema(t, "id long, owner string")
			const writers, perWriter = 4, 5
			var wg sync.WaitGroup
			var mu sync.Mutex
			retried := 0
			errs := make(chan error, writers*perWriter)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for k := 0; k < perWriter; k++ {
						rec, err := tabletest.Record(sch, [][]any{{int64(1000*(w+1) + k), fmt.Sprint("w", w)}, {int64(0), fmt.Sprint("w", w)}})
						if err != nil {
							errs <- err
							return
						}
						// A merge that gives up after too many conflicts
						// committed nothing; its caller runs it again.
						var res *merge.MergeResult
						for try := 0; try < 5; try++ {
							if res, err = merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Schema: sch, Rows: seqOf(rec)}); !errors.Is(err, commit.ErrTooManyConflicts) {
								break
							}
						}
						rec.Release()
						if err != nil {
							errs <- fmt.Errorf("writer %d: %w", w, err)
							return
						}
						if res.NumInsertedRows+res.NumUpdatedRows != 2 {
							errs <- fmt.Errorf("writer %d: %d inserted and %d updated, want 2 in all", w, res.NumInsertedRows, res.NumUpdatedRows)
							return
						}
						mu.Lock()
						if res.Attempts > 1 {
							retried++
						}
						mu.Unlock()
					}
				}(w)
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			t.Logf("%d merges were retried", retried)
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
