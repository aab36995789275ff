//go:build interop

package interop_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rowjson"
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

// smallTable creates namespace.name (id BIGINT required, v STRING; format
// version 2) in cat with iceberg-go and appends rows ids 1..n with v "v<id>".
func smallTable(ctx context.Context, t *testing.T, cat *interop.Catalog, ns, name string, n int) *table.Table {
	t.Helper()
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, sc,
		catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	if err != nil {
		t.Fatal(err)
	}
	return appendSmall(ctx, t, tbl, 1, n)
}

// appendSmall appends ids lo..hi (v "v<id>") to a smallTable table.
func appendSmall(ctx context.Context, t *testing.T, tbl *table.Table, lo, hi int) *table.Table {
	t.Helper()
	cols := []genColumn{
		{tbl.Schema().Field(0), nil},
		{tbl.Schema().Field(1), nil},
	}
	g := &generated{cols: cols}
	for id := lo; id <= hi; id++ {
		g.vals = append(g.vals, []any{int64(id), fmt.Sprintf("v%d", id)})
	}
	return g.appendRows(ctx, t, tbl, 0, len(g.vals))
}

// smallRows is the expected content of a smallTable holding ids.
func smallRows(t *testing.T, ids ...int) *rowjson.Table {
	var rows []string
	for _, id := range ids {
		rows = append(rows, fmt.Sprintf(`[%d, "v%d"]`, id, id))
	}
	return rowsOf(t, []string{"id", "v"}, rows...)
}

// TestSparkSeesNewCommits checks that a Spark session mounted with the
// harness's conf sees a commit iceberg-go makes after Spark has read the
// table (the conf turns Iceberg's caching catalog off).
func TestSparkSeesNewCommits(t *testing.T) {
	spark := interop.SharedSpark(t)
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
	tbl := smallTable(ctx, t, cat, "c", "t", 3)
	sess := spark.TestSession(t, wh.SparkConf())
	got, err := spark.SQL(ctx, sess, "SELECT * FROM floe.c.t")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "Spark before the second commit", smallRows(t, 1, 2, 3), got)
	appendSmall(ctx, t, tbl, 4, 5)
	got, err = spark.SQL(ctx, sess, "SELECT * FROM floe.c.t")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "Spark after iceberg-go's second commit", smallRows(t, 1, 2, 3, 4, 5), got)
}

// TestEqualityDeletes: iceberg-go commits equality deletes; iceberg-go and
// Spark apply them alike. PyIceberg 0.12 cannot read equality deletes (it
// raises): that is its documented limit, pinned here so an upgrade that lifts
// it is noticed (docs/interop.md).
func TestEqualityDeletes(t *testing.T) {
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
	tbl := smallTable(ctx, t, cat, "eq", "t", 8)

	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	keySchema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(mem, keySchema)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{2, 5, 7, 100}, nil)
	keys := b.NewRecordBatch()
	b.Release()
	tx := tbl.NewTransaction()
	if err := tx.CommitEqualityDeletes(ctx, []int{1}, func(yield func(arrow.RecordBatch, error) bool) {
		yield(keys, nil)
	}, nil); err != nil {
		t.Fatal(err)
	}
	keys.Release()
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mem.AssertSize(t, 0)

	want := smallRows(t, 1, 3, 4, 6, 8)
	requireSame(t, "iceberg-go read with equality deletes", want, icebergGoRows(ctx, t, tbl))

	sess := spark.TestSession(t, wh.SparkConf())
	got, err := spark.SQL(ctx, sess, "SELECT * FROM floe.eq.t")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "Spark read with equality deletes", want, got)
	dels, err := spark.SQL(ctx, sess, "SELECT content FROM floe.eq.t.delete_files")
	if err != nil {
		t.Fatal(err)
	}
	requireSame(t, "delete files (content 2 = equality)", rowsOf(t, []string{"content"}, `[2]`), dels)

	_, err = py.IcebergScan(ctx, wh.PyIceberg(), "eq.t", interop.ScanOptions{})
	if err == nil {
		t.Fatal("PyIceberg 0.12 read a table with equality deletes: its documented limit no longer holds; update docs/interop.md")
	}
	if !errors.Is(err, interop.ErrEngine) || !strings.Contains(strings.ToLower(err.Error()), "equality") {
		t.Fatalf("PyIceberg's failure on equality deletes = %v, want an engine error about equality deletes", err)
	}
	t.Logf("PyIceberg's known limit: %v", err)
}
