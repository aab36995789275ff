package pipeline_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/pipeline"
)

const shopPipeline = `
transforms:
  - name: after_merge
    type: filter
    source: ns.merged
    destination: ns.after_merge
  - name: big
    type: filter
    source: ns.active
    destination: ns.big
    filter: "amount > 100"
  - name: active
    type: sync
    source: ns.orders
    destination: ns.active
    key: [id]
    filter: "status = 'active'"
    columns: [id, amount]
  - name: merged
    type: merge
    source: ns.orders
    destination: ns.merged
    key: [id]
    statement: >
      MERGE INTO {destination} AS t USING {changes} AS s ON t.id = s.id
      WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
      WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *
`

func loadPipeline(t *testing.T, src string) *pipeline.Pipeline {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
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

func kinds(os []pipeline.Outcome) string {
	var out []string
	for _, o := range os {
		out = append(out, o.Step+"="+o.Kind)
	}
	return strings.Join(out, " ")
}

func statusOf(t *testing.T, st []pipeline.OutputStatus, name string) pipeline.OutputStatus {
	t.Helper()
	for _, s := range st {
		if s.Transform == name {
			return s
		}
	}
	t.Fatalf("no status for %s", name)
	return pipeline.OutputStatus{}
}

func TestRunOnceOrderFailuresStatus(t *testing.T) {
	// This test checks how a step that cannot run fails: merged's key is
	// not a column of its source, so reading its changelog fails before
	// anything is created or committed.
	e := newEnv(t)
	e.create("orders", "id long not null, status string, amount long", []string{"id"},
		iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
	e.insert("orders", []any{1, "active", 50}, []any{2, "active", 150}, []any{3, "closed", 500}, []any{4, "active", 300})
	p := loadPipeline(t, strings.Replace(shopPipeline, "destination: ns.merged\n    key: [id]", "destination: ns.merged\n    key: [nosuch]", 1))
	hist := pipeline.OpenHistory(p.StatusFile)
	reg := prometheus.NewRegistry()
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), History: hist, Metrics: pipeline.NewMetrics(reg)}

	outcomes, err := r.RunOnce(e.Ctx, p, nil)
	if !errors.Is(err, pipeline.ErrRunFailed) || !strings.Contains(err.Error(), "2 of 4 transforms failed or were not run: merged, after_merge") {
		t.Fatalf("RunOnce error %v", err)
	}
	// Dependency order; merged fails (no column nosuch), after_merge is not run.
	if got := kinds(outcomes); got != "active=full big=full merged=error after_merge=blocked" {
		t.Fatalf("outcomes %s", got)
	}
	if err := outcomes[2].Err; err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("merged: %v", err)
	}
	if !errors.Is(outcomes[3].Err, pipeline.ErrUpstreamFailed) {
		t.Fatalf("after_merge: %v", outcomes[3].Err)
	}
	if got := render(e.rowsOf("active")); got != "(1,50) (2,150) (4,300)" {
		t.Fatalf("active %s", got)
	}
	if got := render(e.rowsOf("big")); got != "(2,150) (4,300)" {
		t.Fatalf("big %s", got)
	}

	st, err := r.Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := statusOf(t, st, "active")
	head := strconv.FormatInt(e.head("orders"), 10)
	if !a.Exists || a.Behind == nil || *a.Behind != 0 || len(a.Inputs) != 1 || a.Inputs[0].Watermark != head ||
		a.BuiltBy != "active" || a.SnapshotID != e.head("active") || a.Run == nil || a.Run.LastOutcome != "full" || a.Note != "" {
		t.Fatalf("status of active: %+v", a)
	}
	m := statusOf(t, st, "merged")
	if m.Exists || m.Note != "missing: the next build creates it" || m.Run == nil || m.Run.LastOutcome != "error" ||
		!strings.Contains(m.Run.LastError, "nosuch") || m.Run.LastErrorAt.IsZero() {
		t.Fatalf("status of merged: %+v %+v", m, m.Run)
	}
	if am := statusOf(t, st, "after_merge"); am.Run == nil || am.Run.LastOutcome != "blocked" || !strings.Contains(am.Run.LastError, "merged") {
		t.Fatalf("status of after_merge: %+v", am)
	}

	// Two source changes: active is 2 snapshots behind, big 0 (its input did not move).
	e.update("orders", func(r []any) []any { r[1] = "closed"; return r }, 4)
	e.insert("orders", []any{5, "active", 700})
	st, _ = r.Status(e.Ctx, p, []*pipeline.Step{p.Step("active"), p.Step("big")})
	if a := statusOf(t, st, "active"); a.Behind == nil || *a.Behind != 2 || a.Inputs[0].Head != strconv.FormatInt(e.head("orders"), 10) {
		t.Fatalf("active after 2 commits: %+v", a)
	}
	if b := statusOf(t, st, "big"); b.Behind == nil || *b.Behind != 0 {
		t.Fatalf("big: %+v", b)
	}

	// Only the named steps run; active is incremental, and big (append-only)
	// rebuilds because active had a delete.
	outcomes, err = r.RunOnce(e.Ctx, p, []*pipeline.Step{p.Step("active"), p.Step("big")})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(outcomes); got != "active=incremental big=full" {
		t.Fatalf("outcomes %s", got)
	}
	if !strings.Contains(outcomes[1].Result.Reason, "append-only transforms rebuild on overwrites and deletes") {
		t.Fatalf("big: %s", outcomes[1].Result.Reason)
	}
	if got := render(e.rowsOf("big")); got != "(2,150) (5,700)" {
		t.Fatalf("big %s", got)
	}
	outcomes, _ = r.RunOnce(e.Ctx, p, []*pipeline.Step{p.Step("active"), p.Step("big")})
	if got := kinds(outcomes); got != "active=skipped big=skipped" {
		t.Fatalf("outcomes %s", got)
	}

	// Metrics saw every run.
	for _, c := range []struct {
		transform, outcome string
		want               float64
	}{{"active", "full", 1}, {"active", "incremental", 1}, {"active", "skipped", 1}, {"big", "full", 2},
		{"merged", "error", 1}, {"after_merge", "blocked", 1}} {
		if got := testutil.ToFloat64(r.Metrics.Builds.WithLabelValues(c.transform, c.outcome)); got != c.want {
			t.Errorf("builds{%s,%s} = %v, want %v", c.transform, c.outcome, got, c.want)
		}
	}
	if got := testutil.ToFloat64(r.Metrics.RowsAdded.WithLabelValues("active", "ns.active")); got != 3+1 {
		t.Errorf("rows added to ns.active: %v", got)
	}
	if got := testutil.ToFloat64(r.Metrics.RowsRemoved.WithLabelValues("active", "ns.active")); got != 1 {
		t.Errorf("rows removed from ns.active: %v", got)
	}
	if got := testutil.ToFloat64(r.Metrics.SnapshotsBehind.WithLabelValues("active", "source")); got != 0 {
		t.Errorf("active behind: %v", got)
	}
	if n := testutil.CollectAndCount(r.Metrics.BuildDuration); n != 3 {
		t.Errorf("duration histograms for %d transforms, want 3 (blocked runs are not timed)", n)
	}
	if testutil.ToFloat64(r.Metrics.LastSuccess.WithLabelValues("big")) == 0 {
		t.Error("no last success time for big")
	}
	recs, err := hist.Load()
	if err != nil {
		t.Fatal(err)
	}
	if r := recs["active"]; r.Runs != 3 || r.Failures != 0 || r.LastOutcome != "skipped" || r.LastSuccess.IsZero() {
		t.Fatalf("history of active: %+v", r)
	}
}

func TestStatusNotesRebuilds(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, status string, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, "active", 50})
	first := e.head("orders")
	e.insert("orders", []any{2, "active", 60})
	p := loadPipeline(t, `
transforms:
  - {name: active, type: sync, source: ns.orders, destination: ns.active, key: [id], filter: "status = 'active'"}
`)
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	e.rollback("orders", first)
	st, err := r.Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := st[0]; a.Behind != nil || !strings.Contains(a.Note, "is no longer in the history of ns.orders (rolled back or expired): the next build is a full rebuild") {
		t.Fatalf("after a rollback: %+v", a)
	}
	// Another semantic version (here: another filter) is noted too.
	p2 := loadPipeline(t, `
transforms:
  - {name: active, type: sync, source: ns.orders, destination: ns.active, key: [id], filter: "amount > 0"}
`)
	st, _ = r.Status(e.Ctx, p2, nil)
	if !strings.Contains(st[0].Note, "the semantic version or options changed") {
		t.Fatalf("note %q", st[0].Note)
	}
	outcomes, err := r.RunOnce(e.Ctx, p2, nil)
	if err != nil || outcomes[0].Kind != pipeline.OutcomeFull || !strings.Contains(outcomes[0].Result.Reason, "semantic version changed") {
		t.Fatalf("%+v %v", outcomes, err)
	}
	if got := render(e.rowsOf("active")); got != "(1,'active',50)" {
		t.Fatalf("rows %s", got)
	}
}

// TestMergeStep runs a merge step's MERGE INTO through package merge: the
// statement with its placeholders replaced, the watermarks in the same
// commit, a full build first and incremental ones after.
func TestMergeStep(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, status string, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, "active", 50}, []any{2, "active", 150})
	p := loadPipeline(t, shopPipeline)
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	steps := []*pipeline.Step{p.Step("merged"), p.Step("after_merge")}
	outcomes, err := r.RunOnce(e.Ctx, p, steps)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(outcomes); got != "merged=full after_merge=full" {
		t.Fatalf("outcomes %s", got)
	}
	// One commit carries the rows, the watermark and the build's summary.
	merged := e.Load("merged")
	if merged.Properties()[state.PropWatermark] != strconv.FormatInt(e.head("orders"), 10) ||
		merged.CurrentSnapshot().Summary.Properties["floe.transform.name"] != "merged" {
		t.Fatalf("merged: properties %v, summary %v", merged.Properties(), merged.CurrentSnapshot().Summary)
	}
	if o := outcomes[0].Result.Outputs[0]; o.Operation != "merge" || !o.Committed || o.RowsAdded != 2 || o.SnapshotID != e.head("merged") {
		t.Fatalf("merged output %+v", o)
	}
	if got := render(e.rowsOf("merged")); got != "(1,'active',50) (2,'active',150)" {
		t.Fatalf("merged %s", got)
	}
	// The destination was created with the source's columns and key.
	if ids := e.Load("merged").Schema().IdentifierFieldIDs; len(ids) != 1 {
		t.Fatalf("identifier fields %v", ids)
	}
	e.del("orders", 1)
	e.update("orders", func(r []any) []any { r[2] = int64(99); return r }, 2)
	outcomes, err = r.RunOnce(e.Ctx, p, steps)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(outcomes); got != "merged=incremental after_merge=full" {
		t.Fatalf("outcomes %s", got)
	}
	// The incremental build applied the two changes (a delete, an update).
	if o := outcomes[0].Result.Outputs[0]; o.RowsRemoved == 0 || o.RowsAdded != 1 {
		t.Fatalf("incremental merged output %+v", o)
	}
	if got := render(e.rowsOf("merged")); got != "(2,'active',99)" {
		t.Fatalf("merged %s", got)
	}
	if got := e.Load("merged").Properties()[state.PropWatermark]; got != strconv.FormatInt(e.head("orders"), 10) {
		t.Fatalf("watermark %s", got)
	}
	if got := render(e.rowsOf("after_merge")); got != "(2,'active',99)" {
		t.Fatalf("after_merge %s", got)
	}
}

// TestDeltaStep runs a delta step through package deltasync: the first run
// migrates the Delta table, status reads the watermark it committed, and a
// full rebuild is refused.
func TestDeltaStep(t *testing.T) {
	e := newEnv(t)
	table := testdir.Shared(t, "delta", "deltars-cdf-table") // versions 0..3
	p := loadPipeline(t, `
transforms:
  - {name: lake, type: delta, path: `+table+`, destination: ns.lake, equality_columns: [id]}
`)
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	outcomes, err := r.RunOnce(e.Ctx, p, nil)
	if err != nil || outcomes[0].Kind != pipeline.OutcomeFull {
		t.Fatalf("%+v %v", outcomes, err)
	}
	res := outcomes[0].Result
	if !strings.Contains(res.Reason, "first run: migrated the Delta snapshot at version 3") ||
		res.Inputs[0].Table != table || res.Inputs[0].End != "3" || res.Outputs[0].Table != "ns.lake" || res.Outputs[0].RowsAdded == 0 {
		t.Fatalf("result %+v", res)
	}
	if got := e.Load("lake").Properties()[deltasync.PropSourceVersion]; got != "3" {
		t.Fatalf("watermark %q", got)
	}
	st, err := r.Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := st[0]; !s.Exists || s.Behind == nil || *s.Behind != 0 || s.Inputs[0].Head != "3" || s.Inputs[0].Watermark != "3" {
		t.Fatalf("delta status %+v", s)
	}
	outcomes, _ = r.RunOnce(e.Ctx, p, nil)
	if outcomes[0].Kind != pipeline.OutcomeSkipped {
		t.Fatalf("second run %+v", outcomes[0])
	}
	r.Full = true
	if outcomes, _ = r.RunOnce(e.Ctx, p, nil); outcomes[0].Err == nil || !strings.Contains(outcomes[0].Err.Error(), "a full rebuild is not supported") {
		t.Fatalf("full rebuild %+v", outcomes[0])
	}
}
