//go:build interop

package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// lab is one warehouse shared by the floe binary, Spark (JdbcCatalog on its
// catalog.db, mounted as catalog "floe" in the test's own session) and
// PyIceberg (SqlCatalog on the same file).
type lab struct {
	t     *testing.T
	ctx   context.Context
	wh    *interop.Warehouse // the embedded catalog's warehouse; input files go in its directory
	floe  *interop.Floe
	spark *interop.Spark
	sess  string
	py    *interop.Py
	pyCat interop.CatalogSpec // PyIceberg's catalog on the same tables
	rest  bool                // the catalog is the REST server, not wh's catalog.db
}

// newLab creates the warehouse with floe (floe namespace create ns, so floe's
// catalog code lays out the file) and mounts it in Spark and PyIceberg.
func newLab(t *testing.T, namespace string) *lab {
	t.Helper()
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	wh, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "warehouse"))
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, ctx: testCtx(t), wh: wh, floe: wh.Floe(t), spark: spark, py: py, pyCat: wh.PyIceberg()}
	if _, err := l.floe.Run(l.ctx, "namespace", "create", namespace); err != nil {
		t.Fatal(err)
	}
	l.sess = spark.TestSession(t, sessionConf(wh.SparkConf()))
	return l
}

// sessionConf adds the lab's Spark SQL settings to a catalog's conf.
func sessionConf(conf map[string]string) map[string]string {
	// As in Iceberg's own Spark tests (ExtensionsTestBase): INSERT OVERWRITE
	// replaces only the partitions its rows fall in.
	conf["spark.sql.sources.partitionOverwriteMode"] = "dynamic"
	return conf
}

// newRESTLab is newLab on Apache Iceberg's REST catalog server, started for
// the test: floe reaches it through a catalog configuration file (--config,
// --catalog), Spark and PyIceberg as REST catalogs; the warehouse directory
// only holds input files.
func newRESTLab(t *testing.T, namespace string) *lab {
	t.Helper()
	e := interop.Require(t)
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	ctx := testCtx(t)
	srv, err := interop.StartREST(ctx, e, interop.RESTOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	wh, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "work"))
	if err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, ctx: ctx, wh: wh, floe: srv.Floe(t, "rest", wh.Dir), spark: spark, py: py,
		pyCat: srv.PyIceberg("floe"), rest: true}
	if _, err := l.floe.Run(l.ctx, "namespace", "create", namespace); err != nil {
		t.Fatal(err)
	}
	l.sess = spark.TestSession(t, sessionConf(srv.SparkConf("floe")))
	return l
}

// with returns a copy of l that reports to t (a subtest's).
func (l *lab) with(t *testing.T) *lab {
	c := *l
	c.t = t
	return &c
}

// sql runs one Spark statement and returns its rows, failing the test on error.
func (l *lab) sql(format string, args ...any) *rowjson.Table {
	l.t.Helper()
	q := fmt.Sprintf(format, args...)
	got, err := l.spark.SQL(l.ctx, l.sess, q)
	if err != nil {
		l.t.Fatalf("Spark: %s: %v", truncateText(q, 300), err)
	}
	return got
}

// exec runs Spark statements, failing the test on error.
func (l *lab) exec(statements ...string) {
	l.t.Helper()
	if err := l.spark.Exec(l.ctx, l.sess, statements...); err != nil {
		l.t.Fatal(err)
	}
}

// count runs a Spark query returning one integer.
func (l *lab) count(format string, args ...any) int64 {
	l.t.Helper()
	got := l.sql(format, args...)
	if len(got.Rows) != 1 || len(got.Rows[0]) != 1 {
		l.t.Fatalf("Spark: %s returned %v, want one value", fmt.Sprintf(format, args...), got.Rows)
	}
	n, err := got.Rows[0][0].(json.Number).Int64()
	if err != nil {
		l.t.Fatalf("Spark count %v: %v", got.Rows[0][0], err)
	}
	return n
}

// sparkAt reads table ("ns.t") at a snapshot with Spark.
func (l *lab) sparkAt(table string, snap int64) *rowjson.Table {
	l.t.Helper()
	return l.sql("SELECT * FROM floe.%s VERSION AS OF %d", table, snap)
}

// floeAt reads table at a snapshot with floe table scan.
func (l *lab) floeAt(table string, snap int64) *rowjson.Table {
	l.t.Helper()
	got, err := l.floe.TableRows(l.ctx, table, "table", "scan", table, "--snapshot", strconv.FormatInt(snap, 10))
	if err != nil {
		l.t.Fatal(err)
	}
	return got
}

// snapshots lists table's snapshots with floe and checks that Spark's
// snapshots metadata table lists the same ids.
func (l *lab) snapshots(table string) []interop.FloeSnapshot {
	l.t.Helper()
	snaps, err := l.floe.Snapshots(l.ctx, table)
	if err != nil {
		l.t.Fatal(err)
	}
	var floeIDs []string
	for _, s := range snaps {
		floeIDs = append(floeIDs, strconv.FormatInt(s.SnapshotID, 10))
	}
	var sparkIDs []string
	for _, v := range column(l.t, l.sql("SELECT snapshot_id FROM floe.%s.snapshots", table), "snapshot_id") {
		sparkIDs = append(sparkIDs, string(v.(json.Number)))
	}
	slices.Sort(floeIDs)
	slices.Sort(sparkIDs)
	if !slices.Equal(floeIDs, sparkIDs) {
		l.t.Fatalf("snapshots of %s: floe lists %v, Spark %v", table, floeIDs, sparkIDs)
	}
	return snaps
}

// deleteManifestSnapshots returns the snapshots whose manifest list holds a
// delete manifest (where Spark's changelog scan refuses to run).
func (l *lab) deleteManifestSnapshots(table string) map[int64]bool {
	l.t.Helper()
	out := map[int64]bool{}
	for _, v := range column(l.t, l.sql("SELECT DISTINCT reference_snapshot_id FROM floe.%s.all_manifests WHERE content = 1", table), "reference_snapshot_id") {
		id, _ := v.(json.Number).Int64()
		out[id] = true
	}
	return out
}

// sameRows fails t when got and want differ as multisets of rows. A side with
// no rows and no columns (floe prints nothing for an empty result) takes the
// other's columns.
func sameRows(t *testing.T, what string, want, got *rowjson.Table) {
	t.Helper()
	if d := diffRows(want, got); d != "" {
		t.Fatalf("%s differs:\n%s", what, d)
	}
}

// diffRows is rowjson.Diff with sameRows's rule for empty results.
func diffRows(want, got *rowjson.Table) string {
	if len(got.Rows) == 0 && len(got.Columns) == 0 {
		got = &rowjson.Table{Columns: want.Columns}
	}
	if len(want.Rows) == 0 && len(want.Columns) == 0 {
		want = &rowjson.Table{Columns: got.Columns}
	}
	return rowjson.Diff(want, got)
}

// chain returns the ancestry of the snapshot head, oldest first.
func chain(snaps []interop.FloeSnapshot, head int64) []interop.FloeSnapshot {
	byID := map[int64]interop.FloeSnapshot{}
	for _, s := range snaps {
		byID[s.SnapshotID] = s
	}
	var out []interop.FloeSnapshot
	for id, ok := head, true; ok; {
		s, found := byID[id]
		if !found {
			break
		}
		out = append(out, s)
		ok = s.ParentID != nil
		if ok {
			id = *s.ParentID
		}
	}
	slices.Reverse(out)
	return out
}

// headOf returns the snapshot id the ref points at.
func headOf(t *testing.T, snaps []interop.FloeSnapshot, ref string) int64 {
	t.Helper()
	for _, s := range snaps {
		if slices.Contains(s.Heads, ref) {
			return s.SnapshotID
		}
	}
	t.Fatalf("no snapshot is the head of %q", ref)
	return 0
}

// changeKinds are the change types a changelog applies: the first two remove
// a row, the last two add one.
var removing = map[string]bool{"DELETE": true, "UPDATE_BEFORE": true}
var adding = map[string]bool{"INSERT": true, "UPDATE_AFTER": true}

// applyChanges applies a changelog (rows of data columns then _change_type,
// _change_ordinal, _commit_snapshot_id) to the rows of its start state, as
// multisets, snapshot by snapshot in ordinal order, removals before additions
// within a snapshot. A removal of a row that is not there is an error.
func applyChanges(start, changes *rowjson.Table) (*rowjson.Table, error) {
	if len(changes.Rows) == 0 {
		return start, nil
	}
	data := start.Names()
	if len(data) == 0 {
		names := changes.Names()
		data = names[:len(names)-3]
	}
	cl, err := changes.Select(append(slices.Clone(data), "_change_type", "_change_ordinal")...)
	if err != nil {
		return nil, fmt.Errorf("changelog columns: %w", err)
	}
	live := map[string]int{}
	rowOf := map[string][]any{}
	for _, r := range start.Rows {
		k := rowjson.Canonical(r)
		live[k]++
		rowOf[k] = r
	}
	n := len(data)
	rows := slices.Clone(cl.Rows)
	ord := func(r []any) int64 { v, _ := r[n+1].(json.Number).Int64(); return v }
	sort.SliceStable(rows, func(i, j int) bool {
		oi, oj := ord(rows[i]), ord(rows[j])
		if oi != oj {
			return oi < oj
		}
		return removing[rows[i][n].(string)] && !removing[rows[j][n].(string)]
	})
	for _, r := range rows {
		k := rowjson.Canonical(r[:n])
		kind, _ := r[n].(string)
		switch {
		case removing[kind]:
			if live[k] == 0 {
				return nil, fmt.Errorf("%s at ordinal %d removes a row that is not there: %s", kind, ord(r), k)
			}
			live[k]--
		case adding[kind]:
			live[k]++
			rowOf[k] = r[:n]
		default:
			return nil, fmt.Errorf("unknown _change_type %v", r[n])
		}
	}
	out := &rowjson.Table{Columns: cl.Columns[:n], Rows: [][]any{}}
	for k, c := range live {
		for ; c > 0; c-- {
			out.Rows = append(out.Rows, rowOf[k])
		}
	}
	return out, nil
}

// javaException finds the message of the innermost Java exception in a
// Spark failure (Py4J and Spark wrap it in several layers).
var javaException = regexp.MustCompile(`(?m)(?:^|[\s:(])(?:[a-z_][a-z0-9_]*\.)+(?:[A-Z][A-Za-z0-9_$]*)(?:Exception|Error): ([^\n]*)`)

// referenceMessage returns the message of the reference's failure: the
// innermost Java exception's message, else PySpark's own text after its
// exception class.
func referenceMessage(err error) string {
	var ee *interop.EngineError
	if !errors.As(err, &ee) {
		return err.Error()
	}
	text := ee.Message + "\n" + ee.Trace
	if m := javaException.FindAllStringSubmatch(text, -1); len(m) > 0 {
		// The last "Caused by:" is the root cause; its message is what a
		// user sees quoted. Spark 4 appends the caller's stack as a
		// suppressed exception with a fixed message: not a cause.
		for i := len(m) - 1; i >= 0; i-- {
			msg := strings.TrimSpace(m[i][1])
			if msg != "" && !strings.HasPrefix(msg, "Full stacktrace of original doTryWithCallerStacktrace caller") {
				return msg
			}
		}
	}
	msg := ee.Message
	if _, rest, ok := strings.Cut(msg, ": "); ok {
		msg = rest
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// sqlLit quotes s as a Spark SQL string literal.
func sqlLit(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// i64 returns a pointer to v.
func i64(v int64) *int64 { return &v }

// boolp returns a pointer to v.
func boolp(v bool) *bool { return &v }
