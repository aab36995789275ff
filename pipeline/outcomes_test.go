package pipeline_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pipeline"
)

// racedTransform copies ns.src into ns.out; in the build where race is
// true, another build of it (another process, as far as this build can
// tell) commits between this build's start and its commit.
func racedTransform(e *env, race *bool) *transform.Transform {
	var tr *transform.Transform
	tr = transform.New("copy", func(ctx *transform.Context) error {
		if *race {
			*race = false
			other := &transform.Runner{Catalog: e.Cat, Logger: discardLogger()}
			if _, err := other.Build(ctx, tr); err != nil {
				return err
			}
		}
		src, out := ctx.Input("source"), ctx.Output("output")
		if !ctx.IsIncremental() {
			rows, err := src.Current()
			if err != nil {
				return err
			}
			defer rows.Release()
			return out.Replace(rows)
		}
		changes, err := src.Changelog("id")
		if err != nil {
			return err
		}
		defer changes.Release()
		return out.ApplyChangelog(changes, "id")
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("id")),
		transform.WithReadMode(transform.Changelog))
	return tr
}

// TestLoserOfARaceIsNotAFailure (issue 12, item 10): of two runs of one
// transform at once, the one that finds the other committed first builds
// what is left, and when nothing is, it is superseded: not a failure, not
// an error in the history; the conflict is counted.
func TestLoserOfARaceIsNotAFailure(t *testing.T) {
	e := newEnv(t)
	e.create("src", "id long not null, v string", []string{"id"}, nil)
	e.insert("src", []any{1, "a"}, []any{2, "b"})
	race := false
	p, err := pipeline.FromTransforms("raced", []*transform.Transform{racedTransform(e, &race)})
	if err != nil {
		t.Fatal(err)
	}
	hist := pipeline.OpenHistory(filepath.Join(t.TempDir(), "h.jsonl"))
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), History: hist, Metrics: pipeline.NewMetrics(prometheus.NewRegistry())}
	for _, step := range []string{"first build (both create the output)", "incremental build"} {
		race = true
		outcomes, err := r.RunOnce(e.Ctx, p, nil)
		if err != nil || len(outcomes) != 1 || outcomes[0].Kind != pipeline.OutcomeSuperseded || outcomes[0].Failed() {
			t.Fatalf("%s: the loser of the race: %s, %v", step, kinds(outcomes), err)
		}
		if got := render(e.rowsOf("out")); got != render(e.rowsOf("src")) {
			t.Fatalf("%s: out %s", step, got)
		}
		e.insert("src", []any{int64(10 + len(step)), "c"})
	}
	// Without a race the next run builds; a race that leaves work (the
	// other run built an older state) builds what is left.
	race = false
	if o, err := r.RunOnce(e.Ctx, p, nil); err != nil || o[0].Kind != pipeline.OutcomeIncremental {
		t.Fatalf("no race: %s %v", kinds(o), err)
	}
	if got := testutil.ToFloat64(r.Metrics.CommitConflicts.WithLabelValues("copy")); got != 2 {
		t.Fatalf("conflicts counted: %v", got)
	}
	d, err := hist.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range d.Records[:2] {
		if rec.Outcome != pipeline.OutcomeSuperseded || rec.Error != "" || rec.Failed() {
			t.Fatalf("history of a superseded run: %+v", rec)
		}
	}
	if s := d.Summaries()["copy"]; s.Failures != 0 {
		t.Fatalf("failures %d", s.Failures)
	}
}

// TestDeltaFirstBuildCountsRows (issue 12, item 9): the first build of a
// delta transform migrates the Delta snapshot; its rows are the build's
// rows added, in the result, the log, the metrics and the history.
func TestDeltaFirstBuildCountsRows(t *testing.T) {
	e := newEnv(t)
	var rows [][2]int64
	for i := int64(1); i <= 100; i++ {
		rows = append(rows, [2]int64{i, i * 10})
	}
	src := newDeltaSource(t, time.Now().Add(-time.Hour), rows...)
	p := loadPipeline(t, `
transforms:
  - {name: lake, type: delta, path: `+src.w.Dir+`, destination: ns.lake, equality_columns: [id]}
`)
	var logs bytes.Buffer
	hist := pipeline.OpenHistory(p.StatusFile)
	r := &pipeline.Runner{Catalog: e.Cat, Logger: slog.New(slog.NewTextHandler(&logs, nil)), History: hist,
		Metrics: pipeline.NewMetrics(prometheus.NewRegistry())}
	outcomes, err := r.RunOnce(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := outcomes[0].Result.Outputs[0]
	if !out.Committed || out.RowsAdded != 100 || out.SnapshotID != e.head("lake") {
		t.Fatalf("first build's output: %+v (head %d)", out, e.head("lake"))
	}
	if got := testutil.ToFloat64(r.Metrics.RowsAdded.WithLabelValues("lake", "ns.lake")); got != 100 {
		t.Fatalf("floe_pipeline_rows_added_total %v", got)
	}
	if !strings.Contains(logs.String(), "rows_added=100") {
		t.Fatalf("log:\n%s", logs.String())
	}
	d, err := hist.Read()
	if err != nil || len(d.Records) != 1 || d.Records[0].RowsAdded != 100 || d.Records[0].BytesWritten == 0 {
		t.Fatalf("history %+v %v", d, err)
	}
	// A later build counts its batch only.
	src.add(time.Now(), [2]int64{101, 1}, [2]int64{102, 2})
	outcomes, err = r.RunOnce(e.Ctx, p, nil)
	if err != nil || outcomes[0].Result.Outputs[0].RowsAdded != 2 {
		t.Fatalf("second build: %+v %v", outcomes[0].Result, err)
	}
}

// TestStatusNotesAChangedDefinition: a pipeline file changed since a
// transform's last recorded run (here its filter) is noted in the
// status, and the history is kept.
func TestStatusNotesAChangedDefinition(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, 5}, []any{2, 500})
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	load := func(filter string) *pipeline.Pipeline {
		t.Helper()
		if err := os.WriteFile(path, []byte("transforms:\n  - {name: big, type: filter, source: ns.orders, destination: ns.big, filter: \""+filter+"\"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := pipeline.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Pipeline()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := load("amount > 100")
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), History: pipeline.OpenHistory(p.StatusFile)}
	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := r.Status(e.Ctx, p, nil); strings.Contains(st[0].Note, "definition changed") {
		t.Fatalf("unchanged: %q", st[0].Note)
	}
	p = load("amount > 1")
	st, err := r.Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(st[0].Note, "the transform's definition changed since its last recorded run") || st[0].Run == nil || st[0].Run.Runs != 1 {
		t.Fatalf("after changing the filter: %q %+v", st[0].Note, st[0].Run)
	}
}

// TestBytesAndRetriesMeasured: a run's bytes come from snapshot summaries
// (a full build reads the input's files, an incremental one the files its
// snapshots added; it writes the files it committed), and commit attempts
// beyond the first are counted as retries.
func TestBytesAndRetriesMeasured(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, 5}, []any{2, 500})
	p := loadPipeline(t, "transforms:\n  - {name: copy, type: filter, source: ns.orders, destination: ns.copy}\n")
	hist := pipeline.OpenHistory(p.StatusFile)
	reg := prometheus.NewRegistry()
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), History: hist, Metrics: pipeline.NewMetrics(reg)}
	summary := func(name, key string) int64 {
		t.Helper()
		n, err := strconv.ParseInt(e.Load(name).CurrentSnapshot().Summary.Properties[key], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	full := []int64{summary("orders", "total-files-size"), summary("copy", "added-files-size")}
	e.insert("orders", []any{3, 7})
	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	incr := []int64{summary("orders", "added-files-size"), summary("copy", "added-files-size")}
	d, err := hist.Read()
	if err != nil || len(d.Records) != 2 {
		t.Fatal(d, err)
	}
	for i, want := range [][]int64{full, incr} {
		if got := d.Records[i]; got.BytesRead != want[0] || got.BytesWritten != want[1] || want[0] == 0 || got.CommitAttempts != 1 {
			t.Fatalf("run %d: read %d written %d attempts %d, want %v from the summaries", i, got.BytesRead, got.BytesWritten, got.CommitAttempts, want)
		}
	}
	if got := testutil.ToFloat64(r.Metrics.BytesRead.WithLabelValues("copy")); got != float64(full[0]+incr[0]) {
		t.Fatalf("bytes read %v", got)
	}
	// Retries: an outcome whose commit took three attempts.
	m := pipeline.NewMetrics(prometheus.NewRegistry())
	m.Observe(p.Step("copy"), pipeline.Outcome{Step: "copy", Kind: pipeline.OutcomeIncremental, Result: &transform.Result{
		Outputs: []transform.OutputResult{{Table: "ns.copy", Committed: true, Attempts: 3}}}})
	if got := testutil.ToFloat64(m.CommitRetries.WithLabelValues("copy", "ns.copy")); got != 2 {
		t.Fatalf("retries %v", got)
	}
}
