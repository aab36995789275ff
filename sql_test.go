//go:build cgo

package floe_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe"
	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/sqltx/duckdb" // registers the SQL engine (DuckDB, cgo)
	"github.com/floedata/floe/tableops"
)

// ExampleSQL keeps shop.open_orders equal to a SELECT over shop.orders:
// the query is row-local, so after the first build floe maintains it from
// the changes of shop.orders, by id.
func ExampleSQL() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "floe-example-")
	defer os.RemoveAll(dir)
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: dir})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cat.Close()
	if err := exampleOrders(ctx, cat); err != nil {
		fmt.Println(err)
		return
	}

	t, err := floe.SQL(floe.SQLSpec{
		Name:  "open_orders",
		Query: "SELECT id, upper(status) AS status FROM shop.orders WHERE status <> 'closed'",
		Keys:  []string{"id"},
		Dst:   "shop.open_orders",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := (&floe.Runner{Catalog: cat}).Build(ctx, t)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("incremental:", res.Incremental, "rows added:", res.Outputs[0].RowsAdded)

	_, rows, done, err := sqltx.Query(ctx, cat, "SELECT id, status FROM shop.open_orders ORDER BY id")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	for rec, err := range rows {
		if err != nil {
			fmt.Println(err)
			return
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			fmt.Println(rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i))
		}
		rec.Release()
	}
	// Output:
	// incremental: false rows added: 2
	// 1 ACTIVE
	// 3 NEW
}

// exampleOrders creates shop.orders (id, status) with three rows.
func exampleOrders(ctx context.Context, cat *catalog.Catalog) error {
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, true); err != nil {
		return err
	}
	schema := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String})
	if _, err := tableops.Create(ctx, cat, table.Identifier{"shop", "orders"}, schema, *iceberg.UnpartitionedSpec, nil); err != nil {
		return err
	}
	return appendOrders(ctx, cat, 1, "active", 2, "closed", 3, "new")
}

// TestSQL: a transform from floe.SQL builds incrementally after its first
// build, like one from NewTransform, and SQL without an engine registered
// fails naming the import.
func TestSQL(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := exampleOrders(ctx, cat); err != nil {
		t.Fatal(err)
	}
	tr, err := floe.SQL(floe.SQLSpec{Query: "SELECT id, status FROM shop.orders WHERE status = 'active'", Keys: []string{"id"}, Dst: "shop.active"})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Name != "sql -> shop.active" || len(tr.Inputs) != 1 || tr.Inputs[0].Table != "shop.orders" || tr.Outputs[0].Table != "shop.active" {
		t.Fatalf("declaration %+v", tr)
	}
	runner := &floe.Runner{Catalog: cat}
	if _, err := runner.Build(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if err := appendOrders(ctx, cat, 4, "active", 5, "closed"); err != nil {
		t.Fatal(err)
	}
	res, err := runner.Build(ctx, tr)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Incremental || res.Outputs[0].RowsAdded != 1 || res.Outputs[0].RowsRemoved != 0 {
		t.Fatalf("second build %+v %+v", res, res.Outputs[0])
	}

	if _, err := floe.SQL(floe.SQLSpec{Query: "SELECT id FROM orders", Dst: "shop.x"}); err == nil || !strings.Contains(err.Error(), `sql transform "sql -> shop.x"`) {
		t.Fatalf("a table without namespace: %v", err)
	}
	sqltx.Register(nil)
	defer sqltx.Register(duckdb.Engine{})
	_, err = floe.SQL(floe.SQLSpec{Name: "q", Query: "SELECT 1 AS id FROM shop.orders", Dst: "shop.x"})
	if !errors.Is(err, sqltx.ErrNoEngine) || !strings.Contains(err.Error(), `import _ "github.com/floedata/floe/sqltx/duckdb"`) || !strings.Contains(err.Error(), `"q"`) {
		t.Fatalf("without an engine: %v", err)
	}
}

// TestSQLDelta: floe.SQL takes a Delta Lake table as delta."PATH" (here a
// table delta-rs wrote, replayed one version at a time): its inputs name
// the Delta table, and after the first build the Delta versions are read
// from the Change Data Feed.
func TestSQLDelta(t *testing.T) {
	src := filepath.Join("..", "shared", "testdata", "delta", "deltars-simple_table_with_cdc")
	logs, _ := filepath.Glob(filepath.Join(src, "_delta_log", "*.json"))
	if len(logs) < 2 {
		t.Skipf("the real Delta table %s is not there (../shared/testdata/delta)", src)
	}
	dir := filepath.Join(t.TempDir(), "simple")
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
	ctx := context.Background()
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, true); err != nil {
		t.Fatal(err)
	}
	q := `SELECT id, id * 10 AS tens FROM delta."` + dir + `"`
	tr, err := floe.SQL(floe.SQLSpec{Name: "simple", Query: q, Keys: []string{"id"}, Dst: "shop.simple"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Inputs) != 1 || tr.Inputs[0].Table != "delta:"+dir || tr.Inputs[0].Delta != dir {
		t.Fatalf("inputs %+v", tr.Inputs)
	}
	rowsOf := func(q string) string {
		_, rows, done, err := sqltx.Query(ctx, cat, q)
		if err != nil {
			t.Fatal(err)
		}
		defer done()
		var out []string
		for rec, err := range rows {
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				out = append(out, rec.Column(0).ValueStr(i)+":"+rec.Column(1).ValueStr(i))
			}
			rec.Release()
		}
		return strings.Join(out, " ")
	}
	runner := &floe.Runner{Catalog: cat}
	for i, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(log, filepath.Base(l)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := runner.Build(ctx, tr)
		if err != nil {
			t.Fatalf("version %d: %v", i, err)
		}
		if res.Incremental != (i > 0) {
			t.Fatalf("version %d: incremental %v (%s)", i, res.Incremental, res.Reason)
		}
		if got, want := rowsOf("SELECT id, tens FROM shop.simple ORDER BY id"), rowsOf(q+" ORDER BY id"); got != want {
			t.Fatalf("version %d: got %s, want %s", i, got, want)
		}
	}
}
