//go:build interop

package interop_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// TestEngineVersions checks that the installation is the pinned one and that
// the running Spark is the version the pins name.
func TestEngineVersions(t *testing.T) {
	e := interop.Require(t)
	want := map[string]string{
		"pyspark":               "4.1.1",
		"delta-spark":           "4.3.1",
		"pyiceberg":             "0.12.0",
		"deltalake":             "1.6.6",
		"iceberg-spark-runtime": "iceberg-spark-runtime-4.1_2.13-1.11.0.jar",
		"delta-spark-jar":       "delta-spark_4.1_2.13-4.3.1.jar",
		"iceberg-rest-server":   "iceberg-rest-server-1.10.1.jar",
	}
	for k, v := range want {
		if got := e.Versions[k]; got != v {
			t.Errorf("installed %s = %q, want %q (pins in interop/pins)", k, got, v)
		}
	}
	if got := interop.SharedSpark(t).Version; got != "4.1.1" {
		t.Errorf("running Spark version = %q, want 4.1.1", got)
	}
}

// TestSparkValueConventions checks the Spark worker's rows against floe's JSON
// conventions for every type, value by value.
func TestSparkValueConventions(t *testing.T) {
	spark := interop.SharedSpark(t)
	ctx := testCtx(t)
	got, err := spark.SQL(ctx, "default", `SELECT
		CAST(1 AS TINYINT) AS i8, 9223372036854775807 AS i64, CAST(-1.50 AS DECIMAL(10,2)) AS dec,
		CAST(0.05 AS DECIMAL(38,10)) AS dec38, CAST('NaN' AS DOUBLE) AS nan, CAST('-Infinity' AS DOUBLE) AS ninf,
		CAST(0.1 AS FLOAT) AS f32, 'a"b\\c' AS s, X'00FF10' AS bin, DATE'1969-12-31' AS d,
		TIMESTAMP'2024-01-02 03:04:05.123456' AS ts, TIMESTAMP'1969-12-31 23:59:59.999999' AS ts_neg,
		TIMESTAMP_NTZ'2024-01-02 03:04:05' AS ntz, array(1, NULL, 3) AS arr,
		named_struct('x', 1, 'y', CAST(NULL AS STRING)) AS st, map('b', 1, 'a', 2) AS m,
		CAST(NULL AS BIGINT) AS nul, true AS flag`)
	if err != nil {
		t.Fatal(err)
	}
	want := rowsOf(t,
		[]string{"i8", "i64", "dec", "dec38", "nan", "ninf", "f32", "s", "bin", "d", "ts", "ts_neg", "ntz", "arr", "st", "m", "nul", "flag"},
		`[1, 9223372036854775807, "-1.50", "0.0500000000", "NaN", "-Infinity", 0.10000000149011612, "a\"b\\c",
		  "AP8Q", "1969-12-31", "2024-01-02T03:04:05.123456Z", "1969-12-31T23:59:59.999999Z",
		  "2024-01-02T03:04:05.000000", [1, null, 3], {"x": 1, "y": null}, [["a", 2], ["b", 1]], null, true]`)
	requireSame(t, "Spark row", want, got)
}

// TestEngineErrors checks that an engine's failure comes back as an
// EngineError naming the exception, and that the worker keeps serving.
func TestEngineErrors(t *testing.T) {
	spark := interop.SharedSpark(t)
	ctx := testCtx(t)
	_, err := spark.SQL(ctx, "default", "SELECT * FROM no_such_table_anywhere")
	var ee *interop.EngineError
	if !errors.Is(err, interop.ErrEngine) || !errors.As(err, &ee) {
		t.Fatalf("error = %v, want an EngineError", err)
	}
	if !strings.Contains(ee.Message, "TABLE_OR_VIEW_NOT_FOUND") || ee.Trace == "" {
		t.Errorf("EngineError = %q (trace %d bytes), want Spark's TABLE_OR_VIEW_NOT_FOUND and a trace", ee.Message, len(ee.Trace))
	}
	got, err := spark.SQL(ctx, "default", "SELECT 1 + 1 AS two")
	if err != nil {
		t.Fatalf("worker unusable after an engine error: %v", err)
	}
	requireSame(t, "SELECT 1 + 1", rowsOf(t, []string{"two"}, `[2]`), got)

	if err := spark.Exec(ctx, "no_such_session", "SELECT 1"); !errors.Is(err, interop.ErrEngine) ||
		!strings.Contains(err.Error(), "no Spark session named") {
		t.Errorf("unknown session: error = %v, want an EngineError naming the session", err)
	}

	py := interop.SharedPy(t)
	_, err = py.IcebergScan(ctx, interop.PyIcebergSQLCatalog("floe", filepath.Join(t.TempDir(), "none.db"), "file:///nonexistent"),
		"nope.nope", interop.ScanOptions{})
	if !errors.Is(err, interop.ErrEngine) || !strings.Contains(err.Error(), "NoSuch") {
		t.Errorf("PyIceberg scan of a missing table: error = %v, want an EngineError with NoSuch...", err)
	}
}

// TestSmokeGoWritesEnginesRead: iceberg-go creates a namespace and a table in
// floe's SQLite catalog and appends random rows in two snapshots; Spark
// (JdbcCatalog on the same file) and PyIceberg (SqlCatalog on the same file)
// read exactly those rows and see the same snapshots.
func TestSmokeGoWritesEnginesRead(t *testing.T) {
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	for _, fv := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", fv), func(t *testing.T) {
			ctx := testCtx(t)
			wh, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "warehouse"))
			if err != nil {
				t.Fatal(err)
			}
			cat, err := wh.OpenCatalog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cat.Close()

			n := envInt(t, "FLOE_INTEROP_ROWS", 400)
			g := generate(seededRand(t), allTypesColumns(), n)
			if err := cat.CreateNamespace(ctx, table.Identifier{"smoke"}, iceberg.Properties{"floe.test": "yes"}); err != nil {
				t.Fatal(err)
			}
			tbl, err := cat.CreateTable(ctx, table.Identifier{"smoke", "t"}, g.schema(),
				catalog.WithProperties(iceberg.Properties{"format-version": strconv.Itoa(fv)}))
			if err != nil {
				t.Fatal(err)
			}
			tbl = g.appendRows(ctx, t, tbl, 0, n/2)
			tbl = g.appendRows(ctx, t, tbl, n/2, n)

			requireSame(t, "iceberg-go scan vs the rows written", g.want, icebergGoRows(ctx, t, tbl))

			var snapIDs []any
			for _, s := range tbl.Metadata().Snapshots() {
				snapIDs = append(snapIDs, rowjson.Int(s.SnapshotID))
			}
			if len(snapIDs) != 2 {
				t.Fatalf("iceberg-go made %d snapshots, want 2", len(snapIDs))
			}

			sess := spark.TestSession(t, wh.SparkConf())
			got, err := spark.SQL(ctx, sess, "SELECT * FROM floe.smoke.t")
			if err != nil {
				t.Fatal(err)
			}
			requireSame(t, "Spark read of iceberg-go's table", g.want, got)

			snaps, err := spark.SQL(ctx, sess, "SELECT snapshot_id FROM floe.smoke.t.snapshots ORDER BY committed_at, snapshot_id")
			if err != nil {
				t.Fatal(err)
			}
			if got := column(t, snaps, "snapshot_id"); rowjson.Canonical(got) != rowjson.Canonical(snapIDs) {
				t.Errorf("Spark's snapshots = %v, iceberg-go's = %v", got, snapIDs)
			}
			fmtv, err := spark.SQL(ctx, sess, "SHOW TBLPROPERTIES floe.smoke.t ('format-version')")
			if err != nil {
				t.Fatal(err)
			}
			requireSame(t, "Spark's format-version", rowsOf(t, []string{"key", "value"}, fmt.Sprintf(`["format-version", "%d"]`, fv)), fmtv)
			nsProps, err := spark.SQL(ctx, sess, "DESCRIBE NAMESPACE EXTENDED floe.smoke")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(nsProps.Rows, func(r []any) bool { return strings.Contains(rowjson.Canonical(r), "(floe.test,yes)") }) {
				t.Errorf("Spark does not see the namespace property iceberg-go set: %v", nsProps.Rows)
			}

			got, err = py.IcebergScan(ctx, wh.PyIceberg(), "smoke.t", interop.ScanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			requireSame(t, "PyIceberg read of iceberg-go's table", g.want, got)

			first := snapIDs[0].(json.Number)
			firstID, _ := first.Int64()
			got, err = py.IcebergScan(ctx, wh.PyIceberg(), "smoke.t", interop.ScanOptions{SnapshotID: &firstID})
			if err != nil {
				t.Fatal(err)
			}
			wantFirst := &rowjson.Table{Columns: g.want.Columns, Rows: g.want.Rows[:n/2]}
			requireSame(t, "PyIceberg read of the first snapshot", wantFirst, got)
		})
	}
}

// TestSmokeSparkWritesGoReads: Spark writes INSERT, UPDATE, DELETE and MERGE
// with merge-on-read into floe's SQLite catalog (format versions 2 and 3), and
// after every statement iceberg-go's scan and PyIceberg's scan return exactly
// Spark's rows. It also checks that the deletes really are delete files
// (position deletes on v2, deletion vectors on v3).
func TestSmokeSparkWritesGoReads(t *testing.T) {
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	for _, fv := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", fv), func(t *testing.T) {
			ctx := testCtx(t)
			wh, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "warehouse"))
			if err != nil {
				t.Fatal(err)
			}
			// iceberg-go creates the catalog file first, as floe would.
			cat, err := wh.OpenCatalog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer cat.Close()
			sess := spark.TestSession(t, wh.SparkConf())

			n := envInt(t, "FLOE_INTEROP_ROWS", 400)
			steps := []struct{ name, sql string }{
				{"create namespace", "CREATE NAMESPACE floe.sp"},
				{"create table", fmt.Sprintf(`CREATE TABLE floe.sp.t (id BIGINT NOT NULL, name STRING, amount DECIMAL(18,4),
					at TIMESTAMP, day DATE) USING iceberg TBLPROPERTIES ('format-version'='%d',
					'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read',
					'write.merge.mode'='merge-on-read')`, fv)},
				{"insert", fmt.Sprintf(`INSERT INTO floe.sp.t SELECT id, concat('n', id), CAST(id * 1.25 AS DECIMAL(18,4)),
					timestamp_micros(1700000000000000 + id * 1000003), date_add(DATE'2024-01-01', CAST(id %% 400 AS INT))
					FROM range(%d)`, n)},
				{"update", "UPDATE floe.sp.t SET name = upper(name), amount = amount * 2 WHERE id % 7 = 0"},
				{"delete", "DELETE FROM floe.sp.t WHERE id % 5 = 0"},
				{"merge", fmt.Sprintf(`MERGE INTO floe.sp.t t USING (SELECT id, concat('m', id) AS name FROM range(%d, %d, 3)) s
					ON t.id = s.id
					WHEN MATCHED THEN UPDATE SET t.name = s.name
					WHEN NOT MATCHED THEN INSERT (id, name, amount, at, day) VALUES (s.id, s.name, NULL, NULL, NULL)`, n-30, n+30)},
			}
			for _, st := range steps {
				if err := spark.Exec(ctx, sess, st.sql); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				if !strings.HasPrefix(st.name, "create") {
					compareSparkGoPy(t, spark, py, wh, cat, sess, st.name)
				}
			}

			// The namespace Spark made is in iceberg-go's view of the catalog.
			nss, err := cat.ListNamespaces(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(nss, func(id table.Identifier) bool { return slices.Equal(id, table.Identifier{"sp"}) }) {
				t.Errorf("iceberg-go lists namespaces %v, want sp among them", nss)
			}

			// Merge-on-read really wrote delete files of the format version's kind.
			dels, err := spark.SQL(ctx, sess, "SELECT content, file_format FROM floe.sp.t.delete_files")
			if err != nil {
				t.Fatal(err)
			}
			if len(dels.Rows) == 0 {
				t.Fatal("Spark wrote no delete files: merge-on-read was not exercised")
			}
			wantFormat := map[int]string{2: "PARQUET", 3: "PUFFIN"}[fv]
			for _, r := range dels.Rows {
				if rowjson.Canonical(r) != rowjson.Canonical([]any{json.Number("1"), wantFormat}) {
					t.Errorf("delete file (content, format) = %s, want position deletes in %s", rowjson.Canonical(r), wantFormat)
				}
			}
			tbl, err := cat.LoadTable(ctx, table.Identifier{"sp", "t"})
			if err != nil {
				t.Fatal(err)
			}
			if got := tbl.Metadata().Version(); got != fv {
				t.Errorf("iceberg-go reads format version %d, want %d", got, fv)
			}
			if s := tbl.CurrentSnapshot(); s == nil || s.Summary == nil || s.Summary.Properties["total-delete-files"] == "0" {
				t.Errorf("iceberg-go's current snapshot summary shows no delete files: %+v", s)
			}
		})
	}
}

// compareSparkGoPy requires iceberg-go and PyIceberg to read floe.sp.t exactly
// as Spark does.
func compareSparkGoPy(t *testing.T, spark *interop.Spark, py *interop.Py, wh *interop.Warehouse, cat *interop.Catalog, sess, step string) {
	t.Helper()
	ctx := testCtx(t)
	want, err := spark.SQL(ctx, sess, "SELECT * FROM floe.sp.t")
	if err != nil {
		t.Fatalf("after %s: %v", step, err)
	}
	if len(want.Rows) == 0 {
		t.Fatalf("after %s: Spark reads no rows", step)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"sp", "t"})
	if err != nil {
		t.Fatalf("after %s: iceberg-go load: %v", step, err)
	}
	requireSame(t, "after "+step+": iceberg-go vs Spark", want, icebergGoRows(ctx, t, tbl))
	got, err := py.IcebergScan(ctx, wh.PyIceberg(), "sp.t", interop.ScanOptions{})
	if err != nil {
		t.Fatalf("after %s: PyIceberg: %v", step, err)
	}
	requireSame(t, "after "+step+": PyIceberg vs Spark", want, got)
}

// TestSmokeRESTCatalog: Apache Iceberg's REST server runs on a local port;
// iceberg-go's REST catalog creates a table and appends; Spark and PyIceberg
// read it through the same server; then Spark appends and iceberg-go reads
// Spark's commit.
func TestSmokeRESTCatalog(t *testing.T) {
	e := interop.Require(t)
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	ctx := testCtx(t)
	srv, err := interop.StartREST(ctx, e, interop.RESTOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	cat, err := rest.NewCatalog(ctx, "rest", srv.URI)
	if err != nil {
		t.Fatalf("iceberg-go REST catalog at %s: %v", srv.URI, err)
	}
	defer cat.Close()
	n := envInt(t, "FLOE_INTEROP_ROWS", 400)
	g := generate(seededRand(t), allTypesColumns(), n)
	if err := cat.CreateNamespace(ctx, table.Identifier{"rs"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"rs", "t"}, g.schema(),
		catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	tbl = g.appendRows(ctx, t, tbl, 0, n)
	requireSame(t, "iceberg-go scan through REST", g.want, icebergGoRows(ctx, t, tbl))

	sess := spark.TestSession(t, srv.SparkConf("floe"))
	got, err := spark.SQL(ctx, sess, "SELECT * FROM floe.rs.t")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "Spark read through REST", g.want, got)

	got, err = py.IcebergScan(ctx, srv.PyIceberg("floe"), "rs.t", interop.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "PyIceberg read through REST", g.want, got)

	// And the other way: Spark commits through the server, iceberg-go reads it.
	if err := spark.Exec(ctx, sess, `INSERT INTO floe.rs.t (id, name) VALUES (-1, 'from spark')`); err != nil {
		t.Fatal(err)
	}
	tbl, err = cat.LoadTable(ctx, table.Identifier{"rs", "t"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := spark.SQL(ctx, sess, "SELECT * FROM floe.rs.t")
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Rows) != n+1 {
		t.Fatalf("Spark reads %d rows after its insert, want %d", len(want.Rows), n+1)
	}
	requireSame(t, "iceberg-go read of Spark's REST commit", want, icebergGoRows(ctx, t, tbl))
}

// deltaChangeColumns are the columns a CDF comparison looks at
// (_commit_timestamp differs by engine and run).
var deltaChangeColumns = []string{"id", "v", "amount", "_change_type", "_commit_version"}

// TestSmokeDeltaCDF: delta-rs and delta-spark each write a small table with the
// change data feed enabled (insert, update, delete) and read their change feed
// back; each engine also reads the other's feed, so later tests can compare
// floe's reader with both.
func TestSmokeDeltaCDF(t *testing.T) {
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	ctx := testCtx(t)
	dir := t.TempDir()

	// delta-rs: version 0 creates and inserts, 1 updates, 2 deletes.
	rsPath := filepath.Join(dir, "rs")
	schema := []interop.Column{
		{Name: "id", Type: "long"},
		{Name: "v", Type: "string", Nullable: true},
		{Name: "amount", Type: "decimal(10,2)", Nullable: true},
	}
	v, err := py.DeltaWrite(ctx, rsPath, schema, [][]any{{1, "a", "1.00"}, {2, "b", "2.50"}, {3, "c", nil}},
		interop.DeltaWriteOptions{Configuration: map[string]string{"delta.enableChangeDataFeed": "true"}})
	if err != nil || v != 0 {
		t.Fatalf("delta-rs write: version %d, %v; want version 0", v, err)
	}
	if v, err = py.DeltaUpdate(ctx, rsPath, "id = 2", map[string]string{"v": "'B'"}); err != nil || v != 1 {
		t.Fatalf("delta-rs update: version %d, %v; want version 1", v, err)
	}
	if v, err = py.DeltaDelete(ctx, rsPath, "id = 3"); err != nil || v != 2 {
		t.Fatalf("delta-rs delete: version %d, %v; want version 2", v, err)
	}
	wantRS := rowsOf(t, deltaChangeColumns,
		`[1, "a", "1.00", "insert", 0]`, `[2, "b", "2.50", "insert", 0]`, `[3, "c", null, "insert", 0]`,
		`[2, "b", "2.50", "update_preimage", 1]`, `[2, "B", "2.50", "update_postimage", 1]`,
		`[3, "c", null, "delete", 2]`)

	// delta-spark: version 0 creates, 1 inserts, 2 updates, 3 deletes.
	sess := spark.TestSession(t, nil)
	spPath := filepath.Join(dir, "spark")
	if err := spark.Exec(ctx, sess,
		"CREATE TABLE "+interop.DeltaPath(spPath)+" (id BIGINT NOT NULL, v STRING, amount DECIMAL(10,2)) USING delta "+
			"TBLPROPERTIES (delta.enableChangeDataFeed = true)",
		"INSERT INTO "+interop.DeltaPath(spPath)+" VALUES (1, 'a', 1.00), (2, 'b', 2.50), (3, 'c', NULL)",
		"UPDATE "+interop.DeltaPath(spPath)+" SET v = 'B' WHERE id = 2",
		"DELETE FROM "+interop.DeltaPath(spPath)+" WHERE id = 3",
	); err != nil {
		t.Fatal(err)
	}
	wantSpark := rowsOf(t, deltaChangeColumns,
		`[1, "a", "1.00", "insert", 1]`, `[2, "b", "2.50", "insert", 1]`, `[3, "c", null, "insert", 1]`,
		`[2, "b", "2.50", "update_preimage", 2]`, `[2, "B", "2.50", "update_postimage", 2]`,
		`[3, "c", null, "delete", 3]`)

	// Commit times: delta-spark types them timestamp (UTC, microseconds),
	// delta-rs timestamp_ntz in milliseconds holding UTC wall-clock time;
	// commitTimesOf reads both as instants.
	checkFeed := func(t *testing.T, what string, want, got *rowjson.Table) map[int64]time.Time {
		t.Helper()
		requireSame(t, what, want, mustSelect(t, got, deltaChangeColumns...))
		return commitTimesOf(t, what, got)
	}
	// sameCommitTimes requires two engines to date each commit of one table
	// alike. delta-rs takes commitInfo.timestamp, Delta the log file's
	// modification time; they are written moments apart.
	sameCommitTimes := func(t *testing.T, a, b map[int64]time.Time) {
		t.Helper()
		for v, ta := range a {
			if d := ta.Sub(b[v]).Abs(); d > 2*time.Second {
				t.Errorf("commit %d: engines date it %v and %v", v, ta, b[v])
			}
		}
	}
	var rsOwn, spOwn map[int64]time.Time

	t.Run("delta-rs reads its own feed", func(t *testing.T) {
		got, err := py.DeltaCDF(ctx, rsPath, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		rsOwn = checkFeed(t, "delta-rs CDF", wantRS, got)
	})
	t.Run("delta-spark reads its own feed", func(t *testing.T) {
		got, err := spark.DeltaChanges(ctx, sess, spPath, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		spOwn = checkFeed(t, "delta-spark CDF", wantSpark, got)
	})
	t.Run("delta-spark reads delta-rs's feed", func(t *testing.T) {
		got, err := spark.DeltaChanges(ctx, sess, rsPath, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		sameCommitTimes(t, rsOwn, checkFeed(t, "delta-spark CDF of delta-rs's table", wantRS, got))
	})
	t.Run("delta-rs reads delta-spark's feed", func(t *testing.T) {
		got, err := py.DeltaCDF(ctx, spPath, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		sameCommitTimes(t, spOwn, checkFeed(t, "delta-rs CDF of delta-spark's table", wantSpark, got))
	})
	t.Run("a version range", func(t *testing.T) {
		got, err := py.DeltaCDF(ctx, rsPath, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		checkFeed(t, "delta-rs CDF of version 1", rowsOf(t, deltaChangeColumns,
			`[2, "b", "2.50", "update_preimage", 1]`, `[2, "B", "2.50", "update_postimage", 1]`), got)
		got, err = spark.DeltaChanges(ctx, sess, spPath, 2, 2)
		if err != nil {
			t.Fatal(err)
		}
		checkFeed(t, "delta-spark CDF of version 2", rowsOf(t, deltaChangeColumns,
			`[2, "b", "2.50", "update_preimage", 2]`, `[2, "B", "2.50", "update_postimage", 2]`), got)
	})
	t.Run("both engines read the same current rows", func(t *testing.T) {
		rs, err := py.DeltaScan(ctx, spPath, -1)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := spark.SQL(ctx, sess, "SELECT * FROM "+interop.DeltaPath(rsPath))
		if err != nil {
			t.Fatal(err)
		}
		want := rowsOf(t, []string{"id", "v", "amount"}, `[1, "a", "1.00"]`, `[2, "B", "2.50"]`)
		requireSame(t, "delta-rs scan of delta-spark's table", want, rs)
		requireSame(t, "delta-spark scan of delta-rs's table", want, sp)
	})
}

// TestFloeBinaryRuns builds ./cmd/floe the way later interop tests will drive
// it and checks that it runs.
func TestFloeBinaryRuns(t *testing.T) {
	interop.Require(t)
	bin := interop.FloeBinary(t)
	if _, err := interop.RunFloe(testCtx(t), bin, t.TempDir(), "--help"); err != nil {
		t.Fatal(err)
	}
}
