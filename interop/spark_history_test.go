//go:build interop

package interop_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/rowjson"
)

// historyConfig is one kind of table Spark writes a random history into.
type historyConfig struct {
	mode        string // "copy-on-write" or "merge-on-read"
	version     int
	partitioned bool
}

func (c historyConfig) name() string {
	p := "unpartitioned"
	if c.partitioned {
		p = "partitioned"
	}
	m := "cow"
	if c.mode == "merge-on-read" {
		m = "mor"
	}
	return fmt.Sprintf("%s-v%d-%s", m, c.version, p)
}

// sparkHistory writes random histories with Spark SQL. Identifiers stay
// unique in every snapshot (fresh ids for inserts, MERGE inserts only
// unmatched ids, overwrites keep ids), so update images are well defined.
type sparkHistory struct {
	l      *lab
	r      *rand.Rand
	table  string // "ns.t"
	cfg    historyConfig
	nextID int
	rows   int // rows per insert, about
	log    []string
}

var historyCats = []string{"a", "b", "c", "d"}

// value literals of one random row for (id, cat, amount, score, ts, note).
func (h *sparkHistory) rowValues(id int, step int) string {
	r := h.r
	cat := "NULL"
	if r.IntN(8) != 0 {
		cat = sqlLit(historyCats[r.IntN(len(historyCats))])
	}
	amount := "NULL"
	if r.IntN(10) != 0 {
		cents := r.IntN(2_000_000) - 100_000
		amount = fmt.Sprintf("CAST(%s AS DECIMAL(12,2))", decimalString(int64(cents), 2))
	}
	score := "NULL"
	switch k := r.IntN(20); {
	case k == 0:
		score = "CAST('NaN' AS DOUBLE)"
	case k == 1:
		score = "CAST('-Infinity' AS DOUBLE)"
	case k < 18:
		score = fmt.Sprintf("CAST(%g AS DOUBLE)", float64(r.IntN(1_000_000))/64)
	}
	ts := "NULL"
	if r.IntN(10) != 0 {
		at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(400*24*3600*1e6)) * time.Microsecond)
		ts = "TIMESTAMP'" + at.Format("2006-01-02 15:04:05.000000") + "'"
	}
	note := sqlLit(fmt.Sprintf("i%d", step))
	if r.IntN(6) == 0 {
		note = sqlLit(randString(r))
	}
	return fmt.Sprintf("(%d, %s, %s, %s, %s, %s)", id, cat, amount, score, ts, note)
}

// predicate returns a random Spark SQL predicate over the history's columns.
func (h *sparkHistory) predicate() string {
	return historyPredicate(h.r, h.nextID, h.rows, true)
}

// historyPredicate returns a random predicate over the history columns (id,
// cat, amount and, with ts, ts) that Spark SQL parses and, without ts,
// delta-rs (DataFusion) too.
func historyPredicate(r *rand.Rand, nextID, rows int, ts bool) string {
	kinds := 5
	if ts {
		kinds = 6
	}
	switch r.IntN(kinds) {
	case 0:
		m := 3 + r.IntN(5)
		return fmt.Sprintf("id %% %d = %d", m, r.IntN(m))
	case 1:
		return "cat = " + sqlLit(historyCats[r.IntN(len(historyCats))])
	case 2:
		return "cat IS NULL OR amount < 0"
	case 3:
		lo := r.IntN(max(nextID, 1))
		return fmt.Sprintf("id BETWEEN %d AND %d", lo, lo+rows/2)
	case 4:
		return fmt.Sprintf("amount > %d", r.IntN(20000))
	default:
		return "ts < TIMESTAMP'2024-06-01 00:00:00'"
	}
}

func (h *sparkHistory) insert(step int) string {
	n := 1 + h.r.IntN(h.rows)
	vals := make([]string, n)
	for i := range vals {
		vals[i] = h.rowValues(h.nextID, step)
		h.nextID++
	}
	// A repartition hint spreads the rows over several files.
	return fmt.Sprintf("INSERT INTO floe.%s SELECT /*+ REPARTITION(%d) */ * FROM VALUES %s AS v(id, cat, amount, score, ts, note)",
		h.table, 1+h.r.IntN(3), strings.Join(vals, ", "))
}

func (h *sparkHistory) update(step int) string {
	sets := []string{
		"amount = amount + 1.25, note = " + sqlLit(fmt.Sprintf("u%d", step)),
		"cat = " + sqlLit(historyCats[h.r.IntN(len(historyCats))]) + ", note = " + sqlLit(fmt.Sprintf("u%d", step)),
		"score = score * 2",
		"note = NULL",
	}
	return fmt.Sprintf("UPDATE floe.%s SET %s WHERE %s", h.table, sets[h.r.IntN(len(sets))], h.predicate())
}

func (h *sparkHistory) delete() string {
	return fmt.Sprintf("DELETE FROM floe.%s WHERE %s", h.table, h.predicate())
}

func (h *sparkHistory) merge(step int) string {
	r := h.r
	n := 1 + r.IntN(h.rows)
	var vals []string
	for id := range sourceIDs(r, &h.nextID, n) {
		op := "U"
		if r.IntN(4) == 0 {
			op = "D"
		}
		cents := r.IntN(100_000)
		vals = append(vals, fmt.Sprintf("(%d, %s, CAST(%s AS DECIMAL(12,2)), '%s')", id,
			sqlLit(historyCats[r.IntN(len(historyCats))]), decimalString(int64(cents), 2), op))
	}
	bySource := ""
	if r.IntN(3) == 0 {
		bySource = fmt.Sprintf(" WHEN NOT MATCHED BY SOURCE AND t.id %% 13 = %d THEN DELETE", r.IntN(13))
	}
	return fmt.Sprintf(`MERGE INTO floe.%s t USING (SELECT * FROM VALUES %s AS v(id, cat, amount, op)) s ON t.id = s.id
		WHEN MATCHED AND s.op = 'D' THEN DELETE
		WHEN MATCHED THEN UPDATE SET t.amount = s.amount, t.note = %s
		WHEN NOT MATCHED THEN INSERT (id, cat, amount, score, ts, note) VALUES (s.id, s.cat, s.amount, NULL, NULL, %s)%s`,
		h.table, strings.Join(vals, ", "), sqlLit(fmt.Sprintf("m%d", step)), sqlLit(fmt.Sprintf("m%d", step)), bySource)
}

// overwrite rewrites the table from itself: some rows change, some go, most
// are carried over unchanged. With dynamic partition overwrite a partitioned
// table only loses the partitions the query writes.
func (h *sparkHistory) overwrite() string {
	m := 3 + h.r.IntN(4)
	k := h.r.IntN(m)
	return fmt.Sprintf(`INSERT OVERWRITE floe.%s SELECT id, cat, CASE WHEN id %% %d = %d THEN amount + 1 ELSE amount END, score, ts, note
		FROM floe.%s WHERE id %% %d <> %d`, h.table, m, (k+1)%m, h.table, m, k)
}

// compact rewrites data files (applying deletes) in a replace snapshot,
// which changelogs skip.
func (h *sparkHistory) compact() string {
	return fmt.Sprintf("CALL floe.system.rewrite_data_files(table => %s, options => map('rewrite-all', 'true'))", sqlLit(h.table))
}

// build creates the table and runs steps random statements, logging each.
// With compact set, the statement half way is a compaction.
func (h *sparkHistory) build(t *testing.T, steps int, compact bool) {
	t.Helper()
	l := h.l
	part := ""
	if h.cfg.partitioned {
		part = "PARTITIONED BY (cat, bucket(3, id))"
	}
	l.exec(fmt.Sprintf(`CREATE TABLE floe.%s (id BIGINT NOT NULL, cat STRING, amount DECIMAL(12,2), score DOUBLE, ts TIMESTAMP, note STRING)
		USING iceberg %s TBLPROPERTIES ('format-version'='%d', 'write.delete.mode'='%s', 'write.update.mode'='%s', 'write.merge.mode'='%s')`,
		h.table, part, h.cfg.version, h.cfg.mode, h.cfg.mode, h.cfg.mode))
	if h.r.IntN(2) == 0 {
		l.exec(fmt.Sprintf("ALTER TABLE floe.%s SET IDENTIFIER FIELDS id", h.table))
		h.log = append(h.log, "identifier fields: id")
	}
	for step := 0; step < steps; step++ {
		var st string
		switch k := h.r.IntN(11); {
		case compact && step == steps/2 && step > 0:
			st = h.compact()
		case step == 0 || k < 3:
			st = h.insert(step)
		case k < 5:
			st = h.update(step)
		case k < 7:
			st = h.delete()
		case k < 9:
			st = h.merge(step)
		case k < 10:
			st = h.overwrite()
		default:
			st = h.compact()
		}
		h.log = append(h.log, truncateText(strings.Join(strings.Fields(st), " "), 160))
		l.exec(st)
	}
	t.Logf("history of %s:\n  %s", h.table, strings.Join(h.log, "\n  "))
}

// TestSparkHistories: Spark writes random INSERT / UPDATE / DELETE / MERGE /
// INSERT OVERWRITE / compaction histories into floe's catalog, in
// copy-on-write and merge-on-read, format versions 2 and 3, partitioned and
// not. Then:
//
//   - scan: floe's scan of every snapshot equals Spark's read of it;
//   - changelog: floe changelog equals create_changelog_view for every shape
//     of options (identifier columns, compute_updates, net_changes) and many
//     ranges by id and timestamp, rows and errors; where the reference refuses
//     (delete files), floe must answer;
//   - apply: floe's changelog between two snapshots, applied to Spark's read
//     of the start, gives Spark's read of the end (this covers the
//     merge-on-read histories the reference refuses).
//
// FLOE_INTEROP_SEED reproduces a run; FLOE_INTEROP_STEPS sizes it.
func TestSparkHistories(t *testing.T) {
	seed := envInt(t, "FLOE_INTEROP_SEED", 20261130)
	steps := envInt(t, "FLOE_INTEROP_STEPS", 8)
	t.Logf("random seed %d, %d statements per history (set FLOE_INTEROP_SEED, FLOE_INTEROP_STEPS)", seed, steps)
	var configs []historyConfig
	for _, mode := range []string{"copy-on-write", "merge-on-read"} {
		for _, v := range []int{2, 3} {
			for _, p := range []bool{false, true} {
				configs = append(configs, historyConfig{mode, v, p})
			}
		}
	}
	for ci, cfg := range configs {
		t.Run(cfg.name(), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(ci)))
			l := newLab(t, "h")
			h := &sparkHistory{l: l, r: r, table: "h.t", cfg: cfg, rows: 24}
			// Every other configuration compacts half way (a replace snapshot,
			// which applies merge-on-read deletes and which changelogs skip).
			h.build(t, steps, ci%2 == 1)
			checkHistory(t, l, h.table, r, cfg.mode == "copy-on-write")
		})
	}
}

// readCache keeps the reference's reads of a table's snapshots.
type readCache struct {
	table string
	rows  map[int64]*rowjson.Table
}

// reader returns a function reading snapshots through l (a subtest's lab),
// each once.
func (c *readCache) reader(l *lab) func(int64) *rowjson.Table {
	return func(id int64) *rowjson.Table {
		if c.rows[id] == nil {
			c.rows[id] = l.sparkAt(c.table, id)
		}
		return c.rows[id]
	}
}

// checkHistory runs the scan, changelog and apply checks on a table's
// history. full asks for every changelog shape on the whole range (the
// copy-on-write histories, where the reference answers).
func checkHistory(t *testing.T, l *lab, table string, r *rand.Rand, full bool) {
	t.Helper()
	snaps := l.snapshots(table)
	if len(snaps) == 0 {
		t.Fatal("the history made no snapshot")
	}
	cache := &readCache{table: table, rows: map[int64]*rowjson.Table{}}
	t.Run("scan", func(t *testing.T) {
		l := l.with(t)
		read := cache.reader(l)
		for _, s := range snaps {
			if d := diffRows(read(s.SnapshotID), l.floeAt(table, s.SnapshotID)); d != "" {
				t.Errorf("floe scan of snapshot %d (%s) differs from Spark's read:\n%sreproduce with: floe table scan %s --snapshot %d",
					s.SnapshotID, s.Operation, d, table, s.SnapshotID)
			}
		}
	})
	main := chain(snaps, headOf(t, snaps, "main"))
	t.Run("changelog", func(t *testing.T) {
		l := l.with(t)
		read := cache.reader(l)
		counts := tally{}
		var opts []clOptions
		all := shapes([][]string{nil, {"id"}, {"id", "cat"}})
		if full {
			opts = append(opts, all...)
		}
		for _, rg := range ranges(r, main) {
			opts = append(opts, withShape(rg, all[r.IntN(len(all))]))
		}
		for _, o := range opts {
			kind, _ := l.compareChangelog(t, table, o)
			counts[kind]++
			if kind == refused && o.StartTS == nil && o.EndTS == nil && o.EndID != nil {
				// Where the reference refuses, check floe's answer by applying it.
				l.applyCheck(t, table, o.StartID, *o.EndID, o, read)
			}
		}
		t.Logf("%d option sets: %s", len(opts), counts)
		if counts[sameChanges] == 0 && counts[refused] == 0 {
			t.Error("no option set produced rows on either side: the check compared nothing")
		}
	})
	t.Run("apply", func(t *testing.T) {
		l := l.with(t)
		read := cache.reader(l)
		shapes := applyShapes("id")
		var prev *int64
		for _, s := range main {
			l.applyCheck(t, table, prev, s.SnapshotID, shapes[r.IntN(len(shapes))], read)
			prev = i64(s.SnapshotID)
		}
		for k := 0; k < 4 && len(main) > 1; k++ {
			// A start equal to the end is no range (the reference refuses
			// it too; the changelog check covers that).
			i := r.IntN(len(main) - 1)
			j := i + 1 + r.IntN(len(main)-1-i)
			var start *int64
			if k > 0 {
				start = i64(main[i].SnapshotID)
			}
			l.applyCheck(t, table, start, main[j].SnapshotID, shapes[r.IntN(len(shapes))], read)
		}
	})
}
