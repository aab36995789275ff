//go:build interop

package interop_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/interop"
)

// catalogColumns returns "table.column" for every column of the two catalog
// tables in the SQLite file db, sorted.
func catalogColumns(t *testing.T, db string) []string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var out []string
	for _, tbl := range []string{"iceberg_tables", "iceberg_namespace_properties"} {
		rows, err := conn.Query("SELECT name FROM pragma_table_info(?)", tbl)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			out = append(out, tbl+"."+strings.ToLower(name))
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out)
	return out
}

// TestCatalogFileEitherCreator checks that the SQLite catalog file works
// whichever side creates it: Java's JdbcCatalog (through Spark) or iceberg-go.
// Both must lay out the same V1 columns, and each side must see the other's
// namespaces and tables.
func TestCatalogFileEitherCreator(t *testing.T) {
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	ctx := testCtx(t)

	// Java first: Spark creates the catalog file, a namespace and a table.
	javaWH, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "java"))
	if err != nil {
		t.Fatal(err)
	}
	sess := spark.TestSession(t, javaWH.SparkConf())
	if err := spark.Exec(ctx, sess,
		"CREATE NAMESPACE floe.j",
		"CREATE TABLE floe.j.t (id BIGINT, v STRING) USING iceberg TBLPROPERTIES ('format-version'='2')",
		"INSERT INTO floe.j.t VALUES (1, 'x'), (2, 'y')",
	); err != nil {
		t.Fatal(err)
	}
	javaCols := catalogColumns(t, javaWH.CatalogDB)
	cat, err := javaWH.OpenCatalog(ctx)
	if err != nil {
		t.Fatalf("iceberg-go cannot open the catalog file Java created: %v", err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(ctx, table.Identifier{"j", "t"})
	if err != nil {
		t.Fatalf("iceberg-go cannot load Spark's table: %v", err)
	}
	requireSame(t, "iceberg-go read of Spark's table", rowsOf(t, []string{"id", "v"}, `[1,"x"]`, `[2,"y"]`), icebergGoRows(ctx, t, tbl))
	// And iceberg-go can write into Java's file: a second namespace.
	if err := cat.CreateNamespace(ctx, table.Identifier{"g"}, iceberg.Properties{}); err != nil {
		t.Fatalf("iceberg-go cannot create a namespace in Java's catalog file: %v", err)
	}
	got, err := spark.SQL(ctx, sess, "SHOW NAMESPACES IN floe")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "Spark's namespaces", rowsOf(t, []string{"namespace"}, `["g"]`, `["j"]`), got)

	// iceberg-go first.
	goWH, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "go"))
	if err != nil {
		t.Fatal(err)
	}
	gcat, err := goWH.OpenCatalog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer gcat.Close()
	goCols := catalogColumns(t, goWH.CatalogDB)
	if !slices.Equal(javaCols, goCols) {
		t.Errorf("catalog columns differ:\n  Java JdbcCatalog: %v\n  iceberg-go:       %v", javaCols, goCols)
	}
	if !slices.Contains(goCols, "iceberg_tables.iceberg_type") {
		t.Errorf("iceberg-go's catalog lacks the V1 column iceberg_type: %v", goCols)
	}

	// PyIceberg's SqlCatalog reads the Java-created file too.
	got, err = py.IcebergScan(ctx, javaWH.PyIceberg(), "j.t", interop.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "PyIceberg read of Spark's table", rowsOf(t, []string{"id", "v"}, `[1,"x"]`, `[2,"y"]`), got)
}

// TestSmokePyIcebergWrites: PyIceberg's SqlCatalog writes into floe's catalog
// file (create, two appends, a delete) after iceberg-go created it, and
// iceberg-go and Spark read exactly PyIceberg's rows and snapshots.
func TestSmokePyIcebergWrites(t *testing.T) {
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
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

	schema := []interop.Column{
		{Name: "id", Type: "long"},
		{Name: "name", Type: "string", Nullable: true},
		{Name: "amount", Type: "decimal(10,2)", Nullable: true},
		{Name: "at", Type: "timestamp", Nullable: true},
		{Name: "day", Type: "date", Nullable: true},
		{Name: "payload", Type: "binary", Nullable: true},
		{Name: "score", Type: "double", Nullable: true},
	}
	first := [][]any{
		{1, "a", "1.50", "2024-01-02T03:04:05.123456Z", "2024-01-02", "AQI=", 1.5},
		{2, "b", "-0.01", "1969-12-31T23:59:59.999999Z", "1969-12-31", "", "NaN"},
		{3, nil, nil, nil, nil, nil, nil},
	}
	second := [][]any{
		{4, "é\U0001F600", "99999999.99", "2100-01-01T00:00:00.000000Z", "2100-01-01", "/w==", "-Infinity"},
		{5, "", "0.00", "2000-02-29T12:00:00.000001Z", "2000-02-29", "AA==", 1e-300},
	}
	if _, err := py.IcebergAppend(ctx, wh.PyIceberg(), "py.t", schema, first, true, map[string]string{"format-version": "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := py.IcebergAppend(ctx, wh.PyIceberg(), "py.t", schema, second, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := py.IcebergDelete(ctx, wh.PyIceberg(), "py.t", "id = 2"); err != nil {
		t.Fatal(err)
	}
	want := rowsOf(t, []string{"id", "name", "amount", "at", "day", "payload", "score"},
		`[1, "a", "1.50", "2024-01-02T03:04:05.123456Z", "2024-01-02", "AQI=", 1.5]`,
		`[3, null, null, null, null, null, null]`,
		`[4, "é`+"\U0001F600"+`", "99999999.99", "2100-01-01T00:00:00.000000Z", "2100-01-01", "/w==", "-Infinity"]`,
		`[5, "", "0.00", "2000-02-29T12:00:00.000001Z", "2000-02-29", "AA==", 1e-300]`)

	got, err := py.IcebergScan(ctx, wh.PyIceberg(), "py.t", interop.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "PyIceberg's own read", want, got)

	tbl, err := cat.LoadTable(ctx, table.Identifier{"py", "t"})
	if err != nil {
		t.Fatalf("iceberg-go cannot load PyIceberg's table: %v", err)
	}
	requireSame(t, "iceberg-go read of PyIceberg's table", want, icebergGoRows(ctx, t, tbl))

	sess := spark.TestSession(t, wh.SparkConf())
	got, err = spark.SQL(ctx, sess, "SELECT * FROM floe.py.t")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "Spark read of PyIceberg's table", want, got)

	snaps, err := py.IcebergSnapshots(ctx, wh.PyIceberg(), "py.t")
	if err != nil {
		t.Fatal(err)
	}
	var pyIDs, goIDs []int64
	for _, s := range snaps {
		pyIDs = append(pyIDs, s.SnapshotID)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		goIDs = append(goIDs, s.SnapshotID)
	}
	if len(pyIDs) < 3 || !slices.Equal(pyIDs, goIDs) {
		t.Errorf("snapshots: PyIceberg %v, iceberg-go %v; want the same three or more", pyIDs, goIDs)
	}
}
