//go:build cgo

package duckdb_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/sqltx"
)

// deltaSrc writes a small Delta table the way a copy-on-write writer
// does: an insert adds a file; a delete or update removes every file that
// holds a touched row and adds it rewritten (so the Change Data Feed,
// read from the add and remove actions, repeats the untouched rows as
// deleted and inserted: carry-overs), optionally with change data files
// (cdc actions) as Spark writes them with the feed enabled.
type deltaSrc struct {
	t     *testing.T
	w     *deltatest.Writer
	sch   *arrow.Schema
	files map[string][][]any // the live files' rows, by add path
	order []string
	n     int
	clock time.Time
}

func newDeltaSrc(t *testing.T, sch *arrow.Schema, cdf bool) *deltaSrc {
	t.Helper()
	w, err := deltatest.NewWriter(filepath.Join(t.TempDir(), "dim table"))
	if err != nil {
		t.Fatal(err)
	}
	d := &deltaSrc{t: t, w: w, sch: sch, files: map[string][][]any{}, clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	md, err := deltatest.Metadata(sch, nil, map[string]string{"delta.enableChangeDataFeed": strconv.FormatBool(cdf)})
	if err != nil {
		t.Fatal(err)
	}
	d.commit("CREATE TABLE", delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md)
	return d
}

// ref is the table as a query names it.
func (d *deltaSrc) ref() string { return `delta."` + d.w.Dir + `"` }

func (d *deltaSrc) commit(op string, actions ...any) {
	d.t.Helper()
	d.clock = d.clock.Add(time.Minute)
	if _, err := d.w.Commit(append([]any{deltatest.CommitInfo{Timestamp: d.clock, Operation: op}}, actions...)...); err != nil {
		d.t.Fatal(err)
	}
}

func (d *deltaSrc) write(sch *arrow.Schema, rows [][]any, cdc bool) any {
	d.t.Helper()
	rec, err := tabletest.Record(sch, rows)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rec.Release()
	d.n++
	if cdc {
		a, err := d.w.WriteChangeData(fmt.Sprintf("_change_data/cdc-%05d.parquet", d.n), rec)
		if err != nil {
			d.t.Fatal(err)
		}
		return a
	}
	a, err := d.w.WriteData(fmt.Sprintf("part-%05d.parquet", d.n), rec)
	if err != nil {
		d.t.Fatal(err)
	}
	d.files[a.Path] = rows
	d.order = append(d.order, a.Path)
	return a
}

func (d *deltaSrc) insert(rows ...[]any) {
	d.t.Helper()
	d.commit("WRITE", d.write(d.sch, rows, false))
}

// change rewrites the files holding a row whose first column is in ids:
// set gives the new row (nil deletes it). With cdc the commit carries
// change data files with the delete, update_preimage and
// update_postimage rows.
func (d *deltaSrc) change(ids []int64, set func([]any) []any, cdc bool) {
	d.t.Helper()
	touch := map[int64]bool{}
	for _, id := range ids {
		touch[id] = true
	}
	var actions []any
	var changes [][]any
	var order []string
	for _, p := range d.order {
		rows := d.files[p]
		var kept [][]any
		hit := false
		for _, r := range rows {
			if !touch[r[0].(int64)] {
				kept = append(kept, r)
				continue
			}
			hit = true
			var nr []any
			if set != nil {
				nr = set(r)
			}
			if nr == nil {
				changes = append(changes, append(append([]any{}, r...), "delete"))
				continue
			}
			changes = append(changes, append(append([]any{}, r...), "update_preimage"), append(append([]any{}, nr...), "update_postimage"))
			kept = append(kept, nr)
		}
		if !hit {
			order = append(order, p)
			continue
		}
		ms := d.clock.UnixMilli()
		actions = append(actions, delta.RemoveFile{Path: p, DataChange: true, DeletionTimestamp: &ms})
		delete(d.files, p)
		if len(kept) > 0 {
			a := d.write(d.sch, kept, false)
			actions = append(actions, a)
			order = append(order, a.(delta.AddFile).Path)
		}
	}
	d.order = order
	if len(actions) == 0 {
		return
	}
	if cdc {
		fields := append(append([]arrow.Field{}, d.sch.Fields()...), arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String})
		actions = append(actions, d.write(arrow.NewSchema(fields, nil), changes, true))
	}
	op := "UPDATE"
	if set == nil {
		op = "DELETE"
	}
	d.commit(op, actions...)
}

// ids are the first column's values of the live rows.
func (d *deltaSrc) ids() []int64 {
	var out []int64
	for _, p := range d.order {
		for _, r := range d.files[p] {
			out = append(out, r[0].(int64))
		}
	}
	return out
}

// setCDF commits a metaData action turning the Change Data Feed on or off.
func (d *deltaSrc) setCDF(on bool) {
	d.t.Helper()
	md, err := deltatest.Metadata(d.sch, nil, map[string]string{"delta.enableChangeDataFeed": strconv.FormatBool(on)})
	if err != nil {
		d.t.Fatal(err)
	}
	d.commit("SET TBLPROPERTIES", md)
}

var deltaDimSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// queryRows runs query once over the tables' current state with
// sqltx.Query (the path of floe query): the expected destination.
func (e *env) queryRows(query string) string {
	e.t.Helper()
	_, seq, done, err := sqltx.Query(e.Ctx, e.Cat, query)
	if err != nil {
		e.t.Fatal(err)
	}
	defer done()
	return render(collect(e.t, seq))
}

// checkDelta builds tr after each step and checks the destination
// against the query over the current state, that builds after the first
// are incremental by rule (or skipped), and that the output's snapshot
// summary records the Delta version read.
func checkDelta(t *testing.T, e *env, spec sqltx.Spec, rule string, src *deltaSrc, steps ...func() string) {
	t.Helper()
	tr, _, err := sqltx.New(e.Ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	input := transform.DeltaTablePrefix + src.w.Dir
	for i := -1; i < len(steps); i++ {
		what := "first build"
		if i >= 0 {
			what = steps[i]()
		}
		res, err := e.build(tr)
		if err != nil {
			t.Fatalf("step %d (%s): %v", i, what, err)
		}
		if i >= 0 && !res.Skipped && !res.Incremental {
			t.Fatalf("step %d (%s): full build: %s", i, what, res.Reason)
		}
		// A build that changes no rows commits its watermarks without a
		// snapshot.
		sum := e.summary("out")
		if got := sum[sqltx.SummaryRule]; sum != nil && got != rule {
			t.Fatalf("step %d (%s): rule %q, want %q", i, what, got, rule)
		}
		if got, want := sum[transform.SourceSummaryKey(input, transform.SummarySourceSnapshotID)], strconv.FormatInt(src.w.Version(), 10); !res.Skipped && res.Outputs[0].SnapshotID != 0 && got != want {
			t.Fatalf("step %d (%s): the summary records Delta version %q, want %s (%v)", i, what, got, want, sum)
		}
		if got, want := e.rowsOf("out"), e.queryRows(spec.Query); got != want {
			t.Fatalf("step %d (%s):\ngot  %s\nwant %s", i, what, got, want)
		}
	}
	res, err := e.build(tr)
	if err != nil || !res.Skipped {
		t.Fatalf("a build with nothing new: skipped %v, err %v", res != nil && res.Skipped, err)
	}
}

// deltaHistory applies random inserts, deletes and updates (with and
// without change data files) to a Delta table of deltaDimSchema.
type deltaHistory struct {
	d    *deltaSrc
	rng  *rand.Rand
	next int64
}

var regions = []any{"eu", "us", "apac"}

func (h *deltaHistory) row(id int64) []any {
	var name any = fmt.Sprintf("n%d", h.rng.IntN(5))
	if h.rng.IntN(6) == 0 {
		name = nil
	}
	return []any{id, name, regions[h.rng.IntN(len(regions))]}
}

func (h *deltaHistory) pick(n int) []int64 {
	var out []int64
	for _, id := range h.d.ids() {
		if len(out) < n && h.rng.IntN(2) == 0 {
			out = append(out, id)
		}
	}
	return out
}

func (h *deltaHistory) step() string {
	cdc := h.rng.IntN(2) == 0
	switch k := h.rng.IntN(4); {
	case k == 0 || len(h.d.ids()) < 3:
		var rows [][]any
		for range 1 + h.rng.IntN(3) {
			h.next++
			rows = append(rows, h.row(h.next))
		}
		h.d.insert(rows...)
		return fmt.Sprintf("insert %d", len(rows))
	case k == 1:
		ids := h.pick(2)
		h.d.change(ids, nil, cdc)
		return fmt.Sprintf("delete %v (cdc %v)", ids, cdc)
	default:
		ids := h.pick(3)
		h.d.change(ids, func(r []any) []any { return h.row(r[0].(int64)) }, cdc)
		return fmt.Sprintf("update %v (cdc %v)", ids, cdc)
	}
}

func newDeltaHistory(t *testing.T, seed uint64) *deltaHistory {
	h := &deltaHistory{d: newDeltaSrc(t, deltaDimSchema, true), rng: rand.New(rand.NewPCG(seed, 7))}
	for range 2 {
		h.step()
	}
	return h
}

func (h *deltaHistory) steps(n int) []func() string {
	out := make([]func() string, n)
	for i := range out {
		out[i] = h.step
	}
	return out
}

func TestDeltaRowLocal(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t)
			h := newDeltaHistory(t, seed)
			q := "SELECT id, upper(name) AS name, region = 'eu' AS eu FROM " + h.d.ref() + " d WHERE region <> 'apac'"
			checkDelta(t, e, sqltx.Spec{Name: "rl", Query: q, Dst: "ns.out", Keys: []string{"id"}}, sqltx.RuleRowLocal, h.d, h.steps(12)...)
		})
	}
}

func TestDeltaGroupBy(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t)
			h := newDeltaHistory(t, seed)
			q := "SELECT region, count(*) AS n, count(name) AS named, max(id) AS top FROM " + h.d.ref() + " GROUP BY region HAVING count(*) > 1"
			checkDelta(t, e, sqltx.Spec{Name: "gb", Query: q, Dst: "ns.out", Keys: []string{"region"}}, sqltx.RuleGroupBy, h.d, h.steps(12)...)
		})
	}
}

// TestDeltaJoin joins an Iceberg fact table with a Delta dimension (LEFT
// JOIN: a dimension row deleted or inserted NULL-extends or matches fact
// rows), and a Delta fact with an Iceberg dimension (inner), changing
// either side or both between builds.
func TestDeltaJoin(t *testing.T) {
	for _, c := range []struct {
		name     string
		query    string
		deltaDim bool
	}{
		{"iceberg fact with delta dim", "SELECT f.id, f.amount, d.name, d.region FROM ns.fact f LEFT JOIN %s d ON f.dim_id = d.id WHERE f.amount > 1", true},
		{"delta fact with iceberg dim", "SELECT f.id, f.name AS fact_name, d.name, d.region FROM %s f JOIN ns.dim d ON f.region = d.region", false},
	} {
		for seed := range uint64(2) {
			t.Run(fmt.Sprintf("%s/%d", c.name, seed), func(t *testing.T) {
				e := newEnv(t)
				h := newDeltaHistory(t, seed)
				rng := rand.New(rand.NewPCG(seed, 11))
				var iceberg func() string
				if c.deltaDim {
					e.create("fact", factSchema, []string{"id"}, nil)
					e.insert("fact", []any{int64(90), int64(1), int64(5)}, []any{int64(91), int64(2), int64(7)}, []any{int64(92), nil, int64(3)})
					next := int64(100)
					iceberg = func() string {
						switch rng.IntN(3) {
						case 0:
							next++
							e.insert("fact", []any{next, int64(1 + rng.IntN(8)), int64(rng.IntN(10))})
							return "fact insert"
						case 1:
							e.update("fact", func(r []any) []any { return []any{r[0], int64(1 + rng.IntN(8)), r[2]} }, next, next-1)
							return "fact update"
						default:
							e.del("fact", next-2)
							return "fact delete"
						}
					}
					for range 4 {
						iceberg()
					}
				} else {
					e.create("dim", "id long not null, name string, region string", []string{"id"}, nil)
					e.insert("dim", []any{int64(1), "Europe", "eu"}, []any{int64(2), "Americas", "us"})
					iceberg = func() string {
						switch rng.IntN(2) {
						case 0:
							e.update("dim", func(r []any) []any { return []any{r[0], fmt.Sprintf("name%d", rng.IntN(9)), r[2]} }, 1, 2)
							return "dim update"
						default:
							id := int64(3)
							e.del("dim", id)
							if rng.IntN(2) == 0 {
								e.insert("dim", []any{id, "Asia", "apac"})
							}
							return "dim apac"
						}
					}
				}
				steps := make([]func() string, 12)
				for i := range steps {
					switch i % 3 {
					case 0:
						steps[i] = h.step
					case 1:
						steps[i] = iceberg
					default:
						steps[i] = func() string { return h.step() + ", " + iceberg() }
					}
				}
				q := fmt.Sprintf(c.query, h.d.ref())
				checkDelta(t, e, sqltx.Spec{Name: "j", Query: q, Dst: "ns.out", Keys: []string{"id"}}, sqltx.RuleJoin, h.d, steps...)
			})
		}
	}
}

// TestDeltaAppend: without a key a row-local query appends the rows a
// Delta range inserted; a range that deletes or updates rebuilds, with
// the reason in the summary.
func TestDeltaAppend(t *testing.T) {
	e := newEnv(t)
	d := newDeltaSrc(t, deltaDimSchema, true)
	d.insert([]any{int64(1), "a", "eu"}, []any{int64(2), "b", "us"})
	q := "SELECT id, name FROM " + d.ref() + " WHERE region = 'eu'"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "app", Query: q, Dst: "ns.out"})
	if err != nil {
		t.Fatal(err)
	}
	build := func(incremental bool) *transform.Result {
		t.Helper()
		res, err := e.build(tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incremental != incremental {
			t.Fatalf("incremental %v (%s), want %v", res.Incremental, res.Reason, incremental)
		}
		if got, want := e.rowsOf("out"), e.queryRows(q); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
		return res
	}
	build(false)
	d.insert([]any{int64(3), "c", "eu"})
	d.insert([]any{int64(4), "d", "eu"}, []any{int64(5), "e", "us"})
	if res := build(true); res.Outputs[0].RowsAdded != 2 {
		t.Fatalf("appended %d rows, want 2", res.Outputs[0].RowsAdded)
	}
	d.change([]int64{3}, nil, false)
	res := build(false)
	if !strings.Contains(res.Reason, "deleted or updated rows from version 4 to 4") {
		t.Fatalf("reason %q", res.Reason)
	}
	if got := e.summary("out")[sqltx.SummaryRebuildReason]; !strings.Contains(got, "deleted or updated rows") {
		t.Fatalf("rebuild reason in the summary: %q", got)
	}
	d.insert([]any{int64(6), "f", "eu"})
	build(true)
}

// TestDeltaNoChangeDataFeed: a Delta table without Change Data Feed on the
// range (never enabled, or disabled in it) is rebuilt in full each build,
// correctly, with the reason; builds are incremental again once the
// feed covers the range.
func TestDeltaNoChangeDataFeed(t *testing.T) {
	e := newEnv(t)
	d := newDeltaSrc(t, deltaDimSchema, false)
	d.insert([]any{int64(1), "a", "eu"}, []any{int64(2), "b", "us"})
	q := "SELECT id, name, region FROM " + d.ref()
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "nocdf", Query: q, Dst: "ns.out", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	build := func(incremental bool, reason string) {
		t.Helper()
		res, err := e.build(tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incremental != incremental || !strings.Contains(res.Reason, reason) {
			t.Fatalf("incremental %v, reason %q; want %v, %q", res.Incremental, res.Reason, incremental, reason)
		}
		if strings.Contains(reason, "cannot be read") && !strings.Contains(e.summary("out")[sqltx.SummaryRebuildReason], reason) {
			t.Fatalf("summary %v", e.summary("out"))
		}
		if got, want := e.rowsOf("out"), e.queryRows(q); got != want {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	}
	build(false, "does not exist")
	d.change([]int64{1}, func(r []any) []any { return []any{r[0], "A", r[2]} }, false)
	build(false, "Change Data Feed of input "+transform.DeltaTablePrefix+d.w.Dir+" from version 2 to 2 cannot be read")
	// The feed is recorded from the version that enables it on.
	d.setCDF(true)
	build(true, "")
	d.insert([]any{int64(3), "c", "eu"})
	build(true, "")
	d.setCDF(false)
	d.change([]int64{2}, nil, false)
	build(false, "cannot be read")
}

// TestDeltaVacuumed: change data files removed from storage (VACUUM)
// rebuild the destination in full.
func TestDeltaVacuumed(t *testing.T) {
	e := newEnv(t)
	d := newDeltaSrc(t, deltaDimSchema, true)
	d.insert([]any{int64(1), "a", "eu"}, []any{int64(2), "b", "us"})
	q := "SELECT id, name FROM " + d.ref()
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "vac", Query: q, Dst: "ns.out", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	d.change([]int64{1}, func(r []any) []any { return []any{r[0], "A", r[2]} }, true)
	if err := os.RemoveAll(filepath.Join(d.w.Dir, "_change_data")); err != nil {
		t.Fatal(err)
	}
	res, err := e.build(tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Incremental || !strings.Contains(res.Reason, "cannot be read") {
		t.Fatalf("incremental %v, reason %q", res.Incremental, res.Reason)
	}
	if got, want := e.rowsOf("out"), e.queryRows(q); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestDeltaBadPath: a Delta location that does not exist, or is not a
// Delta table, fails the build naming the transform and the location,
// and commits nothing.
func TestDeltaBadPath(t *testing.T) {
	e := newEnv(t)
	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, "x.parquet"), []byte("not a table"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{filepath.Join(t.TempDir(), "missing"), empty} {
		tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bad", Query: `SELECT * FROM delta."` + loc + `"`, Dst: "ns.out"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.build(tr)
		if err == nil || !strings.Contains(err.Error(), "transform bad") || !strings.Contains(err.Error(), loc) {
			t.Fatalf("%s: %v", loc, err)
		}
		if !errors.Is(err, delta.ErrNotATable) && !errors.Is(err, os.ErrNotExist) {
			t.Logf("%s: %v", loc, err)
		}
		if _, err := e.Cat.LoadTable(e.Ctx, "ns.out"); !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
			t.Fatalf("%s: the destination exists after a failed build: %v", loc, err)
		}
		if _, _, _, err := sqltx.Query(e.Ctx, e.Cat, `SELECT * FROM delta."`+loc+`"`); err == nil || !strings.Contains(err.Error(), loc) {
			t.Fatalf("query %s: %v", loc, err)
		}
	}
	for _, q := range []string{`SELECT * FROM delta."a|b"`, `SELECT * FROM delta." "`} {
		if _, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bad", Query: q, Dst: "ns.out"}); err == nil || !strings.Contains(err.Error(), "Delta table") {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestDeltaRealTables replays real Delta tables written by Spark and
// delta-rs (../shared/testdata/delta) one version at a time and checks
// the incremental builds against the query over each version.
func TestDeltaRealTables(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "delta")
	for _, c := range []struct{ table, query, key string }{
		{"deltars-cdf-table", "SELECT id, upper(name) AS name, birthday FROM %s WHERE id > 1", "id"},
		{"deltars-cdf-table-with-cdc-and-dvs", "SELECT coalesce(comment, 'none') AS comment, count(*) AS n, max(id) AS top FROM %s GROUP BY coalesce(comment, 'none')", "comment"},
		{"kernelrs-cdf-table-partitioned", "SELECT id, part, upper(text) AS text FROM %s", "id"},
	} {
		t.Run(c.table, func(t *testing.T) {
			src := filepath.Join(root, c.table)
			logs, err := filepath.Glob(filepath.Join(src, "_delta_log", "*.json"))
			if err != nil || len(logs) == 0 {
				t.Skipf("the real Delta table %s is not there (../shared/testdata/delta): %v", src, err)
			}
			dir := filepath.Join(t.TempDir(), c.table)
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, "_delta_log")
			if err := os.RemoveAll(log); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(log, 0o755); err != nil {
				t.Fatal(err)
			}
			e := newEnv(t)
			q := fmt.Sprintf(c.query, `delta."`+dir+`"`)
			tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "real", Query: q, Dst: "ns.out", Keys: []string{c.key}})
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range logs {
				b, err := os.ReadFile(l)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(log, filepath.Base(l)), b, 0o644); err != nil {
					t.Fatal(err)
				}
				res, err := e.build(tr)
				if err != nil {
					t.Fatalf("version %d: %v", i, err)
				}
				if i > 0 && !res.Incremental {
					t.Fatalf("version %d: full build: %s", i, res.Reason)
				}
				if got, want := e.rowsOf("out"), e.queryRows(q); got != want {
					t.Fatalf("version %d:\ngot  %s\nwant %s", i, got, want)
				}
			}
		})
	}
}

// TestDeltaStatus: floe status reads a sql step's Delta input as a Delta
// table: its watermark and head are Delta versions, and the versions
// after the watermark are the output's backlog.
func TestDeltaStatus(t *testing.T) {
	e := newEnv(t)
	d := newDeltaSrc(t, deltaDimSchema, true)
	d.insert([]any{int64(1), "a", "eu"})
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "st", Query: "SELECT id, name FROM " + d.ref(), Dst: "ns.out", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.FromTransforms("p", []*transform.Transform{tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	d.insert([]any{int64(2), "b", "us"})
	d.insert([]any{int64(3), "c", "us"})
	st, err := (&pipeline.Runner{Catalog: e.Cat}).Status(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || len(st[0].Inputs) != 1 {
		t.Fatalf("status %+v", st)
	}
	in := st[0].Inputs[0]
	if in.Watermark != "1" || in.Head != "3" || in.Behind == nil || *in.Behind != 2 || st[0].Note != "" {
		t.Fatalf("input status %+v, note %q", in, st[0].Note)
	}
}

// TestDeltaSchemaChange: a column added to a Delta table changes the
// result schema of SELECT *: the build rebuilds (on_schema_change:
// rebuild) before reading the feed, and the next one is incremental.
func TestDeltaSchemaChange(t *testing.T) {
	e := newEnv(t)
	d := newDeltaSrc(t, deltaDimSchema, true)
	d.insert([]any{int64(1), "a", "eu"})
	q := "SELECT * FROM " + d.ref()
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "sc", Query: q, Dst: "ns.out", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	d.sch = arrow.NewSchema(append(append([]arrow.Field{}, deltaDimSchema.Fields()...), arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	d.setCDF(true)
	d.insert([]any{int64(2), "b", "us", "new"})
	for i, want := range []string{"the query's result schema changed (column note string added", ""} {
		res, err := e.build(tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incremental != (want == "") || !strings.Contains(res.Reason, want) {
			t.Fatalf("build %d: incremental %v, reason %q", i, res.Incremental, res.Reason)
		}
		if got, want := e.rowsOf("out"), e.queryRows(q); got != want {
			t.Fatalf("build %d: got  %s\nwant %s", i, got, want)
		}
		d.insert([]any{int64(3 + i), "c", "eu", nil})
	}
}

// TestDeltaStorageSettings: the storage settings of a query's Delta tables
// (Spec.Storage, QueryOptions) reach the read: a profile the configuration
// does not have fails the build naming the profile and the table and
// commits nothing; a query without a Delta table refuses them.
func TestDeltaStorageSettings(t *testing.T) {
	e := newEnv(t)
	d := newDeltaSrc(t, deltaDimSchema, true)
	d.insert([]any{int64(1), "a", "eu"}, []any{int64(2), "b", "us"})
	src := d.w.Dir
	q := "SELECT id, name FROM " + d.ref()
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "remote", Query: q, Dst: "ns.out", Keys: []string{"id"}, Storage: "nosuch"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = e.build(tr); err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), src) {
		t.Fatalf("build with an unknown storage profile: %v", err)
	}
	if _, err := e.Cat.LoadTable(e.Ctx, "ns.out"); err == nil {
		t.Fatal("the destination exists after a failed build")
	}
	if _, _, _, err := sqltx.QueryWith(e.Ctx, e.Cat, q, sqltx.QueryOptions{Storage: "nosuch"}); err == nil || !strings.Contains(err.Error(), `"nosuch"`) {
		t.Fatalf("query with an unknown storage profile: %v", err)
	}
	// Overrides alone keep the catalog's settings: a local table reads.
	_, seq, done, err := sqltx.QueryWith(e.Ctx, e.Cat, q, sqltx.QueryOptions{SourceProperties: map[string]string{"s3.region": "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		n += int(rec.NumRows())
		rec.Release()
	}
	done()
	if n == 0 {
		t.Fatal("the query read no rows")
	}
	e.create("dim", "id long not null, name string", []string{"id"}, nil)
	iq := "SELECT id, name FROM ns.dim"
	for _, spec := range []sqltx.Spec{
		{Name: "x", Query: iq, Dst: "ns.out", Storage: "lake"},
		{Name: "x", Query: iq, Dst: "ns.out", SourceProperties: map[string]string{"s3.region": "x"}},
	} {
		if _, _, err := sqltx.New(e.Ctx, spec); err == nil || !strings.Contains(err.Error(), "Delta tables") {
			t.Fatalf("storage settings without a Delta table: %v", err)
		}
	}
	if _, _, _, err := sqltx.QueryWith(e.Ctx, e.Cat, iq, sqltx.QueryOptions{Storage: "lake"}); err == nil || !strings.Contains(err.Error(), "Delta tables") {
		t.Fatalf("query: storage settings without a Delta table: %v", err)
	}
}
