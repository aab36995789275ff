package pipeline_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/state"
	"github.com/floedata/floe/transform"
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
	// This test checks how a step that cannot run fails: unwire MERGE INTO.
	saved := pipeline.MergeFunc
	pipeline.MergeFunc = nil
	defer func() { pipeline.MergeFunc = saved }()
	e := newEnv(t)
	e.create("orders", "id long not null, status string, amount long", []string{"id"},
		iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"})
	e.insert("orders", []any{1, "active", 50}, []any{2, "active", 150}, []any{3, "closed", 500}, []any{4, "active", 300})
	p := loadPipeline(t, shopPipeline)
	hist := pipeline.OpenHistory(p.StatusFile)
	reg := prometheus.NewRegistry()
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), History: hist, Metrics: pipeline.NewMetrics(reg)}

	outcomes, err := r.RunOnce(e.Ctx, p, nil)
	if !errors.Is(err, pipeline.ErrRunFailed) || !strings.Contains(err.Error(), "2 of 4 transforms failed or were not run: merged, after_merge") {
		t.Fatalf("RunOnce error %v", err)
	}
	// Dependency order; merged fails (MERGE INTO is not wired), after_merge is not run.
	if got := kinds(outcomes); got != "active=full big=full merged=error after_merge=blocked" {
		t.Fatalf("outcomes %s", got)
	}
	if !errors.Is(outcomes[2].Err, pipeline.ErrNotAvailable) || !strings.Contains(outcomes[2].Err.Error(), "not available in this build") {
		t.Fatalf("merged: %v", outcomes[2].Err)
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
		!strings.Contains(m.Run.LastError, "not available in this build") || m.Run.LastErrorAt.IsZero() {
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

// fakeMerge is a MergeFunc that runs apply_changelog instead of the
// statement (enough to check the plumbing: the request, the watermarks,
// the compare-and-swap), recording the requests.
type fakeMerge struct {
	requests []pipeline.MergeRequest
	rows     []int64
}

func (f *fakeMerge) run(ctx context.Context, req pipeline.MergeRequest) (transform.CommitResult, error) {
	f.requests = append(f.requests, req)
	c := req.Commit
	if c.Replace {
		tbl, err := c.Catalog.Load(ctx, c.Table)
		if err != nil {
			return transform.CommitResult{}, err
		}
		if tbl.CurrentSnapshot() != nil {
			return transform.CommitResult{}, errors.New("fakeMerge cannot replace a table with rows")
		}
	}
	var n int64
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for req.Changes.Next() {
			rec := req.Changes.RecordBatch()
			n += rec.NumRows()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := req.Changes.Err(); err != nil {
			yield(nil, err)
		}
	}
	res, err := merge.Apply(ctx, c.Catalog, c.Table, req.Changes.Schema(), seq, []string{"id"},
		merge.WithCommitProperties(c.SetProperties), merge.WithExpectedProperties(c.Expect),
		merge.WithCommitEmpty(), merge.WithSnapshotProperties(c.SnapshotProperties))
	f.rows = append(f.rows, n)
	if err != nil {
		return transform.CommitResult{}, err
	}
	return transform.CommitResult{Committed: res.Committed, SnapshotID: res.SnapshotID, RowsAdded: res.RowsAdded, RowsRemoved: res.RowsRemoved}, nil
}

func TestMergeThroughMergeFunc(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, status string, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, "active", 50}, []any{2, "active", 150})
	p := loadPipeline(t, shopPipeline)
	f := &fakeMerge{}
	saved := pipeline.MergeFunc
	pipeline.MergeFunc = f.run
	defer func() { pipeline.MergeFunc = saved }()
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	steps := []*pipeline.Step{p.Step("merged"), p.Step("after_merge")}
	outcomes, err := r.RunOnce(e.Ctx, p, steps)
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(outcomes); got != "merged=full after_merge=full" {
		t.Fatalf("outcomes %s", got)
	}
	req := f.requests[0]
	if want := "MERGE INTO ns.merged AS t USING changes AS s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *\n"; req.Statement != want {
		t.Fatalf("statement %q", req.Statement)
	}
	if !req.Commit.Replace || req.Commit.SetProperties[state.PropWatermark] != strconv.FormatInt(e.head("orders"), 10) ||
		req.Commit.SnapshotProperties["floe.transform.name"] != "merged" {
		t.Fatalf("commit request %+v", req.Commit)
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
	if f.requests[1].Commit.Replace || f.rows[1] != 2 {
		t.Fatalf("incremental request: replace %v, %d change rows", f.requests[1].Commit.Replace, f.rows[1])
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

// fakeDelta is a DeltaSyncer recording its requests.
type fakeDelta struct {
	requests []pipeline.DeltaSyncRequest
}

func (f *fakeDelta) Sync(_ context.Context, req pipeline.DeltaSyncRequest) (*transform.Result, error) {
	f.requests = append(f.requests, req)
	return &transform.Result{Transform: req.Spec.Name, Incremental: true,
		Inputs: []transform.InputRange{{Name: "delta", Table: req.Spec.Path, Start: "1", End: "4", Snapshots: 3}}}, nil
}

func (f *fakeDelta) Watermark(props iceberg.Properties) (int64, bool) {
	v, err := strconv.ParseInt(props["test.delta-version"], 10, 64)
	return v, err == nil
}

func TestDeltaThroughDeltaSync(t *testing.T) {
	e := newEnv(t)
	table := testdir.Shared(t, "delta", "deltars-cdf-table-non-partitioned") // versions 0..4
	p := loadPipeline(t, `
transforms:
  - {name: lake, type: delta, path: `+table+`, destination: ns.lake, equality_columns: [id]}
`)
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	saved := pipeline.DeltaSync
	defer func() { pipeline.DeltaSync = saved }()
	pipeline.DeltaSync = nil
	outcomes, err := r.RunOnce(e.Ctx, p, nil)
	if !errors.Is(err, pipeline.ErrRunFailed) || !errors.Is(outcomes[0].Err, pipeline.ErrNotAvailable) {
		t.Fatalf("delta without DeltaSync: %v / %v", err, outcomes[0].Err)
	}
	f := &fakeDelta{}
	pipeline.DeltaSync = f
	r.Full = true
	outcomes, err = r.RunOnce(e.Ctx, p, nil)
	if err != nil || outcomes[0].Kind != pipeline.OutcomeIncremental {
		t.Fatalf("%+v %v", outcomes, err)
	}
	if req := f.requests[0]; req.Spec.Path != table || req.Spec.Dst != "ns.lake" || req.Spec.EqualityColumns[0] != "id" || !req.Full || req.Catalog != e.Cat {
		t.Fatalf("request %+v", req)
	}
	// Status: the lag comes from the syncer's watermark and the Delta log.
	e.create("lake", "id long not null", []string{"id"}, iceberg.Properties{"test.delta-version": "1"})
	st, err := r.Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := st[0]; !s.Exists || s.Behind == nil || *s.Behind != 3 || s.Inputs[0].Head != "4" || s.Inputs[0].Watermark != "1" {
		t.Fatalf("delta status %+v", s)
	}
}
