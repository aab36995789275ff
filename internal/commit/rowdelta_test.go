package commit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/tableops"
)

// TestRowDeltaRacingCompaction: a merge-on-read delete whose position
// deletes (v2) or deletion vector (v3) reference a data file that a
// compaction rewrites between the delete's planning and its commit. floe
// commits such a row delta itself (not through iceberg-go's validation):
// the commit must still fail as a conflict, the retry must delete from the
// compacted file, and the committed deletes must reference only live
// files.
func TestRowDeltaRacingCompaction(t *testing.T) {
	for _, fv := range []string{"2", "3"} {
		t.Run("v"+fv, func(t *testing.T) {
			e := tabletest.New(t)
			props := iceberg.Properties{"format-version": fv, "write.delete.mode": "merge-on-read"}
			for k, v := range fast {
				props[k] = v
			}
			if _, err := e.Create("t", "id long not null", "", nil, props); err != nil {
				t.Fatal(err)
			}
			appendRows(t, e, "t", 1, 2, 3)
			appendRows(t, e, "t", 4, 5, 6)
			attempts := 0
			var firstRefs []string
			out, err := commit.Run(e.Ctx, e.Cat, table.Identifier{"ns", "t"}, commit.Options{}, func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
				attempts++
				res, err := write.Prepare(ctx, write.Request{Table: tbl, Mode: write.MergeOnRead, Reuse: reuse, Visitor: &write.Visitor{
					MatchColumns: []string{"id"},
					Match: func(_ context.Context, _ iceberg.DataFile, b scan.Batch) ([]bool, error) {
						ids := b.Rec.Column(0).(*array.Int64)
						m := make([]bool, ids.Len())
						for i := range m {
							m[i] = ids.Value(i) == 5
						}
						return m, nil
					},
				}})
				if err != nil || attempts > 1 {
					return res, err
				}
				firstRefs = referenced(res.AddDeletes)
				// The compaction commits first: every data file is rewritten.
				if _, err := tableops.Compact(ctx, e.Target("t", "")); err != nil {
					t.Fatal(err)
				}
				return res, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if out.Attempts != 2 || attempts != 2 {
				t.Fatalf("%d attempts (%d prepared), want the compaction to force a second", out.Attempts, attempts)
			}
			if len(firstRefs) != 1 {
				t.Fatalf("first attempt's deletes reference %v, want one data file", firstRefs)
			}
			if got, want := rowsOf(t, e), "(1) (2) (3) (4) (6)"; got != want {
				t.Fatalf("rows %s, want %s", got, want)
			}
			tbl := e.Load("t")
			live := map[string]bool{}
			tasks, err := tbl.Scan().PlanFiles(e.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, task := range tasks {
				live[task.File.FilePath()] = true
			}
			if live[firstRefs[0]] {
				t.Fatalf("the compaction left %s live", firstRefs[0])
			}
			refs := referenced(out.Result.AddDeletes)
			if len(refs) != 1 || !live[refs[0]] {
				t.Fatalf("committed deletes reference %v, want one live data file of %v", refs, live)
			}
		})
	}
}

func referenced(files []iceberg.DataFile) []string {
	var out []string
	for _, f := range files {
		if ref := f.ReferencedDataFile(); ref != nil {
			out = append(out, *ref)
		}
	}
	return out
}

// TestCheckReferencedLive checks floe's replacement for iceberg-go's
// RowDelta validation directly: a file removed by a snapshot since the
// one a change was computed on is reported (wrapping
// table.ErrDataFilesMissing, naming the file and the snapshot), a file
// still live is not, nothing committed since means nothing to find, and a
// base that is not an ancestor of the head is ErrCommitDiverged.
func TestCheckReferencedLive(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null", "", nil, iceberg.Properties{"format-version": "2"}); err != nil {
		t.Fatal(err)
	}
	appendRows(t, e, "t", 1, 2)
	appendRows(t, e, "t", 3)
	base := e.Load("t")
	baseHead := base.CurrentSnapshot()
	var files []string
	tasks, err := base.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		files = append(files, task.File.FilePath())
	}
	if len(files) != 2 {
		t.Fatalf("%d files, want 2", len(files))
	}
	// Nothing committed since the base: nothing to read, nothing missing.
	if err := commit.CheckReferencedLive(e.Ctx, base, "", baseHead, files); err != nil {
		t.Fatal(err)
	}
	// Rewrite the file holding id 3 (a delete of every row in it: the
	// copy-on-write delete removes it), then append elsewhere.
	if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, int64(3))); err != nil {
		t.Fatal(err)
	}
	appendRows(t, e, "t", 4)
	after := e.Load("t")
	var removed, kept string
	tasks, err = after.Scan().PlanFiles(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, task := range tasks {
		live[task.File.FilePath()] = true
	}
	for _, f := range files {
		if live[f] {
			kept = f
		} else {
			removed = f
		}
	}
	if removed == "" || kept == "" {
		t.Fatalf("after the delete, live files %v; want one of %v removed", live, files)
	}
	err = commit.CheckReferencedLive(e.Ctx, after, "", baseHead, []string{kept, removed})
	if !errors.Is(err, table.ErrDataFilesMissing) || !strings.Contains(err.Error(), removed) {
		t.Fatalf("check with a removed file: %v, want ErrDataFilesMissing naming %s", err, removed)
	}
	if err := commit.CheckReferencedLive(e.Ctx, after, "", baseHead, []string{kept}); err != nil {
		t.Fatalf("check with a live file: %v", err)
	}
	if err := commit.CheckReferencedLive(e.Ctx, after, "", after.CurrentSnapshot(), []string{removed}); err != nil {
		t.Fatalf("check from the head itself (nothing committed since): %v", err)
	}
	stray := *baseHead
	stray.SnapshotID = 12345
	stray.ParentSnapshotID = nil
	if err := commit.CheckReferencedLive(e.Ctx, after, "", &stray, []string{kept}); !errors.Is(err, table.ErrCommitDiverged) {
		t.Fatalf("check from a snapshot not on the branch: %v, want ErrCommitDiverged", err)
	}

}
