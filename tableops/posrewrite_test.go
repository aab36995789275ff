package tableops_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// TestCompactChoice: what auto compaction does to one data file, by its
// deletes and size, under threshold 4, deleted ratio 0.2 and small files
// under 1000 bytes.
func TestCompactChoice(t *testing.T) {
	pol := tableops.CompactionPolicy{Enabled: true, DeleteFileThreshold: 4, DeletedRatio: 0.2, MinFileSizeBytes: 1000, MinInputFiles: 5}
	large, small := int64(5000), int64(500)
	cases := []struct {
		name string
		f    tableops.FileDeletes
		want string
	}{
		{"no deletes", tableops.FileDeletes{Rows: 100, Size: large}, "keep"},
		{"under the threshold", tableops.FileDeletes{Rows: 100, Deleted: 3, Size: large, Pos: 3, OwnPos: 3}, "keep"},
		{"ratio reached, few files", tableops.FileDeletes{Rows: 100, Deleted: 20, Size: large, Pos: 1, OwnPos: 1}, "rewrite-data"},
		{"ratio reached, many files", tableops.FileDeletes{Rows: 100, Deleted: 30, Size: large, Pos: 6, OwnPos: 6}, "rewrite-data"},
		{"threshold, large, low ratio", tableops.FileDeletes{Rows: 100, Deleted: 4, Size: large, Pos: 4, OwnPos: 4}, "rewrite-position-deletes"},
		{"threshold, small file", tableops.FileDeletes{Rows: 100, Deleted: 4, Size: small, Pos: 4, OwnPos: 4}, "rewrite-data"},
		{"threshold, v3", tableops.FileDeletes{Rows: 100, Deleted: 4, Size: large, Pos: 4, OwnPos: 4, V3: true}, "rewrite-data"},
		{"threshold with a deletion vector", tableops.FileDeletes{Rows: 100, Deleted: 4, Size: large, Pos: 3, OwnPos: 3, DV: true}, "rewrite-data"},
		{"threshold with equality deletes", tableops.FileDeletes{Rows: 100, Deleted: 3, Size: large, Pos: 3, OwnPos: 3, Eq: 1}, "rewrite-data"},
		{"equality deletes only", tableops.FileDeletes{Rows: 100, Size: large, Eq: 4}, "rewrite-data"},
		// Shared position delete files stay: merging the two own ones
		// leaves 3 of 4, under the threshold.
		{"shared files, merge enough", tableops.FileDeletes{Rows: 100, Deleted: 2, Size: large, Pos: 4, OwnPos: 2}, "rewrite-position-deletes"},
		// Merging would leave 4 + 1: still at the threshold.
		{"shared files, merge not enough", tableops.FileDeletes{Rows: 100, Deleted: 2, Size: large, Pos: 6, OwnPos: 2}, "rewrite-data"},
		{"one own file", tableops.FileDeletes{Rows: 100, Deleted: 1, Size: large, Pos: 4, OwnPos: 1}, "rewrite-data"},
		{"empty data file", tableops.FileDeletes{Rows: 0, Size: large, Pos: 4, OwnPos: 4}, "rewrite-position-deletes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := pol.Choose(c.f); got != c.want {
				t.Fatalf("choose(%+v) = %s, want %s", c.f, got, c.want)
			}
		})
	}
}

// largeFiles makes every data file of morTable large for the compaction
// (min-file-size-bytes 1), with a deleted ratio the one-row deletes stay
// under.
var largeFiles = iceberg.Properties{tableops.PropCompactionMinFileSize: "1", tableops.PropCompactionDeleteThreshold: "3",
	tableops.PropCompactionDeletedRatio: "0.5"}

// TestCompactMergesPositionDeletes: a large data file over the delete-file
// threshold with few rows deleted keeps its data file; its position delete
// files are rewritten into one, in a replace snapshot whose summary says
// so; the rows and the changelog do not change; more deletes later are
// merged again with the merged file.
func TestCompactMergesPositionDeletes(t *testing.T) {
	e := morTable(t, largeFiles, 4)
	before, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	dataBefore, delBefore := liveFiles(t, e, "t")
	if len(dataBefore) != 2 || delBefore != 4 {
		t.Fatalf("setup: %d data files, %d delete files; want 2 and 4", len(dataBefore), delBefore)
	}
	prev := e.Load("t").CurrentSnapshot().SnapshotID
	o, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.SnapshotID == 0 || o.RowsAdded != 0 || o.RowsRemoved != 0 {
		t.Fatalf("outcome %+v: want a snapshot rewriting no rows", o)
	}
	tbl := e.Load("t")
	snap := tbl.CurrentSnapshot()
	if snap.Summary.Operation != "replace" {
		t.Fatalf("compaction snapshot is %q, want replace", snap.Summary.Operation)
	}
	for k, want := range map[string]string{
		"floe.compaction.rewritten-data-files":            "0",
		"floe.compaction.delete-rewritten-data-files":     "1",
		"floe.compaction.rewritten-position-delete-files": "4",
		"floe.compaction.added-position-delete-files":     "1",
		"floe.operation": "compact-auto",
	} {
		if got := snap.Summary.Properties[k]; got != want {
			t.Errorf("summary %s = %q, want %q (%v)", k, got, want, snap.Summary.Properties)
		}
	}
	after, err := e.Rows(tbl, scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("rows changed:\nbefore %v\nafter  %v", before, after)
	}
	dataAfter, delAfter := liveFiles(t, e, "t")
	if !slices.Equal(dataAfter, dataBefore) || delAfter != 1 {
		t.Fatalf("after: data files %v, %d delete files; want the same data files %v and 1 delete file", dataAfter, delAfter, dataBefore)
	}
	_, seq, err := changelog.Scan(e.Ctx, tbl, changelog.Options{StartSnapshotID: &prev})
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() != 0 {
			t.Fatalf("changelog over the compaction has %d rows, want none", rec.NumRows())
		}
		rec.Release()
	}
	// Under the threshold now: nothing to do.
	if o, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true}); err != nil || o.SnapshotID != 0 {
		t.Fatalf("second compaction: %+v, %v; want nothing committed", o, err)
	}
	// Two more deletes (one of them a row already deleted: nothing) reach
	// the threshold again with the merged file, and merge into one.
	for _, id := range []int64{9, 3, 10} {
		if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true}); err != nil {
		t.Fatal(err)
	}
	if data, del := liveFiles(t, e, "t"); !slices.Equal(data, dataBefore) || del != 1 {
		t.Fatalf("after the second merge: data files %v, %d delete files; want %v and 1", data, del, dataBefore)
	}
	rows, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 40-6 {
		t.Fatalf("%d rows, want 34: %v", len(rows), rows)
	}
}

// TestCompactMergeConcurrentDelete: a delete that commits while a
// compaction is merging position delete files of the file it deletes from
// keeps its row deleted: the compaction is redone on the new head and
// merges the new delete file too.
func TestCompactMergeConcurrentDelete(t *testing.T) {
	e := morTable(t, largeFiles, 3)
	fired := 0
	tableops.SetCompactHook(func() {
		fired++
		if fired > 1 {
			return
		}
		for _, id := range []int64{5, 105} {
			if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, id)); err != nil {
				t.Error(err)
			}
		}
	})
	defer tableops.SetCompactHook(nil)
	dataBefore, _ := liveFiles(t, e, "t")
	o, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.Attempts < 2 || fired < 2 {
		t.Fatalf("%d attempts, hook ran %d times: want the concurrent delete to force a retry", o.Attempts, fired)
	}
	rows, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 40-3-2 {
		t.Fatalf("%d rows after compaction racing a delete, want 35: %v", len(rows), rows)
	}
	for _, r := range rows {
		if strings.HasPrefix(r, "(5,") || strings.HasPrefix(r, "(105,") {
			t.Fatalf("row deleted concurrently came back: %s", r)
		}
	}
	// The first file's four delete files are one; the other file's one stays.
	if data, del := liveFiles(t, e, "t"); !slices.Equal(data, dataBefore) || del != 2 {
		t.Fatalf("data files %v, %d delete files; want %v and 2", data, del, dataBefore)
	}
}

// applyChanges applies upserts and deletes of ids to ns.t with
// merge.Apply (v is "v<id>-<step>" for upserts).
func applyChanges(e *tabletest.Env, step int, upserts, deletes []int64, mode merge.DeleteMode) error {
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String}}, nil)
	var data [][]any
	for _, id := range upserts {
		data = append(data, []any{id, fmt.Sprintf("v%d-%d", id, step), "UPDATE_AFTER"})
	}
	for _, id := range deletes {
		data = append(data, []any{id, nil, "DELETE"})
	}
	_, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch, tabletest.Seq(sch, data)(), []string{"id"}, merge.WithDeleteMode(mode))
	return err
}

// TestCompactRandomized: random applies (upserts and deletes, mostly in
// position mode, some as equality deletes) into a merge-on-read v2 table,
// each followed by an automatic compaction whose thresholds change from
// step to step (so that data rewrites, position delete merges and
// bin-packing all happen); after every step the table holds exactly the
// rows of a model.
func TestCompactRandomized(t *testing.T) {
	// A fixed seed (one whose run merges position deletes, which the test
	// checks) unless FLOE_TEST_SEED gives another ("random": a new one).
	seed := uint64(609804085960127268)
	if v := os.Getenv("FLOE_TEST_SEED"); v == "random" {
		seed = rand.Uint64()
	} else if v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("FLOE_TEST_SEED=%q: want a number or random", v)
		}
		seed = n
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	e := tabletest.New(t)
	props := iceberg.Properties{"format-version": "2", "write.delete.mode": "merge-on-read",
		"write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}
	if _, err := e.Create("t", "id long not null, v string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	model := map[int64]string{}
	as := tabletest.ArrowSchema(e.Load("t"))
	for f := int64(0); f < 3; f++ {
		var data [][]any
		for i := f * 100; i < f*100+100; i++ {
			data = append(data, []any{i, fmt.Sprint("v", i)})
			model[i] = fmt.Sprint("v", i)
		}
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(as, data)); err != nil {
			t.Fatal(err)
		}
	}
	merges, rewrites := 0, 0
	for step := 0; step < 40; step++ {
		var ups, dels []int64
		seen := map[int64]bool{}
		for range 1 + rng.IntN(4) {
			id := rng.Int64N(350)
			if seen[id] {
				continue
			}
			seen[id] = true
			if _, ok := model[id]; ok && rng.IntN(2) == 0 {
				dels = append(dels, id)
				delete(model, id)
			} else {
				ups = append(ups, id)
				model[id] = fmt.Sprintf("v%d-%d", id, step)
			}
		}
		mode := merge.DeletePosition
		if rng.IntN(5) == 0 {
			mode = merge.DeleteEquality
		}
		if err := applyChanges(e, step, ups, dels, mode); err != nil {
			t.Fatalf("step %d: apply: %v", step, err)
		}
		minSize := "1"
		if rng.IntN(3) == 0 {
			minSize = "1073741824"
		}
		if _, err := tableops.SetProperties(e.Ctx, e.Cat, e.Target("t", "").Ident, iceberg.Properties{
			tableops.PropCompactionMinFileSize:     minSize,
			tableops.PropCompactionDeleteThreshold: fmt.Sprint(2 + rng.IntN(3)),
			tableops.PropCompactionDeletedRatio:    "0.3",
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true}); err != nil {
			t.Fatalf("step %d: compact: %v", step, err)
		}
		sum := e.Load("t").CurrentSnapshot().Summary
		if sum.Properties["floe.operation"] == "compact-auto" {
			if sum.Properties["floe.compaction.delete-rewritten-data-files"] != "0" {
				merges++
			}
			if sum.Properties["floe.compaction.rewritten-data-files"] != "0" {
				rewrites++
			}
		}
		got, err := e.Rows(e.Load("t"), scan.At{})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for id, v := range model {
			want = append(want, fmt.Sprintf("(%d,'%s')", id, v))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d (seed %d, upserts %v, deletes %v, mode %v): the table holds %d rows\n%s\nwant %d\n%s",
				step, seed, ups, dels, mode, len(got), strings.Join(got, " "), len(want), strings.Join(want, " "))
		}
	}
	t.Logf("%d compactions merged position deletes, %d rewrote data files", merges, rewrites)
	if merges == 0 {
		t.Errorf("no compaction merged position delete files (seed %d)", seed)
	}
}
