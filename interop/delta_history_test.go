//go:build interop

package interop_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// deltaConfig is one kind of Delta table a random history is written into.
type deltaConfig struct {
	name        string
	writer      string // "delta-spark" or "delta-rs"
	dv          bool   // delta.enableDeletionVectors (delta-spark only: delta-rs writes no DVs)
	partitioned bool   // PARTITIONED BY (cat)
	cdfLater    bool   // created without the change data feed, enabled after the first insert (delta-spark)
	syncArgs    []string
}

// deltaColumns is the schema of every history: (id, cat, amount, score, ts, note).
var deltaColumns = []interop.Column{
	{Name: "id", Type: "long"},
	{Name: "cat", Type: "string", Nullable: true},
	{Name: "amount", Type: "decimal(12,2)", Nullable: true},
	{Name: "score", Type: "double", Nullable: true},
	{Name: "ts", Type: "timestamp", Nullable: true},
	{Name: "note", Type: "string", Nullable: true},
}

var deltaDataColumns = []string{"id", "cat", "amount", "score", "ts", "note"}

// deltaHistory writes a random history of INSERT, UPDATE, DELETE and MERGE
// into a CDF-enabled Delta table with one writer. Ids stay unique (fresh ids
// for inserts, MERGE inserts only unmatched ids), so a key identifies a row.
type deltaHistory struct {
	l      *lab
	r      *rand.Rand
	cfg    deltaConfig
	path   string
	nextID int
	rows   int // rows per insert or merge, at most
	log    []string
	// rsNoted holds the versions delta-rs cannot read whose check was logged.
	rsNoted map[int64]bool
	// cdfFrom is the first version with the change data feed enabled.
	cdfFrom int64
}

// row returns one random row in floe's JSON conventions (what delta-rs is given).
func (h *deltaHistory) row(id, step int) []any {
	r := h.r
	out := []any{json.Number(strconv.Itoa(id)), nil, nil, nil, nil, fmt.Sprintf("i%d", step)}
	if r.IntN(8) != 0 {
		out[1] = historyCats[r.IntN(len(historyCats))]
	}
	if r.IntN(10) != 0 {
		out[2] = decimalString(int64(r.IntN(2_000_000)-100_000), 2)
	}
	switch k := r.IntN(20); {
	case k == 0:
		out[3] = "NaN"
	case k == 1:
		out[3] = "-Infinity"
	case k < 18:
		out[3] = json.Number(strconv.FormatFloat(float64(r.IntN(1_000_000))/64, 'g', -1, 64))
	}
	if r.IntN(10) != 0 {
		at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(400*24*3600*1e6)) * time.Microsecond)
		out[4] = at.Format("2006-01-02T15:04:05.000000") + "Z"
	}
	if r.IntN(6) == 0 {
		out[5] = randString(r)
	}
	return out
}

// sqlRow spells a row of row() as Spark SQL literals.
func sqlRow(v []any) string {
	lit := make([]string, len(v))
	for i, x := range v {
		switch {
		case x == nil:
			lit[i] = "NULL"
		case i == 0:
			lit[i] = string(x.(json.Number))
		case i == 2:
			lit[i] = fmt.Sprintf("CAST(%s AS DECIMAL(12,2))", x)
		case i == 3:
			if s, ok := x.(string); ok {
				lit[i] = fmt.Sprintf("CAST('%s' AS DOUBLE)", s)
			} else {
				lit[i] = fmt.Sprintf("CAST(%s AS DOUBLE)", x)
			}
		case i == 4:
			lit[i] = "TIMESTAMP'" + strings.TrimSuffix(strings.Replace(x.(string), "T", " ", 1), "Z") + "'"
		default:
			lit[i] = sqlLit(x.(string))
		}
	}
	return "(" + strings.Join(lit, ", ") + ")"
}

// predicate is a random predicate both Spark SQL and delta-rs (DataFusion) parse.
func (h *deltaHistory) predicate() string {
	return historyPredicate(h.r, h.nextID, h.rows, false)
}

func (h *deltaHistory) target() string { return interop.DeltaPath(h.path) }

// create makes the table; delta-spark's CREATE TABLE is version 0, delta-rs
// creates the table with its first write (an insert, version 0).
func (h *deltaHistory) create(t *testing.T) {
	t.Helper()
	if h.cfg.writer == "delta-rs" {
		h.insert(t, 0)
		return
	}
	part := ""
	if h.cfg.partitioned {
		part = " PARTITIONED BY (cat)"
	}
	h.exec(t, fmt.Sprintf("CREATE TABLE %s (id BIGINT NOT NULL, cat STRING, amount DECIMAL(12,2), score DOUBLE, ts TIMESTAMP, note STRING) USING delta%s "+
		"TBLPROPERTIES (delta.enableChangeDataFeed = %t, delta.enableDeletionVectors = %t)", h.target(), part, !h.cfg.cdfLater, h.cfg.dv))
}

func (h *deltaHistory) exec(t *testing.T, sql string) {
	t.Helper()
	h.log = append(h.log, truncateText(strings.Join(strings.Fields(strings.ReplaceAll(sql, h.path, "PATH")), " "), 200))
	if err := h.l.spark.Exec(h.l.ctx, h.l.sess, sql); err != nil {
		t.Fatalf("delta-spark: %v\nhistory so far:\n  %s", err, strings.Join(h.log, "\n  "))
	}
}

func (h *deltaHistory) rs(t *testing.T, what string, f func() (int64, error)) {
	t.Helper()
	h.log = append(h.log, truncateText(what, 200))
	if _, err := f(); err != nil {
		t.Fatalf("delta-rs: %v\nhistory so far:\n  %s", err, strings.Join(h.log, "\n  "))
	}
}

func (h *deltaHistory) insert(t *testing.T, step int) {
	t.Helper()
	n := 1 + h.r.IntN(h.rows)
	rows := make([][]any, n)
	for i := range rows {
		rows[i] = h.row(h.nextID, step)
		h.nextID++
	}
	if h.cfg.writer == "delta-rs" {
		opts := interop.DeltaWriteOptions{Configuration: map[string]string{"delta.enableChangeDataFeed": "true"}}
		if h.cfg.partitioned {
			opts.PartitionBy = []string{"cat"}
		}
		h.rs(t, fmt.Sprintf("write_deltalake append %d rows (ids %d..%d)", n, h.nextID-n, h.nextID-1), func() (int64, error) {
			return h.l.py.DeltaWrite(h.l.ctx, h.path, deltaColumns, rows, opts)
		})
		return
	}
	vals := make([]string, n)
	for i, r := range rows {
		vals[i] = sqlRow(r)
	}
	// A repartition hint spreads the rows over several files.
	h.exec(t, fmt.Sprintf("INSERT INTO %s SELECT /*+ REPARTITION(%d) */ * FROM VALUES %s AS v(id, cat, amount, score, ts, note)",
		h.target(), 1+h.r.IntN(3), strings.Join(vals, ", ")))
}

func (h *deltaHistory) update(t *testing.T, step int) {
	t.Helper()
	note := sqlLit(fmt.Sprintf("u%d", step))
	sets := []map[string]string{
		{"amount": "amount + CAST(1.25 AS DECIMAL(12,2))", "note": note},
		{"cat": sqlLit(historyCats[h.r.IntN(len(historyCats))]), "note": note},
		{"score": "score * 2"},
		{"note": "NULL"},
	}
	set := sets[h.r.IntN(len(sets))]
	pred := h.predicate()
	if h.cfg.writer == "delta-rs" {
		h.rs(t, fmt.Sprintf("dt.update(%v, predicate=%q)", set, pred), func() (int64, error) {
			return h.l.py.DeltaUpdate(h.l.ctx, h.path, pred, set)
		})
		return
	}
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range set {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, k+" = "+set[k])
	}
	h.exec(t, fmt.Sprintf("UPDATE %s SET %s WHERE %s", h.target(), strings.Join(parts, ", "), pred))
}

func (h *deltaHistory) delete(t *testing.T) {
	t.Helper()
	pred := h.predicate()
	if h.cfg.writer == "delta-rs" {
		h.rs(t, fmt.Sprintf("dt.delete(%q)", pred), func() (int64, error) { return h.l.py.DeltaDelete(h.l.ctx, h.path, pred) })
		return
	}
	h.exec(t, fmt.Sprintf("DELETE FROM %s WHERE %s", h.target(), pred))
}

// merge upserts random source rows: matched rows with op D are deleted, other
// matched rows updated, unmatched (fresh) ids inserted.
func (h *deltaHistory) merge(t *testing.T, step int) {
	t.Helper()
	r := h.r
	n := 1 + r.IntN(h.rows)
	var rows [][]any
	var vals []string
	for id := range sourceIDs(r, &h.nextID, n) {
		op := "U"
		if r.IntN(4) == 0 {
			op = "D"
		}
		row := []any{json.Number(strconv.Itoa(id)), historyCats[r.IntN(len(historyCats))], decimalString(int64(r.IntN(100_000)), 2), op}
		rows = append(rows, row)
		vals = append(vals, fmt.Sprintf("(%d, %s, CAST(%s AS DECIMAL(12,2)), '%s')", id, sqlLit(row[1].(string)), row[2], op))
	}
	note := sqlLit(fmt.Sprintf("m%d", step))
	// Now and then the source is empty: a MERGE that changes nothing (Spark
	// then reads no change from its commit; CDCReader's no-op MERGE rule).
	empty := r.IntN(8) == 0
	if empty {
		rows = nil
	}
	if h.cfg.writer == "delta-rs" {
		del := "s.op = 'D'"
		m := interop.DeltaMerge{
			Schema: []interop.Column{{Name: "id", Type: "long"}, {Name: "cat", Type: "string", Nullable: true},
				{Name: "amount", Type: "decimal(12,2)", Nullable: true}, {Name: "op", Type: "string", Nullable: true}},
			Rows:             rows,
			Predicate:        "t.id = s.id",
			MatchedDelete:    &del,
			MatchedUpdate:    map[string]string{"amount": "s.amount", "note": note},
			NotMatchedInsert: map[string]string{"id": "s.id", "cat": "s.cat", "amount": "s.amount", "note": note},
		}
		h.rs(t, fmt.Sprintf("dt.merge(%d rows %v, t.id = s.id) delete if s.op = 'D', update amount, note=%s, insert", n, rows, note), func() (int64, error) {
			return h.l.py.DeltaMerge(h.l.ctx, h.path, m)
		})
		return
	}
	bySource := ""
	if r.IntN(3) == 0 {
		bySource = fmt.Sprintf(" WHEN NOT MATCHED BY SOURCE AND t.id %% 13 = %d THEN DELETE", r.IntN(13))
	}
	where := ""
	if empty {
		where = " WHERE false"
	}
	h.exec(t, fmt.Sprintf("CREATE OR REPLACE TEMP VIEW merge_src AS SELECT * FROM VALUES %s AS v(id, cat, amount, op)%s", strings.Join(vals, ", "), where))
	h.exec(t, fmt.Sprintf(`MERGE INTO %s t USING merge_src s ON t.id = s.id
		WHEN MATCHED AND s.op = 'D' THEN DELETE
		WHEN MATCHED THEN UPDATE SET t.amount = s.amount, t.note = %s
		WHEN NOT MATCHED THEN INSERT (id, cat, amount, score, ts, note) VALUES (s.id, s.cat, s.amount, NULL, NULL, %s)%s`,
		h.target(), note, note, bySource))
}

// step runs one random statement.
func (h *deltaHistory) step(t *testing.T, step int) {
	t.Helper()
	switch k := h.r.IntN(10); {
	case step == 0 || k < 3:
		h.insert(t, step)
	case k < 5:
		h.update(t, step)
	case k < 7:
		h.delete(t)
	default:
		h.merge(t, step)
	}
}

// latest returns the table's latest version as delta-rs reads it.
func (h *deltaHistory) latest(t *testing.T) int64 {
	t.Helper()
	raw, err := h.l.py.Python(h.l.ctx, "from deltalake import DeltaTable\nresult = DeltaTable(args['path']).version()", map[string]any{"path": h.path})
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Fatalf("delta-rs version %s: %v", raw, err)
	}
	return v
}

// TestDeltaHistories: delta-spark (with and without deletion vectors,
// unpartitioned and partitioned) and delta-rs write seeded random histories of
// INSERT, UPDATE, DELETE and MERGE into Delta tables with the change data feed
// on. Then:
//
//   - changes: for several version ranges, floe delta changes equals Spark's
//     table_changes and delta-rs's load_cdf as multisets (data columns,
//     _change_type, _commit_version), and dates every commit as delta-rs does
//     (Spark dates commits by file modification time: see docs/interop.md);
//   - sync: floe delta sync, run half way and at the end, leaves an Iceberg
//     table that floe and Spark read exactly as Spark reads the Delta table;
//     a sync with nothing new commits nothing.
//
// FLOE_INTEROP_SEED reproduces a run; FLOE_INTEROP_STEPS (default 6) and
// FLOE_INTEROP_ROWS (rows per insert about ROWS/16) size it.
func TestDeltaHistories(t *testing.T) {
	seed := envInt(t, "FLOE_INTEROP_SEED", 20261130)
	steps := envInt(t, "FLOE_INTEROP_STEPS", 6)
	rows := max(envInt(t, "FLOE_INTEROP_ROWS", 400)/16, 2)
	t.Logf("random seed %d, %d statements per history, up to %d rows per insert (set FLOE_INTEROP_SEED, FLOE_INTEROP_STEPS, FLOE_INTEROP_ROWS)", seed, steps, rows)
	configs := []deltaConfig{
		{name: "spark", writer: "delta-spark"},
		{name: "spark-dv-partitioned", writer: "delta-spark", dv: true, partitioned: true,
			syncArgs: []string{"--mode", "merge-on-read", "--format-version", "3", "--partition-by", "cat"}},
		{name: "spark-cdf-later", writer: "delta-spark", cdfLater: true, syncArgs: []string{"--mode", "merge-on-read", "--delete-mode", "equality"}},
		{name: "delta-rs", writer: "delta-rs", syncArgs: []string{"--mode", "merge-on-read"}},
		{name: "delta-rs-partitioned", writer: "delta-rs", partitioned: true, syncArgs: []string{"--format-version", "3", "--partition-by", "cat"}},
	}
	for ci, cfg := range configs {
		t.Run(cfg.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(ci)))
			l := newLab(t, "ds")
			h := &deltaHistory{l: l, r: r, cfg: cfg, path: filepath.Join(t.TempDir(), "delta"), rows: rows, rsNoted: map[int64]bool{}}
			h.create(t)
			start := 0
			if cfg.writer == "delta-rs" {
				start = 1 // the creating write was the first insert
			}
			syncAt := max(steps/2, 1)
			synced := false
			for step := start; step < steps; step++ {
				h.step(t, step)
				if cfg.cdfLater && step == 0 {
					h.exec(t, "ALTER TABLE "+h.target()+" SET TBLPROPERTIES (delta.enableChangeDataFeed = true)")
					h.cdfFrom = h.latest(t)
				}
				if step+1 == syncAt {
					h.log = append(h.log, "floe delta sync")
					h.sync(t, l, "first sync (after step "+strconv.Itoa(step)+")")
					synced = true
				}
			}
			t.Logf("history of %s (%s):\n  %s", cfg.name, cfg.writer, strings.Join(h.log, "\n  "))
			if !synced {
				t.Fatal("the history never synced half way")
			}
			dvs := deletionVectorsIn(t, h.path)
			t.Logf("%d add actions carry a deletion vector", dvs)
			if dvs == 0 && cfg.dv {
				t.Log("the history wrote no deletion vector (no UPDATE, DELETE or MERGE changed part of a file)")
			} else if dvs > 0 && !cfg.dv {
				t.Errorf("the history wrote %d deletion vectors with delta.enableDeletionVectors off", dvs)
			}
			t.Run("changes", func(t *testing.T) { h.checkChanges(t, l.with(t)) })
			t.Run("changes-by-timestamp", func(t *testing.T) { h.checkTimestampRanges(t, l.with(t)) })
			if cfg.name == "spark" || cfg.name == "delta-rs" {
				// One table per writer is enough: the bounds are checked
				// before any data file is read.
				t.Run("errors", func(t *testing.T) { h.checkErrors(t, l.with(t)) })
			}
			t.Run("sync", func(t *testing.T) {
				l := l.with(t)
				h.sync(t, l, "last sync")
				before := len(l.snapshots("ds.t"))
				h.sync(t, l, "sync with nothing new")
				if after := len(l.snapshots("ds.t")); after != before {
					t.Errorf("a sync with no new Delta commit made %d snapshot(s)", after-before)
				}
			})
		})
	}
}

// sync runs floe delta sync into ds.t and checks that floe's scan and Spark's
// read of the Iceberg table equal Spark's read of the Delta table.
func (h *deltaHistory) sync(t *testing.T, l *lab, what string) {
	t.Helper()
	args := append([]string{"delta", "sync", h.path, "ds.t", "--equality-columns", "id"}, h.cfg.syncArgs...)
	if _, err := l.floe.Run(l.ctx, args...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	want := l.sql("SELECT * FROM %s", h.target())
	got, err := l.floe.TableRows(l.ctx, "ds.t", "table", "scan", "ds.t")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffRows(want, mustSelectIfAny(t, got, deltaDataColumns)); d != "" {
		t.Errorf("%s: floe's scan of the Iceberg table differs from Spark's read of the Delta table:\n%sreproduce with: floe delta sync %s",
			what, d, strings.Join(args[2:], " "))
	}
	if d := diffRows(want, mustSelect(t, l.sql("SELECT * FROM floe.ds.t"), deltaDataColumns...)); d != "" {
		t.Errorf("%s: Spark's read of the Iceberg table differs from its read of the Delta table:\n%s", what, d)
	}
}

// mustSelectIfAny is mustSelect, except that a table without columns (floe
// prints nothing for no rows) stays as it is.
func mustSelectIfAny(t *testing.T, tbl *rowjson.Table, names []string) *rowjson.Table {
	t.Helper()
	if len(tbl.Columns) == 0 {
		return tbl
	}
	return mustSelect(t, tbl, names...)
}

// cdfRange is a version range of a change data read; end < 0 is open (the latest).
type cdfRange struct{ start, end int64 }

func (c cdfRange) String() string {
	if c.end < 0 {
		return fmt.Sprintf("[%d, latest]", c.start)
	}
	return fmt.Sprintf("[%d, %d]", c.start, c.end)
}

// deltaRanges picks the ranges to compare: the whole history from 0 and from
// 1, open ended, a single version and two random ranges.
func deltaRanges(r *rand.Rand, latest int64) []cdfRange {
	out := []cdfRange{{0, latest}, {min(1, latest), -1}}
	v := r.Int64N(latest + 1)
	out = append(out, cdfRange{v, v})
	for range 2 {
		a := r.Int64N(latest + 1)
		b := a + r.Int64N(latest-a+1)
		out = append(out, cdfRange{a, b})
	}
	return out
}

// cdfColumns are the columns compared between change feeds.
var cdfColumns = append(slices.Clone(deltaDataColumns), "_change_type", "_commit_version")

// commitTimesOf maps each _commit_version of a feed to its _commit_timestamp as
// an instant (delta-spark: timestamp UTC microseconds; delta-rs: timestamp_ntz
// in milliseconds holding UTC; floe: timestamptz microseconds).
func commitTimesOf(t *testing.T, what string, feed *rowjson.Table) map[int64]time.Time {
	t.Helper()
	out := map[int64]time.Time{}
	if len(feed.Rows) == 0 {
		return out
	}
	for _, r := range mustSelect(t, feed, "_commit_version", "_commit_timestamp").Rows {
		v, err := r[0].(json.Number).Int64()
		if err != nil {
			t.Fatalf("%s: _commit_version %v: %v", what, r[0], err)
		}
		s, _ := r[1].(string)
		ts, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
		if err != nil {
			ts, err = time.Parse("2006-01-02T15:04:05.999999999", s)
		}
		if err != nil {
			t.Fatalf("%s: _commit_timestamp %v is not an ISO-8601 timestamp", what, r[1])
		}
		if prev, ok := out[v]; ok && !prev.Equal(ts) {
			t.Errorf("%s: version %d has two commit timestamps, %v and %v", what, v, prev, ts)
		}
		out[v] = ts
	}
	return out
}

// checkChanges compares floe delta changes with delta-spark's table_changes
// and delta-rs's load_cdf on several ranges.
func (h *deltaHistory) checkChanges(t *testing.T, l *lab) {
	latest := h.latest(t)
	compared := 0
	ranges := deltaRanges(h.r, latest)
	if h.cdfFrom > 0 {
		ranges = append(ranges, cdfRange{h.cdfFrom, -1})
	}
	for _, rg := range ranges {
		args := []string{"delta", "changes", h.path, "--start-version", strconv.FormatInt(rg.start, 10)}
		if rg.end >= 0 {
			args = append(args, "--end-version", strconv.FormatInt(rg.end, 10))
		}
		if rg.start < h.cdfFrom {
			h.checkNoChangeData(t, l, rg, args)
			continue
		}
		floeRows, err := l.floe.Rows(l.ctx, args...)
		if err != nil {
			t.Errorf("range %s: %v", rg, err)
			continue
		}
		if err := interop.FloeToRowJSON(floeRows, map[string]string{"ts": "timestamptz", "_commit_timestamp": "timestamptz"}); err != nil {
			t.Fatal(err)
		}
		spark, err := l.spark.DeltaChanges(l.ctx, l.sess, h.path, rg.start, rg.end)
		if err != nil {
			t.Fatalf("range %s: delta-spark table_changes: %v", rg, err)
		}
		repro := "floe " + strings.Join(args, " ")
		got := mustSelectIfAny(t, floeRows, cdfColumns)
		if d := diffRows(mustSelectIfAny(t, spark, cdfColumns), got); d != "" {
			t.Errorf("range %s: floe's changes differ from delta-spark's table_changes:\n%sreproduce with: %s", rg, d, repro)
		}
		rs, skipped := h.rsChanges(t, l, rg, latest, floeRows)
		if d := diffRows(mustSelectIfAny(t, rs, cdfColumns), withoutVersions(t, got, skipped)); d != "" {
			t.Errorf("range %s: floe's changes differ from delta-rs's load_cdf:\n%sreproduce with: %s", rg, d, repro)
		}
		compared += len(floeRows.Rows)
		// floe and delta-rs both date a commit by commitInfo.timestamp;
		// delta-spark by the log file's modification time, written moments
		// later (docs/interop.md).
		ft, rt, st := commitTimesOf(t, "floe", floeRows), commitTimesOf(t, "delta-rs", rs), commitTimesOf(t, "delta-spark", spark)
		for v, f := range ft {
			if x, ok := rt[v]; ok && !x.Equal(f) {
				t.Errorf("range %s: version %d: floe's _commit_timestamp %v, delta-rs's %v", rg, v, f, x)
			}
			if x, ok := st[v]; ok && x.Sub(f).Abs() > 2*time.Second {
				t.Errorf("range %s: version %d: floe's _commit_timestamp %v, delta-spark's %v", rg, v, f, x)
			}
		}
	}
	if compared == 0 {
		t.Error("no range produced any change: the check compared nothing")
	}
}

// rsBlindSpot names why delta-rs 1.6.6 cannot read a commit's change data,
// or "" when it can. Both cases are commits without cdc actions, whose
// changes come from their add and remove actions (PROTOCOL.md, "Change Data
// Files"); delta-spark writes them for a DELETE with deletion vectors:
//
//   - a remove with a deletion vector: the rows it deletes are the rows the
//     vector does not mask (delta-io/delta#1701, cases 2 to 4), and for a
//     paired add the rows in the add's vector but not the remove's; delta-rs
//     emits other rows (the masked ones);
//   - a remove of a file of the NULL partition, for which delta-spark writes
//     "partitionValues":{} (a NULL value is left out of the map): delta-rs
//     fails the whole read with "column types must match schema types,
//     expected Utf8 but found Null".
func rsBlindSpot(t *testing.T, path string, v int64, partitionCols []string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(path, "_delta_log", fmt.Sprintf("%020d.json", v)))
	if err != nil {
		t.Fatal(err)
	}
	why := ""
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var a struct {
			CDC    json.RawMessage `json:"cdc"`
			Remove *struct {
				DataChange      bool               `json:"dataChange"`
				PartitionValues map[string]*string `json:"partitionValues"`
				DeletionVector  json.RawMessage    `json:"deletionVector"`
			} `json:"remove"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("version %d of %s: %v", v, path, err)
		}
		if a.CDC != nil {
			return ""
		}
		if a.Remove == nil || !a.Remove.DataChange {
			continue
		}
		for _, c := range partitionCols {
			if _, ok := a.Remove.PartitionValues[c]; !ok {
				why = "a remove without the NULL partition value"
			}
		}
		if why == "" && len(a.Remove.DeletionVector) > 0 && string(a.Remove.DeletionVector) != "null" {
			why = "a remove with a deletion vector"
		}
	}
	return why
}

// rsChanges reads the range with delta-rs's load_cdf, around the versions
// it cannot read (rsBlindSpot), which it returns. floe's answer for those is
// still compared with delta-spark's. For each, it logs whether delta-rs
// still fails or differs there, so a delta-rs upgrade that fixes it shows.
func (h *deltaHistory) rsChanges(t *testing.T, l *lab, rg cdfRange, latest int64, floeRows *rowjson.Table) (*rowjson.Table, []int64) {
	t.Helper()
	var partCols []string
	if h.cfg.partitioned {
		partCols = []string{"cat"}
	}
	end := rg.end
	if end < 0 {
		end = latest
	}
	var skipped []int64
	for v := rg.start; v <= end; v++ {
		if why := rsBlindSpot(t, h.path, v, partCols); why != "" {
			skipped = append(skipped, v)
			if h.rsNoted[v] {
				continue
			}
			h.rsNoted[v] = true
			rs, err := l.py.DeltaCDF(l.ctx, h.path, v, v)
			var d string
			switch {
			case err != nil:
				d = "it fails: " + truncateText(err.Error(), 200)
			default:
				var others []int64
				for x := rg.start; x <= end; x++ {
					if x != v {
						others = append(others, x)
					}
				}
				d = diffRows(mustSelectIfAny(t, rs, cdfColumns), withoutVersions(t, mustSelectIfAny(t, floeRows, cdfColumns), others))
				if d == "" {
					d = "it now agrees with floe and delta-spark (the exclusion can go)"
				} else {
					d = "it differs:\n" + d
				}
			}
			t.Logf("version %d has %s; delta-rs is left out there: %s", v, why, d)
		}
	}
	if len(skipped) == 0 {
		rs, err := l.py.DeltaCDF(l.ctx, h.path, rg.start, rg.end)
		if err != nil {
			t.Fatalf("range %s: delta-rs load_cdf: %v", rg, err)
		}
		return rs, nil
	}
	out := &rowjson.Table{}
	read := func(a, b int64) {
		if a > b {
			return
		}
		part, err := l.py.DeltaCDF(l.ctx, h.path, a, b)
		if err != nil {
			t.Fatalf("range %s: delta-rs load_cdf of [%d, %d], around versions %v: %v", rg, a, b, skipped, err)
		}
		if len(part.Rows) > 0 {
			if len(out.Columns) == 0 {
				out.Columns = part.Columns
			}
			out.Rows = append(out.Rows, mustSelect(t, part, out.Names()...).Rows...)
		}
	}
	from := rg.start
	for _, v := range skipped {
		read(from, v-1)
		from = v + 1
	}
	read(from, end)
	return out, skipped
}

// withoutVersions drops the rows of the given _commit_versions.
func withoutVersions(t *testing.T, tbl *rowjson.Table, versions []int64) *rowjson.Table {
	t.Helper()
	if len(versions) == 0 || len(tbl.Rows) == 0 {
		return tbl
	}
	j := slices.Index(tbl.Names(), "_commit_version")
	if j < 0 {
		t.Fatal("no _commit_version column")
	}
	out := &rowjson.Table{Columns: tbl.Columns}
	for _, r := range tbl.Rows {
		v, err := r[j].(json.Number).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(versions, v) {
			out.Rows = append(out.Rows, r)
		}
	}
	return out
}

// deletionVectorsIn counts the add actions with a deletion vector in the
// Delta log at path.
func deletionVectorsIn(t *testing.T, path string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(path, "_delta_log", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var a struct {
				Add *struct {
					DeletionVector json.RawMessage `json:"deletionVector"`
				} `json:"add"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if a.Add != nil && len(a.Add.DeletionVector) > 0 && string(a.Add.DeletionVector) != "null" {
				n++
			}
		}
	}
	return n
}

// commitTimes returns, per version of the Delta table at path, the commit's
// commitInfo.timestamp (floe's and delta-rs's convention) and its log file's
// modification time made strictly increasing as delta-spark does
// (DeltaHistoryManager's monotonization), both in Unix milliseconds.
func deltaCommitTimes(t *testing.T, path string, latest int64) (info, mtime []int64) {
	t.Helper()
	for v := int64(0); v <= latest; v++ {
		f := filepath.Join(path, "_delta_log", fmt.Sprintf("%020d.json", v))
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ts := int64(-1)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var a struct {
				CommitInfo *struct {
					Timestamp int64 `json:"timestamp"`
				} `json:"commitInfo"`
			}
			if err := json.Unmarshal([]byte(line), &a); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if a.CommitInfo != nil {
				ts = a.CommitInfo.Timestamp
			}
		}
		if ts < 0 {
			t.Fatalf("%s has no commitInfo.timestamp", f)
		}
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		m := st.ModTime().UnixMilli()
		if v > 0 && m <= mtime[v-1] {
			m = mtime[v-1] + 1
		}
		info = append(info, ts)
		mtime = append(mtime, m)
	}
	return info, mtime
}

// checkTimestampRanges compares floe delta changes with timestamp bounds
// against delta-spark's table_changes_by_path and delta-rs's load_cdf with
// the same bounds. The engines date commits differently (docs/interop.md),
// so every bound is a time strictly between two consecutive commits by both
// conventions, where all three resolve it to the same version; a start before
// the first commit is also tried.
func (h *deltaHistory) checkTimestampRanges(t *testing.T, l *lab) {
	latest := h.latest(t)
	if latest < 2 {
		t.Skip("fewer than three versions")
	}
	info, mtime := deltaCommitTimes(t, h.path, latest)
	// between returns a time after version v-1 and before version v by both
	// conventions, when there is one.
	between := func(v int64) (time.Time, bool) {
		lo, hi := max(info[v-1], mtime[v-1]), min(info[v], mtime[v])
		if hi-lo < 2 {
			return time.Time{}, false
		}
		return time.UnixMilli(lo + (hi-lo)/2).UTC(), true
	}
	type tsRange struct {
		start, end time.Time
		a, b       int64 // the versions both bounds resolve to
	}
	var ranges []tsRange
	lo := max(1, h.cdfFrom)
	if latest <= lo {
		t.Skipf("fewer than two versions after version %d", lo)
	}
	for k := 0; k < 8 && len(ranges) < 3; k++ {
		a := lo + h.r.Int64N(latest-lo) // start between a-1 and a
		b := a + h.r.Int64N(latest-a)   // end between b and b+1
		st, ok1 := between(a)
		en, ok2 := between(b + 1)
		if !ok1 || !ok2 {
			continue
		}
		if k == 0 && h.cdfFrom == 0 {
			// A start before the first commit resolves to the first version.
			st, a = time.UnixMilli(min(info[0], mtime[0])-3_600_000).UTC(), 0
		}
		ranges = append(ranges, tsRange{st, en, a, b})
	}
	if len(ranges) == 0 {
		t.Skipf("no two commits are far enough apart for a bound all engines resolve alike (commit times %v, file times %v)", info, mtime)
	}
	iso := func(ts time.Time) string { return ts.Format("2006-01-02T15:04:05.000Z") }
	compared := 0
	defer func() {
		if compared == 0 && !t.Failed() && !t.Skipped() {
			t.Error("no timestamp range produced any change: the check compared nothing")
		}
	}()
	for _, rg := range ranges {
		what := fmt.Sprintf("timestamps [%s, %s] (versions %d to %d)", iso(rg.start), iso(rg.end), rg.a, rg.b)
		args := []string{"delta", "changes", h.path, "--start-timestamp", iso(rg.start), "--end-timestamp", iso(rg.end)}
		floeRows, err := l.floe.Rows(l.ctx, args...)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		if err := interop.FloeToRowJSON(floeRows, map[string]string{"ts": "timestamptz", "_commit_timestamp": "timestamptz"}); err != nil {
			t.Fatal(err)
		}
		got := mustSelectIfAny(t, floeRows, cdfColumns)
		compared += len(got.Rows)
		t.Logf("%s: %d change rows", what, len(got.Rows))
		repro := "floe " + strings.Join(args, " ")
		sparkTS := func(ts time.Time) string { return sqlLit(ts.Format("2006-01-02 15:04:05.000")) }
		spark := l.sql("SELECT * FROM table_changes_by_path(%s, %s, %s)", sqlLit(h.path), sparkTS(rg.start), sparkTS(rg.end))
		if d := diffRows(mustSelectIfAny(t, spark, cdfColumns), got); d != "" {
			t.Errorf("%s: floe's changes differ from delta-spark's table_changes:\n%sreproduce with: %s", what, d, repro)
		}
		// The same versions by number give the same rows.
		byVersion, err := l.floe.Rows(l.ctx, "delta", "changes", h.path, "--start-version", strconv.FormatInt(rg.a, 10), "--end-version", strconv.FormatInt(rg.b, 10))
		if err != nil {
			t.Fatal(err)
		}
		if err := interop.FloeToRowJSON(byVersion, map[string]string{"ts": "timestamptz", "_commit_timestamp": "timestamptz"}); err != nil {
			t.Fatal(err)
		}
		if d := diffRows(mustSelectIfAny(t, byVersion, cdfColumns), got); d != "" {
			t.Errorf("%s: floe's changes differ from its own changes of versions %d to %d:\n%sreproduce with: %s", what, rg.a, rg.b, d, repro)
		}
		var partCols []string
		if h.cfg.partitioned {
			partCols = []string{"cat"}
		}
		blind := false
		for v := rg.a; v <= rg.b; v++ {
			blind = blind || rsBlindSpot(t, h.path, v, partCols) != ""
		}
		if blind {
			t.Logf("%s: delta-rs not compared (a version it cannot read, docs/interop.md)", what)
			continue
		}
		raw, err := l.py.Python(l.ctx, "from deltalake import DeltaTable\n"+
			"result = DeltaTable(args['path']).load_cdf(starting_timestamp=args['start'], ending_timestamp=args['end'])",
			map[string]any{"path": h.path, "start": iso(rg.start), "end": iso(rg.end)})
		if err != nil {
			t.Fatalf("%s: delta-rs load_cdf: %v", what, err)
		}
		rs, err := rowjson.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffRows(mustSelectIfAny(t, rs, cdfColumns), got); d != "" {
			t.Errorf("%s: floe's changes differ from delta-rs's load_cdf:\n%sreproduce with: %s", what, d, repro)
		}
	}
}

// checkNoChangeData: a range starting before the change data feed was
// enabled (version h.cdfFrom) has no change data for its first versions;
// floe must refuse it, as delta-spark does (DELTA_MISSING_CHANGE_DATA).
// delta-rs checks only the start commit's metadata (docs/interop.md); its
// answer is logged, not compared.
func (h *deltaHistory) checkNoChangeData(t *testing.T, l *lab, rg cdfRange, args []string) {
	t.Helper()
	_, ferr := l.floe.Rows(l.ctx, args...)
	_, serr := l.spark.DeltaChanges(l.ctx, l.sess, h.path, rg.start, rg.end)
	sparkSays := "answers"
	if serr != nil {
		sparkSays = truncateText(referenceMessage(serr), 200)
	}
	if serr == nil {
		t.Errorf("range %s: delta-spark reads change data before version %d, where the feed was enabled", rg, h.cdfFrom)
	} else if !strings.Contains(serr.Error(), "DELTA_MISSING_CHANGE_DATA") {
		t.Errorf("range %s: delta-spark fails with %v, want DELTA_MISSING_CHANGE_DATA", rg, serr)
	}
	if ferr == nil {
		t.Errorf("range %s: floe answers, though the change data feed was enabled only at version %d (delta-spark: %s); reproduce with: floe %s",
			rg, h.cdfFrom, sparkSays, strings.Join(args, " "))
		return
	}
	rs, rerr := l.py.DeltaCDF(l.ctx, h.path, rg.start, rg.end)
	var rsSays string
	if rerr != nil {
		rsSays = "fails: " + truncateText(rerr.Error(), 200)
	} else {
		rsSays = fmt.Sprintf("answers %d rows", len(rs.Rows))
	}
	var fe *interop.FloeError
	msg := ferr.Error()
	if errors.As(ferr, &fe) {
		msg = fe.Stderr
	}
	t.Logf("range %s starts before the change data feed (version %d): floe fails: %s; delta-spark fails: %s; delta-rs %s",
		rg, h.cdfFrom, truncateText(msg, 200), sparkSays, rsSays)
}
