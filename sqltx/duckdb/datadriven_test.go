//go:build cgo

package duckdb_test

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/tableops"
)

// sourceConfigs are the source table layouts every script runs on: the
// same history gives copy-on-write rewrites, v2 position deletes and v3
// deletion vectors, and must give the same output.
var sourceConfigs = []struct {
	name    string
	version string
	mor     bool
}{
	{"cow-v2", "2", false},
	{"cow-v3", "3", false},
	{"mor-v2", "2", true},
	{"mor-v3", "3", true},
}

// TestRuleScripts runs the scripts of testdata/rules, one per rule of
// docs/sql-transforms.md, on every source configuration. A script is a
// history of source changes with builds of SQL transforms in between;
// each build prints the rule floe used (incremental or full, and why) and
// the destination's rows, and "check" compares the destination with the
// query run in full by DuckDB on the sources' current rows, read by
// floe's scan: not through the incremental machinery.
//
// Commands:
//
//	create-table name=ns.t [key=a,b] [format-version=2|3] [mode=cow|mor]
//	<schema: "col type [not null]" per line>
//	insert ns.t
//	<tuples>
//	delete ns.t
//	<predicate>
//	update ns.t
//	<col = expr, ... WHERE predicate>
//	compact ns.t
//	build name=q [key=a,b]      (the query is the input on the first build of q)
//	check name=q
//	plan [key=a,b]              (the rule a query would follow, without a build)
//	<query>
//
// Without format-version and mode, create-table takes the configuration's
// (-short runs two configurations: cow-v2 and mor-v3).
// Subtests (datadriven's "subtest NAME") each start with an empty catalog.
func TestRuleScripts(t *testing.T) { runScripts(t, "testdata/rules") }

func runScripts(t *testing.T, dir string) {
	for _, cfg := range sourceConfigs {
		t.Run(cfg.name, func(t *testing.T) {
			if testing.Short() && cfg.name != "cow-v2" && cfg.name != "mor-v3" {
				t.Skip("-short runs the scripts on cow-v2 and mor-v3 only")
			}
			datadriven.Walk(t, dir, func(t *testing.T, path string) {
				envs := map[string]*scriptEnv{}
				datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
					se := envs[t.Name()]
					if se == nil {
						se = &scriptEnv{Env: tabletest.New(t), version: cfg.version, mor: cfg.mor,
							transforms: map[string]*scriptTransform{}, layouts: map[string]layout{}}
						envs[t.Name()] = se
					}
					out, err := se.run(d)
					if err != nil {
						return "error: " + numbers.ReplaceAllString(err.Error(), "N") + "\n"
					}
					return out
				})
			})
		})
	}
}

// numbers hides snapshot ids and other long numbers in errors.
var numbers = regexp.MustCompile(`[0-9]{8,}`)

// operation hides the operation of a source snapshot, which depends on the
// layout (copy-on-write deletes are overwrites).
var operation = regexp.MustCompile(`\(operation (overwrite|delete)\)`)

// normalize makes a build's reason the same on every source layout.
func normalize(reason string) string {
	return operation.ReplaceAllString(numbers.ReplaceAllString(reason, "N"), "(operation overwrite or delete)")
}

type scriptEnv struct {
	*tabletest.Env
	version    string
	mor        bool
	tables     []string // ns.t, in order of creation
	layouts    map[string]layout
	transforms map[string]*scriptTransform
}

// layout is how a table was created: its format version and whether it
// is merge-on-read.
type layout struct {
	version int
	mor     bool
}

type scriptTransform struct {
	tr    *transform.Transform
	query string
	keys  []string
	dst   string
}

func (se *scriptEnv) run(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "create-table":
		return "", se.createTable(d)
	case "insert", "delete", "update", "compact":
		return "", se.change(d)
	case "build":
		return se.build(d)
	case "check":
		return se.check(d)
	case "plan":
		return se.plan(d)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func argOf(d *datadriven.TestData, key string) (string, bool) {
	a, ok := d.Arg(key)
	if !ok {
		return "", false
	}
	return strings.Join(a.Vals, ","), true
}

func keysOf(d *datadriven.TestData) []string {
	v, ok := argOf(d, "key")
	if !ok || v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// tableArg is the first argument without a value: the table a change
// writes.
func tableArg(d *datadriven.TestData) (string, error) {
	if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) != 0 {
		return "", fmt.Errorf("%s: name the table (ns.t) first", d.Cmd)
	}
	return d.CmdArgs[0].Key, nil
}

func (se *scriptEnv) ident(name string) (table.Identifier, error) {
	parts, err := catalog.ParseName(name)
	if err != nil {
		return nil, err
	}
	return table.Identifier(parts), nil
}

func (se *scriptEnv) createTable(d *datadriven.TestData) error {
	name, ok := argOf(d, "name")
	if !ok {
		return fmt.Errorf("create-table: name=ns.t is required")
	}
	version, mor := se.version, se.mor
	if v, ok := argOf(d, "format-version"); ok {
		version = v
	}
	if v, ok := argOf(d, "mode"); ok {
		switch v {
		case "cow":
			mor = false
		case "mor":
			mor = true
		default:
			return fmt.Errorf("create-table: mode %q: want cow or mor", v)
		}
	}
	props := iceberg.Properties{"format-version": version}
	if mor {
		for _, k := range []string{"write.delete.mode", "write.update.mode", "write.merge.mode"} {
			props[k] = "merge-on-read"
		}
	}
	var cols []string
	for _, l := range strings.Split(d.Input, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			cols = append(cols, strings.TrimSuffix(l, ","))
		}
	}
	sc, err := ddl.ParseSchema(strings.Join(cols, ", "), keysOf(d))
	if err != nil {
		return err
	}
	ident, err := se.ident(name)
	if err != nil {
		return err
	}
	if err := se.Cat.CreateNamespace(se.Ctx, ident[:len(ident)-1], true); err != nil {
		return err
	}
	if _, err := tableops.Create(se.Ctx, se.Cat, ident, sc, *iceberg.UnpartitionedSpec, props); err != nil {
		return err
	}
	se.tables = append(se.tables, catalog.FormatName(ident))
	v, _ := strconv.Atoi(version)
	se.layouts[catalog.FormatName(ident)] = layout{version: v, mor: mor}
	return nil
}

// change runs one table operation through floe's write paths and checks
// that it took the path the table's layout asks for: copy-on-write
// rewrites, v2 position deletes or v3 deletion vectors.
func (se *scriptEnv) change(d *datadriven.TestData) error {
	name, err := tableArg(d)
	if err != nil {
		return err
	}
	ident, err := se.ident(name)
	if err != nil {
		return err
	}
	tgt := tableops.Target{Catalog: se.Cat, Ident: ident}
	tbl, err := se.Cat.Load(se.Ctx, ident)
	if err != nil {
		return err
	}
	input := strings.TrimSpace(d.Input)
	var o *tableops.Outcome
	switch d.Cmd {
	case "insert":
		data, err := tabletest.ParseTuples(input)
		if err != nil {
			return err
		}
		o, err = tableops.Append(se.Ctx, tgt, tabletest.Seq(tabletest.ArrowSchema(tbl), data))
		if err != nil {
			return err
		}
	case "delete":
		p, err := expr.CompilePredicate(tbl.Schema(), input)
		if err != nil {
			return err
		}
		if o, err = tableops.Delete(se.Ctx, tgt, &tableops.Predicate{Iceberg: p.Iceberg, Columns: p.Columns, Match: p.Match}); err != nil {
			return err
		}
	case "update":
		set, where := input, "TRUE"
		if i := strings.Index(strings.ToUpper(input), " WHERE "); i >= 0 {
			set, where = input[:i], input[i+len(" WHERE "):]
		}
		p, err := expr.CompilePredicate(tbl.Schema(), where)
		if err != nil {
			return err
		}
		as, err := expr.CompileAssignments(tbl.Schema(), set)
		if err != nil {
			return err
		}
		assign := func(ctx context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
			sel, err := rows.Select(ctx, rec, touched)
			if err != nil {
				return nil, err
			}
			defer sel.Release()
			return as.Apply(ctx, sel)
		}
		if o, err = tableops.Update(se.Ctx, tgt, &tableops.Predicate{Iceberg: p.Iceberg, Columns: p.Columns, Match: p.Match}, assign); err != nil {
			return err
		}
	case "compact":
		if o, err = tableops.Compact(se.Ctx, tgt); err != nil {
			return err
		}
	}
	if o.SnapshotID == 0 {
		return fmt.Errorf("%s %s committed nothing (a script's changes must change something)", d.Cmd, name)
	}
	return se.checkLayout(d.Cmd, name, ident)
}

// checkLayout fails when the snapshot a delete or update committed is not
// of the kind the table's layout makes: copy-on-write adds no delete file,
// merge-on-read adds position delete files on v2 and deletion vectors
// (Puffin) on v3.
func (se *scriptEnv) checkLayout(op, name string, ident table.Identifier) error {
	if op != "delete" && op != "update" {
		return nil
	}
	tbl, err := se.Cat.Load(se.Ctx, ident)
	if err != nil {
		return err
	}
	fs, err := tbl.FS(se.Ctx)
	if err != nil {
		return err
	}
	snap := tbl.CurrentSnapshot()
	st, err := scan.LoadState(se.Ctx, fs, tbl.Metadata(), snap)
	if err != nil {
		return err
	}
	var pos, dvs int
	for _, e := range st.Deletes {
		switch {
		case e.SnapshotID != snap.SnapshotID:
		case e.File.ContentType() != iceberg.EntryContentPosDeletes:
			return fmt.Errorf("%s %s: an equality delete file: %s", op, name, e.Path())
		case e.File.FileFormat() == iceberg.PuffinFile:
			dvs++
		default:
			pos++
		}
	}
	want := se.layouts[catalog.FormatName(ident)]
	if v := tbl.Metadata().Version(); v != want.version {
		return fmt.Errorf("%s %s: the table has format version %d, want %d", op, name, v, want.version)
	}
	switch mor, v := want.mor, want.version; {
	case !mor && pos+dvs > 0:
		return fmt.Errorf("%s %s: the copy-on-write table got delete files", op, name)
	case mor && v == 2 && (pos == 0 || dvs > 0):
		return fmt.Errorf("%s %s: merge-on-read v2 wrote %d position delete files and %d deletion vectors", op, name, pos, dvs)
	case mor && v >= 3 && (dvs == 0 || pos > 0):
		return fmt.Errorf("%s %s: merge-on-read v3 wrote %d position delete files and %d deletion vectors", op, name, pos, dvs)
	}
	return nil
}

func (se *scriptEnv) plan(d *datadriven.TestData) (string, error) {
	s, err := sqltx.Open(se.Ctx)
	if err != nil {
		return "", err
	}
	defer s.Close()
	p, err := sqltx.Analyze(se.Ctx, s, d.Input)
	if err != nil {
		return "", err
	}
	rule, reason := p.RuleFor(keysOf(d))
	if reason != "" {
		return fmt.Sprintf("rule %s: %s\n", rule, reason), nil
	}
	return fmt.Sprintf("rule %s\n", rule), nil
}

// build builds transform name (made from the input query on its first
// build) and prints how, with the destination's columns and rows.
func (se *scriptEnv) build(d *datadriven.TestData) (string, error) {
	name, ok := argOf(d, "name")
	if !ok {
		return "", fmt.Errorf("build: name= is required")
	}
	st := se.transforms[name]
	if st == nil {
		if strings.TrimSpace(d.Input) == "" {
			return "", fmt.Errorf("build %s: give the query as input on its first build", name)
		}
		st = &scriptTransform{query: d.Input, keys: keysOf(d), dst: "out." + name}
		tr, _, err := sqltx.New(se.Ctx, sqltx.Spec{Name: name, Query: st.query, Dst: st.dst, Keys: st.keys})
		if err != nil {
			return "", err
		}
		st.tr = tr
		if err := se.Cat.CreateNamespace(se.Ctx, table.Identifier{"out"}, true); err != nil {
			return "", err
		}
		se.transforms[name] = st
	} else if strings.TrimSpace(d.Input) != "" {
		return "", fmt.Errorf("build %s: the query is given on the first build only", name)
	}
	r := &transform.Runner{Catalog: se.Cat}
	res, err := r.Build(se.Ctx, st.tr)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	dst, err := se.Cat.LoadTable(se.Ctx, st.dst)
	if err != nil {
		return "", err
	}
	sum := dst.CurrentSnapshot().Summary.Properties
	switch {
	case res.Skipped:
		b.WriteString("skipped (no change)\n")
	case res.Incremental:
		fmt.Fprintf(&b, "incremental, rule %s\n", sum[sqltx.SummaryRule])
	case sum[sqltx.SummaryRule] == sqltx.RuleFull:
		fmt.Fprintf(&b, "full, rule full: %s\n", sum[sqltx.SummaryRebuildReason])
	default:
		fmt.Fprintf(&b, "full (%s), rule %s\n", normalize(res.Reason), sum[sqltx.SummaryRule])
	}
	var cols []string
	for _, f := range dst.Schema().Fields() {
		cols = append(cols, f.Name+" "+f.Type.String())
	}
	fmt.Fprintf(&b, "columns: %s\n", strings.Join(cols, ", "))
	got, err := se.rowsOf(dst)
	if err != nil {
		return "", err
	}
	writeRows(&b, got)
	return b.String(), nil
}

func writeRows(b *strings.Builder, rs []string) {
	if len(rs) == 0 {
		b.WriteString("(no rows)\n")
	}
	for _, r := range rs {
		b.WriteString(r + "\n")
	}
}

func (se *scriptEnv) rowsOf(tbl *table.Table) ([]string, error) {
	_, seq, err := scan.Rows(se.Ctx, tbl, scan.Options{})
	if err != nil {
		return nil, err
	}
	return rows.FormatSorted(seq)
}

// check runs transform name's query in full, in a fresh DuckDB session
// over the current rows of every table of the script, and compares the
// result with the destination as multisets of rows (and the column
// names).
func (se *scriptEnv) check(d *datadriven.TestData) (string, error) {
	name, _ := argOf(d, "name")
	st := se.transforms[name]
	if st == nil {
		return "", fmt.Errorf("check: no transform %q was built", name)
	}
	s, err := sqltx.Open(se.Ctx)
	if err != nil {
		return "", err
	}
	defer s.Close()
	for _, t := range se.tables {
		tbl, err := se.Cat.LoadTable(se.Ctx, t)
		if err != nil {
			return "", err
		}
		sch, seq, err := scan.Rows(se.Ctx, tbl, scan.Options{})
		if err != nil {
			return "", err
		}
		ns, tn, _ := strings.Cut(t, ".")
		if err := s.Bind(se.Ctx, ns, tn, transform.NewRows(sch, seq)); err != nil {
			return "", fmt.Errorf("bind %s: %w", t, err)
		}
	}
	// DuckDB renders the expected values itself (no Arrow or Parquet
	// between its result and the comparison), so a type that loses
	// precision on its way to the destination shows.
	names, err := s.Strings(se.Ctx, "SELECT column_name, column_type FROM (DESCRIBE "+st.query+")")
	if err != nil {
		return "", err
	}
	text, err := s.Strings(se.Ctx, "SELECT coalesce('v:' || COLUMNS(*)::VARCHAR, 'NULL') FROM ("+st.query+") q")
	if err != nil {
		return "", err
	}
	quoted := make([]bool, len(names))
	for i, n := range names {
		quoted[i] = n[1] == "VARCHAR"
	}
	want := make([]cellRow, len(text))
	for i, r := range text {
		want[i] = newCellRow(r, quoted)
	}
	dst, err := se.Cat.LoadTable(se.Ctx, st.dst)
	if err != nil {
		return "", err
	}
	_, seq, err := scan.Rows(se.Ctx, dst, scan.Options{})
	if err != nil {
		return "", err
	}
	var got []cellRow
	for rec, err := range seq {
		if err != nil {
			return "", err
		}
		quoted := make([]bool, rec.NumCols())
		for c, f := range rec.Schema().Fields() {
			quoted[c] = f.Type.ID() == arrow.STRING
		}
		for i := range int(rec.NumRows()) {
			cells := make([]string, rec.NumCols())
			for c, col := range rec.Columns() {
				switch a := col.(type) {
				case *array.String:
					if a.IsValid(i) {
						cells[c] = "v:" + a.Value(i)
					} else {
						cells[c] = "NULL"
					}
				default:
					if col.IsValid(i) {
						cells[c] = "v:" + col.ValueStr(i)
					} else {
						cells[c] = "NULL"
					}
				}
			}
			got = append(got, newCellRow(cells, quoted))
		}
		rec.Release()
	}
	var b strings.Builder
	var wantCols, gotCols []string
	for _, n := range names {
		wantCols = append(wantCols, n[0])
	}
	for _, f := range dst.Schema().Fields() {
		gotCols = append(gotCols, f.Name)
	}
	if !slices.Equal(wantCols, gotCols) {
		fmt.Fprintf(&b, "columns differ: destination %s, query %s\n", strings.Join(gotCols, ", "), strings.Join(wantCols, ", "))
	}
	missing, extra := multisetDiff(want, got)
	for _, r := range missing {
		fmt.Fprintf(&b, "missing %s\n", r)
	}
	for _, r := range extra {
		fmt.Fprintf(&b, "extra   %s\n", r)
	}
	if b.Len() == 0 {
		return "ok (" + strconv.Itoa(len(want)) + " rows)\n", nil
	}
	return b.String(), nil
}

// cellRow is a row as text: each value "v:<text>" or NULL; key
// compares numbers by value (15 = 15.0), text as it is; text shows the
// values of quoted columns in quotes.
type cellRow struct {
	text, key string
}

func newCellRow(cells []string, quoted []bool) cellRow {
	shown := make([]string, len(cells))
	keys := make([]string, len(cells))
	for i, c := range cells {
		v, ok := strings.CutPrefix(c, "v:")
		shown[i], keys[i] = c, c
		if ok {
			shown[i] = v
			if i < len(quoted) && quoted[i] {
				shown[i] = "'" + v + "'"
			}
			if r, isNum := new(big.Rat).SetString(v); isNum {
				keys[i] = "n:" + r.RatString()
			} else if ts, isTime := parseTime(v); isTime {
				keys[i] = "t:" + ts
			}
		}
	}
	return cellRow{text: "(" + strings.Join(shown, ",") + ")", key: strings.Join(keys, "\x00")}
}

// timeLayouts are how DuckDB ("2024-01-01 10:00:00+00") and Arrow
// ("2024-01-01T10:00:00Z") print timestamps, with "T" read as a space.
var timeLayouts = []string{"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999"}

// parseTime reads a timestamp as either side prints it and returns it in
// one form (UTC, with a Z when it had a zone).
func parseTime(v string) (string, bool) {
	if len(v) < 19 || v[10] != 'T' && v[10] != ' ' {
		return "", false
	}
	v = v[:10] + " " + v[11:]
	for i, l := range timeLayouts {
		if t, err := time.Parse(l, v); err == nil {
			s := t.UTC().Format("2006-01-02 15:04:05.999999999")
			if i < 2 {
				s += "Z"
			}
			return s, true
		}
	}
	return "", false
}

// multisetDiff returns the rows of want not in got and of got not in want,
// counting repeats, sorted.
func multisetDiff(want, got []cellRow) (missing, extra []string) {
	n := map[string]int{}
	for _, r := range got {
		n[r.key]++
	}
	for _, r := range want {
		if n[r.key] > 0 {
			n[r.key]--
		} else {
			missing = append(missing, r.text)
		}
	}
	for _, r := range got {
		if n[r.key] > 0 {
			n[r.key]--
			extra = append(extra, r.text)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	return missing, extra
}

// TestRuleBugs runs the scripts of testdata/bugs: known bugs, each with
// the correct expected output, so they fail until fixed. They run with
// FLOE_KNOWN_BUGS=1 (a fix moves its script to testdata/rules).
func TestRuleBugs(t *testing.T) {
	if os.Getenv("FLOE_KNOWN_BUGS") == "" {
		t.Skip("known bugs (testdata/bugs) run with FLOE_KNOWN_BUGS=1")
	}
	if _, err := os.Stat("testdata/bugs"); os.IsNotExist(err) {
		t.Skip("no known bugs: testdata/bugs is empty")
	}
	runScripts(t, "testdata/bugs")
}
