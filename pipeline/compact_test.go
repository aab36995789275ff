package pipeline_test

import (
	"strings"
	"testing"

	"github.com/floedata/floe/pipeline"
)

const morPipeline = `
transforms:
  - name: copy
    type: sync
    source: ns.orders
    destination: ns.copy
    key: [id]
    properties:
      write.delete.mode: merge-on-read
      write.update.mode: merge-on-read
      write.merge.mode: merge-on-read
      floe.compaction.delete-file-threshold: "2"
      floe.compaction.deleted-ratio: "1"
`

// TestBuildCompactsMergeOnReadOutput: a merge-on-read output whose files
// pass the delete-file threshold after a build is compacted in a second,
// replace, commit after the build's; the rows stay those of the source.
func TestBuildCompactsMergeOnReadOutput(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, 10}, []any{2, 20}, []any{3, 30}, []any{4, 40})
	p := loadPipeline(t, morPipeline)
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	run := func() (compaction int64) {
		t.Helper()
		out, err := r.RunOnce(e.Ctx, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		res := out[0].Result.Outputs[0]
		if res.CompactionError != "" {
			t.Fatalf("compaction failed: %s", res.CompactionError)
		}
		return res.CompactionSnapshotID
	}
	if c := run(); c != 0 {
		t.Fatalf("first (full) build compacted (snapshot %d); nothing was over the thresholds", c)
	}
	e.del("orders", 1)
	if c := run(); c != 0 {
		t.Fatalf("one delete file: compacted (snapshot %d), want not under threshold 2", c)
	}
	e.del("orders", 2)
	c := run()
	if c == 0 {
		t.Fatal("two delete files on one data file: no compaction")
	}
	tbl := e.Load("copy")
	snap := tbl.CurrentSnapshot()
	if snap.SnapshotID != c || snap.Summary.Operation != "replace" {
		t.Fatalf("head %d (%s), want the compaction %d (replace)", snap.SnapshotID, snap.Summary.Operation, c)
	}
	// The compaction repeats the build's provenance, so the head still says
	// what the output was built from (floe status reads it there).
	build := tbl.Metadata().SnapshotByID(*snap.ParentSnapshotID)
	for k, v := range build.Summary.Properties {
		if !strings.HasPrefix(k, "floe.") || k == "floe.operation" || k == "floe.commit-id" {
			continue
		}
		if got := snap.Summary.Properties[k]; got != v {
			t.Errorf("compaction summary %s = %q, want the build's %q", k, got, v)
		}
	}
	if got := snap.Summary.Properties["floe.operation"]; got != "compact-auto" {
		t.Errorf("compaction summary floe.operation = %q, want compact-auto", got)
	}
	if snap.Summary.Properties["floe.transform.name"] == "" {
		t.Error("compaction summary has no floe.transform.name")
	}
	if got := render(e.rowsOf("copy")); got != "(3,30) (4,40)" {
		t.Fatalf("copy after compaction: %s", got)
	}
	// The next build continues incrementally from its watermark.
	e.del("orders", 3)
	run()
	if got := render(e.rowsOf("copy")); got != "(4,40)" {
		t.Fatalf("copy after the next build: %s", got)
	}
}

// TestBuildCompactionDisabled: floe.compaction.enabled=false turns it off.
func TestBuildCompactionDisabled(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, 10}, []any{2, 20}, []any{3, 30})
	p := loadPipeline(t, morPipeline+"      floe.compaction.enabled: \"false\"\n")
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	for _, id := range []int64{0, 1, 2} {
		if id > 0 {
			e.del("orders", id)
		}
		out, err := r.RunOnce(e.Ctx, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c := out[0].Result.Outputs[0].CompactionSnapshotID; c != 0 {
			t.Fatalf("compacted with floe.compaction.enabled=false (snapshot %d)", c)
		}
	}
}
