//go:build interop

package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// mergeConfig is one kind of target table for TestMergeMatchesSpark.
type mergeConfig struct {
	mode      string // write.{delete,update,merge}.mode
	version   int
	partition string // floe --partition-by, "" for none
}

func (c mergeConfig) name() string {
	m := "cow"
	if c.mode == "merge-on-read" {
		m = "mor"
	}
	p := "unpartitioned"
	if c.partition != "" {
		p = strings.NewReplacer("(", "", ")", "", ",", "", " ", "").Replace(c.partition)
	}
	return fmt.Sprintf("%s-v%d-%s", m, c.version, p)
}

// mergeSchema is the target's schema; a source table has the same columns
// and _change_type.
const mergeSchema = "id long not null, cat string, amount decimal(12,2), score double, qty int, ts timestamptz, d date, note string"

var mergeColumns = []string{"id", "cat", "amount", "score", "qty", "ts", "d", "note"}

// mergeTwin is two warehouses holding the same tables under the same names:
// floe writes to "floe"'s, Spark to "spark"'s, so both run the very same
// statement text. Each lab's Spark session mounts its own warehouse as
// catalog floe (the current catalog), and input files are written into both.
type mergeTwin struct {
	t      *testing.T
	r      *rand.Rand
	floe   *lab // the table floe changes
	spark  *lab // the copy Spark changes
	nextID int
	files  int
	srcs   int
	rows   int
	log    []string
	// last is Spark's read of its table after the last step; changed
	// counts the steps that changed it.
	last    *rowjson.Table
	changed int
}

// newTwinLab is newLab with a session name of its own (two labs in one test).
func newTwinLab(t *testing.T, namespace, name string) *lab {
	t.Helper()
	spark := interop.SharedSpark(t)
	wh, err := interop.NewWarehouse(filepath.Join(t.TempDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, ctx: testCtx(t), wh: wh, floe: wh.Floe(t), spark: spark, py: interop.SharedPy(t), pyCat: wh.PyIceberg()}
	if _, err := l.floe.Run(l.ctx, "namespace", "create", namespace); err != nil {
		t.Fatal(err)
	}
	l.sess = "m_" + strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return c
		}
		return '_'
	}, t.Name()) + "_" + name
	if err := spark.NewSession(l.ctx, l.sess, sessionConf(wh.SparkConf())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = spark.DropSession(context.Background(), l.sess) })
	// Unqualified ns.t names the warehouse's table, as in floe.
	l.exec("USE floe")
	return l
}

// both runs a floe command on both warehouses (setup: create, append).
func (m *mergeTwin) both(args ...string) {
	m.t.Helper()
	for _, l := range []*lab{m.floe, m.spark} {
		if _, err := l.floe.Run(l.ctx, args...); err != nil {
			m.t.Fatal(err)
		}
	}
}

// writeRows writes rows as a JSON Lines file under the same name in both
// warehouses and returns that name (floe runs in the warehouse directory).
func (m *mergeTwin) writeRows(rows []map[string]any) string {
	m.t.Helper()
	m.files++
	name := fmt.Sprintf("rows-%d.jsonl", m.files)
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			m.t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	for _, l := range []*lab{m.floe, m.spark} {
		if err := os.WriteFile(filepath.Join(l.wh.Dir, name), []byte(b.String()), 0o644); err != nil {
			m.t.Fatal(err)
		}
	}
	return name
}

// row is one random row in floe's JSON input form: NULLs in every non-key
// column, NaN and negative amounts now and then.
func (m *mergeTwin) row(id int, note string) map[string]any {
	r := m.r
	null := func(v any) any {
		if r.IntN(8) == 0 {
			return nil
		}
		return v
	}
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(365*24*3600*1e6)) * time.Microsecond)
	var score any = float64(r.IntN(100_000)) / 64
	if r.IntN(20) == 0 {
		score = "NaN"
	}
	if r.IntN(5) == 0 {
		note = randString(r)
	}
	return map[string]any{
		"id":     id,
		"cat":    null(layoutCats[r.IntN(3)]),
		"amount": null(decimalString(int64(r.IntN(2_000_000)-200_000), 2)),
		"score":  null(score),
		"qty":    null(r.IntN(100) - 20),
		"ts":     null(at.Format("2006-01-02T15:04:05.000000Z")),
		"d":      null(at.Add(-time.Duration(r.IntN(90)) * 24 * time.Hour).Format("2006-01-02")),
		"note":   null(note),
	}
}

// setup creates the target in both warehouses and loads the same random
// rows into both in a few appends (several data files).
func (m *mergeTwin) setup(cfg mergeConfig) {
	m.t.Helper()
	args := []string{"table", "create", "ns.t", "--schema", mergeSchema, "--identifier", "id",
		"--format-version", fmt.Sprint(cfg.version)}
	for _, k := range []string{"write.delete.mode", "write.update.mode", "write.merge.mode"} {
		args = append(args, "--property", k+"="+cfg.mode)
	}
	if cfg.partition != "" {
		args = append(args, "--partition-by", cfg.partition)
	}
	m.both(args...)
	for k := 1 + m.r.IntN(3); k > 0; k-- {
		n := 1 + m.r.IntN(m.rows)
		rows := make([]map[string]any, n)
		for i := range rows {
			rows[i] = m.row(m.nextID, "init")
			m.nextID++
		}
		m.both("table", "append", "ns.t", m.writeRows(rows))
	}
	m.log = append(m.log, fmt.Sprintf("created %s, %d initial rows", cfg.name(), m.nextID))
}

// source writes a random batch of change rows with unique ids (existing ones
// and new ones), as a file and as a new source table ns.sN in both
// warehouses, and returns both names. Some UPDATE_AFTER rows come with their
// UPDATE_BEFORE image (same id) when images is set. With dup set, some ids
// of existing rows appear twice.
func (m *mergeTwin) source(step int, images, dup bool, existing []int) (file, tbl string) {
	m.t.Helper()
	r := m.r
	n := 1 + r.IntN(max(m.rows/2, 1))
	seen := map[int]bool{}
	var rows []map[string]any
	for len(rows) < n {
		id := r.IntN(max(m.nextID, 1))
		if r.IntN(3) == 0 {
			id = m.nextID
			m.nextID++
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		row := m.row(id, fmt.Sprintf("n%d", step))
		switch k := r.IntN(10); {
		case k < 3:
			row["_change_type"] = "INSERT"
		case k < 7:
			row["_change_type"] = "UPDATE_AFTER"
			if images && r.IntN(2) == 0 {
				before := m.row(id, "before")
				before["_change_type"] = "UPDATE_BEFORE"
				rows = append(rows, before)
			}
		default:
			row["_change_type"] = "DELETE"
		}
		rows = append(rows, row)
	}
	if dup {
		for k := 1 + r.IntN(2); k > 0 && len(existing) > 0; k-- {
			row := m.row(existing[r.IntN(len(existing))], "dup")
			row["_change_type"] = "UPDATE_AFTER"
			rows = append(rows, row, m.row(row["id"].(int), "dup2"))
			rows[len(rows)-1]["_change_type"] = "UPDATE_AFTER"
		}
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	file = m.writeRows(rows)
	m.srcs++
	tbl = fmt.Sprintf("ns.s%d", m.srcs)
	m.both("table", "create", tbl, "--schema", mergeSchema+", _change_type string")
	m.both("table", "append", tbl, file)
	return file, tbl
}

// events writes a random batch of raw CDC events, as a file and as a new
// source table ns.sN in both warehouses: 1 to 4 events per id (existing ids
// and new ones) with increasing, distinct seq values, every UPDATE_AFTER
// with an UPDATE_BEFORE image of the same seq half the time.
func (m *mergeTwin) events(step int) (file, tbl string) {
	m.t.Helper()
	r := m.r
	var rows []map[string]any
	seq := 0
	for id := range sourceIDs(r, &m.nextID, 1+r.IntN(max(m.rows/3, 1))) {
		for e := 1 + r.IntN(4); e > 0; e-- {
			seq += 1 + r.IntN(3)
			row := m.row(id, fmt.Sprintf("e%d", step))
			row["seq"] = seq
			row["_change_type"] = pick(r, "INSERT", "UPDATE_AFTER", "UPDATE_AFTER", "DELETE")
			if row["_change_type"] == "UPDATE_AFTER" && r.IntN(2) == 0 {
				before := m.row(id, "before")
				before["seq"], before["_change_type"] = seq, "UPDATE_BEFORE"
				rows = append(rows, before)
			}
			rows = append(rows, row)
		}
	}
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	file = m.writeRows(rows)
	m.srcs++
	tbl = fmt.Sprintf("ns.s%d", m.srcs)
	m.both("table", "create", tbl, "--schema", mergeSchema+", _change_type string, seq long")
	m.both("table", "append", tbl, file)
	return file, tbl
}

// sparkParquet has Spark write the source table src as one Parquet file
// (with Spark's default Parquet encodings of timestamps, decimals and dates) in
// floe's warehouse and returns its name there.
func (m *mergeTwin) sparkParquet(src string) string {
	m.t.Helper()
	m.files++
	dir := filepath.Join(m.floe.wh.Dir, fmt.Sprintf("spark-%d", m.files))
	code := "spark.table(args['table']).coalesce(1).write.mode('overwrite').parquet(args['dir'])"
	if _, err := m.floe.spark.Python(m.floe.ctx, m.floe.sess, code, map[string]any{"table": src, "dir": dir}); err != nil {
		m.t.Fatalf("Spark writing %s as Parquet: %v", src, err)
	}
	parts, err := filepath.Glob(filepath.Join(dir, "part-*.parquet"))
	if err != nil || len(parts) != 1 {
		m.t.Fatalf("Spark wrote %v for %s (err %v), want one Parquet part", parts, src, err)
	}
	name := fmt.Sprintf("source-%d.parquet", m.files)
	if err := os.Rename(parts[0], filepath.Join(m.floe.wh.Dir, name)); err != nil {
		m.t.Fatal(err)
	}
	return name
}

// existingIDs lists the target's ids (Spark's read of floe's table).
func (m *mergeTwin) existingIDs() []int {
	m.t.Helper()
	var ids []int
	for _, v := range column(m.t, m.spark.sql("SELECT id FROM ns.t"), "id") {
		n, _ := v.(json.Number).Int64()
		ids = append(ids, int(n))
	}
	slices.Sort(ids)
	return ids
}

// compare reads both tables with Spark and with floe: all four reads must
// be the same multiset of rows.
func (m *mergeTwin) compare(what string) {
	m.t.Helper()
	ref := m.spark.sql("SELECT * FROM ns.t")
	if d := diffRows(m.last, ref); d != "" {
		m.changed++
	}
	m.last = ref
	reads := []struct {
		name string
		rows func() (*rowjson.Table, error)
	}{
		{"Spark's read of floe's table", func() (*rowjson.Table, error) { return m.floe.spark.SQL(m.floe.ctx, m.floe.sess, "SELECT * FROM ns.t") }},
		{"floe's scan of floe's table", func() (*rowjson.Table, error) {
			return m.floe.floe.TableRows(m.floe.ctx, "ns.t", "table", "scan", "ns.t")
		}},
		{"floe's scan of Spark's table", func() (*rowjson.Table, error) {
			return m.spark.floe.TableRows(m.spark.ctx, "ns.t", "table", "scan", "ns.t")
		}},
	}
	for _, rd := range reads {
		got, err := rd.rows()
		if err != nil {
			m.t.Fatalf("%s: %v", rd.name, err)
		}
		if d := diffRows(ref, got); d != "" {
			m.t.Fatalf("after %s, %s differs from Spark's table (want = Spark's MERGE result):\n%s\nhistory:\n  %s",
				what, rd.name, d, strings.Join(m.log, "\n  "))
		}
	}
}

// applyStep runs floe apply with a random change file on floe's table and
// the equivalent MERGE INTO on Spark's copy.
func (m *mergeTwin) applyStep(step int) {
	m.t.Helper()
	sequenced := m.r.IntN(2) == 0
	var file, src, using string
	if sequenced {
		// Raw CDC events, several per id: apply collapses each id's events in
		// seq order (the last one wins); Spark's source keeps each id's last.
		file, src = m.events(step)
		using = fmt.Sprintf(`(SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY id ORDER BY seq DESC) AS rn
			FROM %s WHERE _change_type <> 'UPDATE_BEFORE') WHERE rn = 1)`, src)
	} else {
		file, src = m.source(step, true, false, nil)
		using = fmt.Sprintf("(SELECT * FROM %s WHERE _change_type <> 'UPDATE_BEFORE')", src)
	}
	var set, vals []string
	for _, c := range mergeColumns {
		set = append(set, fmt.Sprintf("t.%s = s.%s", c, c))
		vals = append(vals, "s."+c)
	}
	sql := fmt.Sprintf(`MERGE INTO ns.t t USING %s s ON t.id = s.id
		WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
		WHEN MATCHED THEN UPDATE SET %s
		WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT (%s) VALUES (%s)`,
		using, strings.Join(set, ", "), strings.Join(mergeColumns, ", "), strings.Join(vals, ", "))
	cmd := []string{"apply", "ns.t", "--changes", file, "--key", "id"}
	if sequenced {
		cmd = append(cmd, "--sequence-column", "seq")
	}
	if m.r.IntN(2) == 0 {
		// Forced delete files on any table: later copy-on-write steps must
		// apply them when they rewrite (floe's work-around of iceberg-go's
		// rewrite, which ignores delete files).
		cmd = append(cmd, "--delete-mode", pick(m.r, "position", "equality"))
	}
	m.log = append(m.log, fmt.Sprintf("step %d: floe %s  ||  Spark: %s", step, strings.Join(cmd, " "), oneLine(sql)))
	if _, err := m.floe.floe.Run(m.floe.ctx, cmd...); err != nil {
		m.t.Fatalf("step %d: floe %s: %v\nSpark: %s", step, strings.Join(cmd, " "), err, sql)
	}
	if err := m.spark.spark.Exec(m.spark.ctx, m.spark.sess, sql); err != nil {
		m.t.Fatalf("step %d: Spark: %v\nfloe %s", step, err, strings.Join(cmd, " "))
	}
	m.compare(fmt.Sprintf("step %d (floe %s vs Spark %s)", step, strings.Join(cmd, " "), oneLine(sql)))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// pick returns one of options at random.
func pick[T any](r *rand.Rand, options ...T) T { return options[r.IntN(len(options))] }

// Conditions and assignments of the random MERGE statements. They avoid
// IN on the partition column cat (TestReferenceInOnNullPartition).
var (
	matchedConds = []string{
		"s._change_type = 'DELETE'", "t.amount < s.amount", "s.note IS NULL", "t.id % 3 = 1",
		"t.cat = 'a' OR s.qty > 40", "s.score > t.score", "COALESCE(t.qty, 0) + COALESCE(s.qty, 0) > 50",
		"t.ts < s.ts", "s.d >= DATE '2024-06-01'", "t.note LIKE 'n%'", "t.cat <=> s.cat",
		"CASE WHEN t.qty IS NULL THEN s.qty > 0 ELSE t.qty < 10 END",
	}
	sourceConds = []string{
		"s._change_type <> 'DELETE'", "s.cat IS NOT NULL", "s.id % 2 = 0", "s.amount > 100",
		"s.cat IN ('a', 'c')", "s.ts >= TIMESTAMP '2024-06-01 00:00:00'", "s.qty BETWEEN 0 AND 30 OR s.note IS NULL",
	}
	targetConds = []string{
		"t.id % 7 = 3", "t.cat = 'b'", "t.amount < 0", "t.note IS NULL", "t.qty BETWEEN 0 AND 20",
		"t.d < DATE '2024-03-01'", "t.score > 1000",
	}
	// matchedSets are assignments by target column, each using t and s.
	matchedSets = map[string][]string{
		"cat":    {"t.cat = s.cat", "t.cat = COALESCE(s.cat, t.cat)", "t.cat = 'c'"},
		"amount": {"t.amount = t.amount + s.amount", "t.amount = t.amount / 3", "t.amount = NULL", "t.amount = s.amount * 2", "t.amount = -t.amount"},
		"score":  {"t.score = s.score * 2", "t.score = t.score + s.qty", "t.score = s.score / 3"},
		"qty":    {"t.qty = CASE WHEN s.qty > t.qty THEN s.qty ELSE t.qty END", "t.qty = t.qty - 1", "t.qty = s.qty % 7", "t.qty = ABS(s.qty)"},
		"ts":     {"t.ts = s.ts", "t.ts = COALESCE(t.ts, s.ts)"},
		"d":      {"t.d = COALESCE(s.d, t.d)", "t.d = s.d"},
		"note":   {"t.note = s.note", "t.note = CONCAT(t.note, '+', s.note)", "t.note = t.note || 'x'", "t.note = UPPER(s.note)", "t.note = 'm'"},
	}
	bySourceSets = map[string][]string{
		"note":   {"t.note = 'orphan'", "t.note = LOWER(t.note)"},
		"qty":    {"t.qty = COALESCE(t.qty, 0) + 1"},
		"amount": {"t.amount = t.amount * 2"},
		"cat":    {"t.cat = NULL", "t.cat = 'a'"},
	}
	inserts = []string{
		"INSERT *",
		"INSERT (id, cat, amount, note) VALUES (s.id, s.cat, s.amount + 1, 'ins')",
		"INSERT (id, note, qty, score) VALUES (s.id, CONCAT('i', s.note), s.qty * 2, s.score)",
		"INSERT (id, cat, amount, score, qty, ts, d, note) VALUES (s.id, UPPER(s.cat), s.amount, s.score, s.qty, s.ts, s.d, s.note)",
	}
)

// assignments picks 1 to 3 distinct target columns from sets.
func assignments(r *rand.Rand, sets map[string][]string) string {
	cols := make([]string, 0, len(sets))
	for c := range sets {
		cols = append(cols, c)
	}
	slices.Sort(cols)
	r.Shuffle(len(cols), func(i, j int) { cols[i], cols[j] = cols[j], cols[i] })
	var out []string
	for _, c := range cols[:1+r.IntN(min(3, len(cols)))] {
		out = append(out, pick(r, sets[c]...))
	}
	return strings.Join(out, ", ")
}

// randomMerge returns a random MERGE INTO statement on ns.t from src.
func (m *mergeTwin) randomMerge(src string) string {
	r := m.r
	cond := func(conds []string, last bool) string {
		// Only the last clause of a kind may go without a condition.
		if last && r.IntN(3) == 0 {
			return ""
		}
		return " AND " + pick(r, conds...)
	}
	var clauses []string
	nm := r.IntN(3)
	for i := 0; i < nm; i++ {
		c := cond(matchedConds, i == nm-1)
		switch {
		case r.IntN(3) == 0:
			clauses = append(clauses, "WHEN MATCHED"+c+" THEN DELETE")
		case r.IntN(5) == 0:
			clauses = append(clauses, "WHEN MATCHED"+c+" THEN UPDATE SET *")
		default:
			clauses = append(clauses, "WHEN MATCHED"+c+" THEN UPDATE SET "+assignments(r, matchedSets))
		}
	}
	nn := r.IntN(3)
	for i := 0; i < nn; i++ {
		kw := pick(r, "WHEN NOT MATCHED", "WHEN NOT MATCHED BY TARGET")
		clauses = append(clauses, kw+cond(sourceConds, i == nn-1)+" THEN "+pick(r, inserts...))
	}
	nb := r.IntN(3)
	if r.IntN(2) == 0 {
		nb = 0 // a by-source clause touches much of the table: not every time
	}
	for i := 0; i < nb; i++ {
		c := cond(targetConds, i == nb-1)
		if r.IntN(2) == 0 {
			clauses = append(clauses, "WHEN NOT MATCHED BY SOURCE"+c+" THEN DELETE")
		} else {
			clauses = append(clauses, "WHEN NOT MATCHED BY SOURCE"+c+" THEN UPDATE SET "+assignments(r, bySourceSets))
		}
	}
	if len(clauses) == 0 {
		clauses = append(clauses, "WHEN NOT MATCHED THEN INSERT *")
		nn = 1
	}
	on := "t.id = s.id"
	// A condition beyond the key in ON leaves rows of existing ids
	// unmatched; with an insert clause they would become second rows of
	// the id, and floe apply upserts by key (one row per id, by design),
	// where a MERGE updates every matching row: the apply steps would
	// then differ by definition. So the ON extras go only without inserts.
	if nn == 0 && r.IntN(3) == 0 {
		on += pick(r, " AND s._change_type <> 'DELETE'", " AND t.cat <=> s.cat", " AND s.qty >= 0")
	}
	return fmt.Sprintf("MERGE INTO ns.t AS t USING %s AS s ON %s\n%s", src, on, strings.Join(clauses, "\n"))
}

// mergeStep runs the same random MERGE INTO with floe on floe's table and
// with Spark on its copy. With dup, the source repeats ids of existing rows:
// both must fail, with MERGE_CARDINALITY_VIOLATION, and change nothing.
func (m *mergeTwin) mergeStep(step int, dup bool) {
	m.t.Helper()
	var existing []int
	if dup {
		existing = m.existingIDs()
	}
	file, src := m.source(step, false, dup, existing)
	sql := m.randomMerge(src)
	if dup {
		// A statement that must check cardinality: one conditional
		// matched clause at least.
		sql = fmt.Sprintf("MERGE INTO ns.t AS t USING %s AS s ON t.id = s.id\nWHEN MATCHED AND s.qty IS NULL THEN DELETE\nWHEN MATCHED THEN UPDATE SET %s\nWHEN NOT MATCHED THEN INSERT *",
			src, assignments(m.r, matchedSets))
	}
	// Now and then floe reads the source from the file the source table
	// was loaded from (typed by the target's columns), Spark still from
	// the table: the statements then differ in that name only.
	floeSQL := sql
	if m.r.IntN(3) == 0 {
		if m.r.IntN(2) == 0 {
			file = m.sparkParquet(src)
		}
		floeSQL = strings.Replace(sql, "USING "+src+" AS s", "USING '"+file+"' AS s", 1)
		m.log = append(m.log, fmt.Sprintf("step %d: floe merge %s  ||  Spark: %s", step, oneLine(floeSQL), oneLine(sql)))
	} else {
		m.log = append(m.log, fmt.Sprintf("step %d: floe merge and Spark: %s", step, oneLine(sql)))
	}
	_, ferr := m.floe.floe.Run(m.floe.ctx, "merge", floeSQL)
	serr := m.spark.spark.Exec(m.spark.ctx, m.spark.sess, sql)
	switch {
	case ferr == nil && serr == nil:
		if dup && len(existing) > 0 {
			m.t.Fatalf("step %d: both accepted a source with duplicate matched ids:\n%s", step, sql)
		}
	case ferr != nil && serr != nil:
		var fe *interop.FloeError
		if !errors.As(ferr, &fe) {
			m.t.Fatalf("step %d: floe merge: %v", step, ferr)
		}
		if !dup {
			m.t.Fatalf("step %d: both fail:\nfloe: %v\nSpark: %v\nstatement:\n%s", step, ferr, serr, sql)
		}
		if !strings.Contains(fe.Stderr, "MERGE_CARDINALITY_VIOLATION") || !strings.Contains(serr.Error(), "MERGE_CARDINALITY_VIOLATION") {
			m.t.Fatalf("step %d: both fail, but not both with MERGE_CARDINALITY_VIOLATION:\nfloe: %s\nSpark: %s", step, fe.Stderr, referenceMessage(serr))
		}
		m.log[len(m.log)-1] += "  (both: MERGE_CARDINALITY_VIOLATION)"
	case ferr != nil:
		m.t.Fatalf("step %d: floe merge fails where Spark succeeds: %v\nstatement:\n%s\nhistory:\n  %s", step, ferr, floeSQL, strings.Join(m.log, "\n  "))
	default:
		m.t.Fatalf("step %d: Spark fails where floe succeeds: %s\nstatement:\n%s\nhistory:\n  %s", step, referenceMessage(serr), sql, strings.Join(m.log, "\n  "))
	}
	m.compare(fmt.Sprintf("step %d (floe merge %s / Spark: %s)", step, oneLine(floeSQL), oneLine(sql)))
}

// TestMergeMatchesSpark: floe apply and floe merge on a table, and Spark's
// MERGE INTO on a copy of it (another warehouse with the same tables under
// the same names, so both run the same statement text) from the same source
// table, leave identical tables: after every step Spark's and floe's reads
// of both tables are the same rows. Copy-on-write and merge-on-read, format
// v2 and v3, partitioned (identity, bucket, day) and not. Steps alternate at
// random between apply (with UPDATE_BEFORE images, which apply ignores, and
// the MERGE that means the same; or raw CDC events collapsed by
// --sequence-column against a MERGE from each id's last event; sometimes with
// forced position or equality deletes) and random MERGE statements (conditional
// matched update/delete, UPDATE SET * and expressions, NOT MATCHED inserts
// with conditions and column lists, NOT MATCHED BY SOURCE delete/update).
// floe merge sometimes reads the source from the JSON Lines file the source
// table was loaded from. One step per history uses a source with duplicate
// ids, on which both must fail with MERGE_CARDINALITY_VIOLATION.
//
// FLOE_INTEROP_SEED replays a run; FLOE_INTEROP_STEPS and FLOE_INTEROP_ROWS
// size it.
func TestMergeMatchesSpark(t *testing.T) {
	seed := envInt(t, "FLOE_INTEROP_SEED", 20261130)
	steps := envInt(t, "FLOE_INTEROP_STEPS", 8)
	rows := envInt(t, "FLOE_INTEROP_ROWS", 400)
	t.Logf("random seed %d, %d steps per history, about %d rows (set FLOE_INTEROP_SEED, FLOE_INTEROP_STEPS, FLOE_INTEROP_ROWS)", seed, steps, rows)
	configs := []mergeConfig{
		{"copy-on-write", 2, ""},
		{"merge-on-read", 2, "cat, bucket(4, id)"},
		{"copy-on-write", 3, "day(ts)"},
		{"merge-on-read", 3, "bucket(3, id)"},
	}
	for ci, cfg := range configs {
		t.Run(cfg.name(), func(t *testing.T) {
			m := &mergeTwin{last: &rowjson.Table{}, t: t, r: rand.New(rand.NewPCG(uint64(seed), uint64(ci)+100)), rows: max(rows/4, 2)}
			m.floe = newTwinLab(t, "ns", "floe")
			m.spark = newTwinLab(t, "ns", "spark")
			m.setup(cfg)
			m.compare("setup")
			dupAt := m.r.IntN(max(steps, 1))
			for step := 0; step < steps; step++ {
				switch {
				case step == dupAt:
					m.mergeStep(step, true)
				case m.r.IntN(3) == 0:
					m.applyStep(step)
				default:
					m.mergeStep(step, false)
				}
			}
			t.Logf("history (%d of %d steps changed the table, %d rows now):\n  %s", m.changed-1, steps, len(m.last.Rows), strings.Join(m.log, "\n  "))
			if steps > 1 && m.changed < 2 {
				t.Error("no step changed the table: the history compared nothing")
			}
		})
	}
}
