package floe_test

// These tests use floe the way a Go program does, through the public
// packages only (TestRootAPISurface keeps their API free of types a user
// could not name): declare a transform, build it, read its status, and run
// its command line.

import (
	"bytes"
	"context"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe"
	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/cmdline"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/tableops"
)

// activeOrders keeps the active rows of shop.orders in shop.active by id.
func activeOrders() *floe.Transform {
	var compute floe.ComputeFunc = func(ctx *floe.Context) error {
		src := ctx.Input("orders").Filter("status = 'active'")
		out := ctx.Output("active")
		if !ctx.IsIncremental() {
			rows, err := src.Current()
			if err != nil {
				return err
			}
			return out.Write(rows)
		}
		changes, err := src.Changelog("id")
		if err != nil {
			return err
		}
		return out.ApplyChangelog(changes, "id")
	}
	opts := []floe.Option{
		floe.WithInput("orders", "shop.orders"),
		floe.WithOutput("active", "shop.active", floe.Identifier("id")),
		floe.WithReadMode(floe.Changelog),
	}
	return floe.NewTransform("active_orders", compute, opts...)
}

// orders writes rows (id, status) to shop.orders in one snapshot.
func orders(t *testing.T, cat *catalog.Catalog, rows ...any) {
	t.Helper()
	if err := appendOrders(context.Background(), cat, rows...); err != nil {
		t.Fatal(err)
	}
}

// appendOrders writes rows (id int, status string, ...) to shop.orders in
// one snapshot.
func appendOrders(ctx context.Context, cat *catalog.Catalog, rows ...any) error {
	ident := table.Identifier{"shop", "orders"}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return err
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i := 0; i < len(rows); i += 2 {
		b.Field(0).(*array.Int64Builder).Append(int64(rows[i].(int)))
		b.Field(1).(*array.StringBuilder).Append(rows[i+1].(string))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	_, err = tableops.Append(ctx, tableops.Target{Catalog: cat, Ident: ident}, func() iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) { rec.Retain(); yield(rec, nil) }
	})
	return err
}

func TestBuildAndStatus(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, true); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String})
	if _, err := tableops.Create(ctx, cat, table.Identifier{"shop", "orders"}, schema, *iceberg.UnpartitionedSpec, nil); err != nil {
		t.Fatal(err)
	}
	orders(t, cat, 1, "active", 2, "closed", 3, "active")

	tr := activeOrders()
	runner := &floe.Runner{Catalog: cat}
	var res *floe.Result
	if res, err = runner.Build(ctx, tr); err != nil {
		t.Fatal(err)
	}
	if res.Incremental || !strings.Contains(res.Reason, "does not exist") || len(res.Outputs) != 1 {
		t.Fatalf("first build %+v", res)
	}
	var out floe.OutputResult = res.Outputs[0]
	if !out.Committed || out.RowsAdded != 2 || out.Table != "shop.active" {
		t.Fatalf("first build output %+v", out)
	}

	// A change: 1 leaves the filter, 4 is new and active.
	if _, err := deleteWhere(ctx, cat, "id = 1"); err != nil {
		t.Fatal(err)
	}
	orders(t, cat, 4, "active")
	if res, err = runner.Build(ctx, tr); err != nil {
		t.Fatal(err)
	}
	var in floe.InputRange = res.Inputs[0]
	if !res.Incremental || in.Snapshots != 2 || res.Outputs[0].RowsAdded != 1 || res.Outputs[0].RowsRemoved != 1 {
		t.Fatalf("incremental build %+v", res)
	}
	if res, err = runner.Build(ctx, tr); err != nil || !res.Skipped {
		t.Fatalf("third build %+v %v", res, err)
	}

	// Its status, as a pipeline of one Go transform.
	p, err := pipeline.FromTransforms("api", []*floe.Transform{tr})
	if err != nil {
		t.Fatal(err)
	}
	st, err := (&pipeline.Runner{Catalog: cat, Pipeline: p}).Status(ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || !st[0].Exists || st[0].Behind == nil || *st[0].Behind != 0 || st[0].BuiltBy != "active_orders" {
		t.Fatalf("status %+v", st)
	}

	// And the command line a program gets from cmdline.
	var stdout, stderr bytes.Buffer
	args := []string{"--warehouse", dir, "--format", "jsonl", "status", "--status-file", filepath.Join(dir, "history.jsonl")}
	if code := cmdline.Run(ctx, "apitest", []*floe.Transform{tr}, args, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("apitest status: exit %d\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"transform":"active_orders"`) || !strings.Contains(stdout.String(), `"behind":0`) {
		t.Fatalf("apitest status:\n%s", stdout.String())
	}
}

// deleteWhere deletes the rows of shop.orders matching a SQL predicate.
func deleteWhere(ctx context.Context, cat *catalog.Catalog, where string) (*tableops.Outcome, error) {
	ident := table.Identifier{"shop", "orders"}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	p, err := expr.CompilePredicate(tbl.Schema(), where)
	if err != nil {
		return nil, err
	}
	return tableops.Delete(ctx, tableops.Target{Catalog: cat, Ident: ident}, &tableops.Predicate{Iceberg: p.Iceberg, Columns: p.Columns, Match: p.Match})
}

// TestOptionsAreValues: the options of NewTransform (functions, not
// variables: TestRootAPISurface) build the declaration.
func TestOptionsAreValues(t *testing.T) {
	tr := floe.NewTransform("x", func(*floe.Context) error { return nil },
		floe.WithInputOnBranch("in", "ns.src", "dev"),
		floe.WithOutput("out", "ns.dst", floe.PartitionBy("bucket(4, id)"), floe.Identifier("id"),
			floe.TableProperties(map[string]string{"k": "v"}), floe.OnBranch("audit")),
		floe.WithSemanticVersion(3))
	in, o := tr.Inputs[0], tr.Outputs[0]
	if in.Branch != "dev" || in.Table != "ns.src" || o.PartitionBy != "bucket(4, id)" || o.Identifier[0] != "id" ||
		o.Properties["k"] != "v" || o.Branch != "audit" || tr.SemanticVersion != 3 || tr.ReadMode != floe.AppendOnly {
		t.Fatalf("declaration %+v %+v %+v", tr, in, o)
	}
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
}
