package pipeline_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/pipeline"
)

// deltaSource is a Delta table whose commits a test stamps with known
// times: rows (id, amount) appended one commit at a time.
type deltaSource struct {
	t *testing.T
	w *deltatest.Writer
	n int
}

var deltaSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, nil)

// newDeltaSource commits version 0 at at with rows.
func newDeltaSource(t *testing.T, at time.Time, rows ...[2]int64) *deltaSource {
	t.Helper()
	w, err := deltatest.NewWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d := &deltaSource{t: t, w: w}
	md, err := deltatest.Metadata(deltaSchema, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		t.Fatal(err)
	}
	d.commit(at, []any{delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md}, rows...)
	return d
}

// add commits a version at at appending rows.
func (d *deltaSource) add(at time.Time, rows ...[2]int64) int64 {
	d.t.Helper()
	return d.commit(at, nil, rows...)
}

func (d *deltaSource) commit(at time.Time, actions []any, rows ...[2]int64) int64 {
	d.t.Helper()
	all := append([]any{deltatest.CommitInfo{Timestamp: at, Operation: "WRITE"}}, actions...)
	if len(rows) > 0 {
		b := array.NewRecordBuilder(memory.DefaultAllocator, deltaSchema)
		for _, r := range rows {
			b.Field(0).(*array.Int64Builder).Append(r[0])
			b.Field(1).(*array.Int64Builder).Append(r[1])
		}
		rec := b.NewRecordBatch()
		b.Release()
		d.n++
		add, err := d.w.WriteData(fmt.Sprintf("part-%05d.parquet", d.n), rec)
		rec.Release()
		if err != nil {
			d.t.Fatal(err)
		}
		all = append(all, add)
	}
	v, err := d.w.Commit(all...)
	if err != nil {
		d.t.Fatal(err)
	}
	return v
}

// clock is a settable time for Runner.Now.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func dur(d *time.Duration) string {
	if d == nil {
		return "unknown"
	}
	return d.String()
}

func wantLag(t *testing.T, what string, got *time.Duration, want time.Duration) {
	t.Helper()
	if got == nil || *got != want {
		t.Fatalf("%s: lag %s, want %s", what, dur(got), want)
	}
}

func wantTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Fatalf("%s: %s, want %s", what, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}

// snapshotTime is the commit time of ns.<name>'s current snapshot.
func (e *env) snapshotTime(name string) time.Time {
	e.t.Helper()
	s := e.Load(name).CurrentSnapshot()
	if s == nil {
		e.t.Fatalf("ns.%s has no snapshot", name)
	}
	return time.UnixMilli(s.TimestampMs).UTC()
}

// TestLagThroughChains measures lags on a chain delta -> sync -> filter
// whose source is a Delta table with known commit times: each output's own
// lag (against its direct input) and its end-to-end lag (against the
// Delta table, through the intermediate outputs' snapshot summaries and
// watermarks), with freshness levels, as transforms of the chain build
// one after the other, including a build that changes no rows.
func TestLagThroughChains(t *testing.T) {
	e := newEnv(t)
	start := time.Now().UTC().Truncate(time.Millisecond)
	t0 := start.Add(-3 * time.Hour)
	src := newDeltaSource(t, t0, [2]int64{1, 50}, [2]int64{2, 150})
	src.add(t0.Add(10*time.Minute), [2]int64{3, 300})
	p := loadPipeline(t, `
transforms:
  - {name: lake, type: delta, path: `+src.w.Dir+`, destination: ns.lake, equality_columns: [id]}
  - name: active
    type: sync
    source: ns.lake
    destination: ns.active
    key: [id]
    filter: "amount > 10"
    freshness: {warn_after: 1h, error_after: 3h}
  - name: big
    type: filter
    source: ns.active
    destination: ns.big
    filter: "amount > 100"
    freshness: {error_after: 2h}
`)
	c := &clock{now: start.Add(time.Hour)}
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), Now: c.Now}
	run := func(names ...string) {
		t.Helper()
		steps, err := p.Select(names...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunOnce(e.Ctx, p, steps); err != nil {
			t.Fatal(err)
		}
	}
	status := func() map[string]pipeline.OutputStatus {
		t.Helper()
		st, err := r.Status(e.Ctx, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]pipeline.OutputStatus{}
		for _, s := range st {
			out[s.Transform] = s
		}
		return out
	}
	run()
	st := status()
	lake := st["lake"].Inputs[0]
	wantTime(t, "lake's Delta head", lake.HeadAt, t0.Add(10*time.Minute))
	wantTime(t, "lake's watermark", lake.WatermarkAt, t0.Add(10*time.Minute))
	for _, name := range []string{"lake", "active", "big"} {
		wantLag(t, name+" after building all", st[name].EndToEndLag, 0)
		wantLag(t, name+" (own)", st[name].Lag, 0)
	}
	if st["active"].Freshness != pipeline.FreshOK || st["big"].Freshness != pipeline.FreshOK || st["lake"].Freshness != pipeline.FreshNone {
		t.Fatalf("freshness %q %q %q", st["lake"].Freshness, st["active"].Freshness, st["big"].Freshness)
	}
	if in := st["active"].Inputs[0]; in.Upstream != "lake" || in.Watermark != strconv.FormatInt(e.head("lake"), 10) {
		t.Fatalf("active's input %+v", in)
	}

	// Two Delta commits: the whole chain is 2h50m behind (since the first
	// of them), although active and big are up to date with their inputs.
	src.add(t0.Add(70*time.Minute), [2]int64{4, 400})
	src.add(t0.Add(80*time.Minute), [2]int64{5, 500})
	st = status()
	lake = st["lake"].Inputs[0]
	if lake.Behind == nil || *lake.Behind != 2 {
		t.Fatalf("lake behind %v", lake.Behind)
	}
	wantTime(t, "lake's pending since", lake.PendingSince, t0.Add(70*time.Minute))
	wantTime(t, "lake's head", lake.HeadAt, t0.Add(80*time.Minute))
	lag := c.now.Sub(t0.Add(70 * time.Minute)) // 2h50m
	wantLag(t, "lake", st["lake"].EndToEndLag, lag)
	for _, name := range []string{"active", "big"} {
		wantLag(t, name+" (own)", st[name].Lag, 0)
		wantLag(t, name+" end to end", st[name].EndToEndLag, lag)
		if st[name].Stalest != src.w.Dir {
			t.Fatalf("%s: stalest %q", name, st[name].Stalest)
		}
	}
	if st["active"].Freshness != pipeline.FreshWarn || st["big"].Freshness != pipeline.FreshError {
		t.Fatalf("freshness active %q big %q (lag %s)", st["active"].Freshness, st["big"].Freshness, lag)
	}

	// lake catches up: active is now behind its input (since lake's new
	// snapshot), and still behind the Delta table through it.
	run("lake")
	st = status()
	wantLag(t, "lake after its build", st["lake"].EndToEndLag, 0)
	wantLag(t, "active (own) after lake's build", st["active"].Lag, c.now.Sub(e.snapshotTime("lake")))
	wantLag(t, "active end to end after lake's build", st["active"].EndToEndLag, lag)
	wantLag(t, "big end to end after lake's build", st["big"].EndToEndLag, lag)

	// active catches up: big reflects an older snapshot of active, whose
	// summary names the older snapshot of lake, whose summary names Delta
	// version 1.
	run("active")
	st = status()
	wantLag(t, "active end to end after its build", st["active"].EndToEndLag, 0)
	wantLag(t, "big end to end after active's build", st["big"].EndToEndLag, lag)
	wantLag(t, "big (own)", st["big"].Lag, c.now.Sub(e.snapshotTime("active")))
	run("big")
	st = status()
	wantLag(t, "big end to end after its build", st["big"].EndToEndLag, 0)

	// A Delta commit that active's filter drops: active's build changes no
	// rows (it commits its watermarks without a snapshot), and big, up to
	// date with active's head, is up to date with the Delta table.
	src.add(t0.Add(100*time.Minute), [2]int64{6, 1})
	run("lake", "active")
	if e.head("active") != mustID(t, st["big"].Inputs[0].Watermark) {
		t.Fatal("active made a snapshot for a change its filter drops")
	}
	st = status()
	for _, name := range []string{"lake", "active", "big"} {
		wantLag(t, name+" after a change active drops", st[name].EndToEndLag, 0)
	}
	if n := st["big"].Note; n != "" {
		t.Fatalf("big's note %q", n)
	}
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLagClockSkew: writers whose clocks disagree. A later commit stamped
// earlier than the one before it counts from its own (earlier) time; a
// commit stamped after the status's time counts as lag 0, with a note.
func TestLagClockSkew(t *testing.T) {
	e := newEnv(t)
	start := time.Now().UTC().Truncate(time.Millisecond)
	t0 := start.Add(-2 * time.Hour)
	src := newDeltaSource(t, t0, [2]int64{1, 1})
	p := loadPipeline(t, `
transforms:
  - {name: lake, type: delta, path: `+src.w.Dir+`, destination: ns.lake, equality_columns: [id], freshness: {error_after: 1h}}
`)
	c := &clock{now: start.Add(time.Minute)}
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), Now: c.Now}
	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	src.add(t0.Add(30*time.Minute), [2]int64{2, 2})
	src.add(t0.Add(20*time.Minute), [2]int64{3, 3}) // a writer 10 minutes behind
	st, err := r.Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := st[0].Inputs[0]
	wantTime(t, "pending since (the earliest stamp)", in.PendingSince, t0.Add(20*time.Minute))
	wantLag(t, "skewed writers", st[0].Lag, c.now.Sub(t0.Add(20*time.Minute)))
	if st[0].Freshness != pipeline.FreshError {
		t.Fatalf("freshness %q", st[0].Freshness)
	}

	// A writer ahead of us: its commit is stamped in our future.
	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	src.add(c.now.Add(10*time.Minute), [2]int64{4, 4})
	st, _ = r.Status(e.Ctx, p, nil)
	wantLag(t, "a commit from the future", st[0].Lag, 0)
	if !strings.Contains(st[0].Note, "the writers' clocks disagree") || st[0].Freshness != pipeline.FreshOK {
		t.Fatalf("note %q freshness %q", st[0].Note, st[0].Freshness)
	}
	if b := st[0].Behind; b == nil || *b != 1 {
		t.Fatalf("behind %v", b)
	}
}

// TestLagEmptyAndExpired measures Iceberg inputs: an empty input (no lag,
// then lagging from its first commit), an output never built (behind since
// the input's first snapshot), and a watermark whose snapshot expired
// (its time read from the snapshot log or the output's summary; once it is
// no longer even the parent of a retained snapshot, the pending snapshots
// are judged by commit time).
func TestLagEmptyAndExpired(t *testing.T) {
	e := newEnv(t)
	e.create("empty", "id long not null, amount long", []string{"id"}, nil)
	e.create("orders", "id long not null, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, 10})
	p := loadPipeline(t, `
transforms:
  - {name: from_empty, type: sync, source: ns.empty, destination: ns.from_empty, key: [id]}
  - {name: copy, type: sync, source: ns.orders, destination: ns.copy, key: [id]}
`)
	c := &clock{now: time.Now().UTC().Add(time.Hour)}
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), Now: c.Now}
	status := func(name string) pipeline.OutputStatus {
		t.Helper()
		st, err := r.Status(e.Ctx, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		return statusOf(t, st, name)
	}
	// Never built: copy is behind since the first snapshot of orders.
	first := e.snapshotTime("orders")
	if s := status("copy"); s.Exists || s.Behind == nil || *s.Behind != 1 {
		t.Fatalf("copy before its first build: %+v", s)
	}
	wantLag(t, "copy before its first build", status("copy").Lag, c.now.Sub(first))
	wantLag(t, "from_empty before its first build", status("from_empty").Lag, 0)

	if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	fe := status("from_empty")
	if in := fe.Inputs[0]; in.Watermark != state.NoSnapshot || !in.HeadAt.IsZero() || in.Behind == nil || *in.Behind != 0 {
		t.Fatalf("an empty input: %+v", in)
	}
	wantLag(t, "an empty input", fe.Lag, 0)
	e.insert("empty", []any{1, 1})
	wantLag(t, "a first commit into the empty input", status("from_empty").Lag, c.now.Sub(e.snapshotTime("empty")))

	// Expiry: the watermark snapshot of copy expires while the snapshot
	// after it stays.
	wm := e.Load("orders").CurrentSnapshot()
	wmAt := time.UnixMilli(wm.TimestampMs).UTC()
	e.insert("orders", []any{2, 20})
	next := e.snapshotTime("orders")
	e.insert("orders", []any{3, 30})
	e.expire("orders", 2)
	if e.Load("orders").Metadata().SnapshotByID(wm.SnapshotID) != nil {
		t.Fatal("the watermark snapshot did not expire")
	}
	s := status("copy")
	if s.Behind == nil || *s.Behind != 2 || s.Note != "" {
		t.Fatalf("after expiring the watermark snapshot: %+v", s)
	}
	wantTime(t, "the expired watermark's time", s.Inputs[0].WatermarkAt, wmAt)
	wantLag(t, "after expiring the watermark snapshot", s.Lag, c.now.Sub(next))

	// Now the watermark is not even the parent of a retained snapshot.
	e.expire("orders", 1)
	s = status("copy")
	if s.Behind != nil || !strings.Contains(s.Note, "is no longer in the history") {
		t.Fatalf("after expiring past the watermark: %+v", s)
	}
	wantTime(t, "the watermark's time, from the output's summary", s.Inputs[0].WatermarkAt, wmAt)
	if s.Lag == nil || *s.Lag < c.now.Sub(e.snapshotTime("orders")) || *s.Lag > c.now.Sub(next) {
		t.Fatalf("lag judged by commit time %s: want between %s and %s", dur(s.Lag), c.now.Sub(e.snapshotTime("orders")), c.now.Sub(next))
	}
}

// expire keeps the last n snapshots of ns.<name>.
func (e *env) expire(name string, n int) {
	e.t.Helper()
	tx := e.Load(name).NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(n), table.WithOlderThan(0)); err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		e.t.Fatal(err)
	}
}
