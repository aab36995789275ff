//go:build cgo

package duckdb_test

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/tableops"
)

// schemaQuery is row-local and keyed: without a schema change its builds
// after the first are incremental.
const schemaQuery = "SELECT * FROM ns.src WHERE amount > 0"

// schemaEnv builds ns.dst once from ns.src, then changes ns.src's schema
// with alter and inserts row; it returns the transform (with policy) and
// the destination's snapshot before the change.
func schemaEnv(t *testing.T, policy string, alter tableops.Alter, row []any) (*env, *transform.Transform, int64) {
	t.Helper()
	e := newEnv(t)
	e.create("src", srcSchema, []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true}, []any{int64(2), "b", int64(5), false})
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "copy", Query: schemaQuery, Dst: "ns.dst", Keys: []string{"id"}, OnSchemaChange: policy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	// Without a schema change the next build is incremental.
	e.insert("src", []any{int64(3), "c", int64(7), nil})
	if res, err := e.build(tr); err != nil || !res.Incremental {
		t.Fatalf("build without a schema change: %+v %v", res, err)
	}
	if _, err := tableops.AlterTable(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, alter); err != nil {
		t.Fatal(err)
	}
	e.insert("src", row)
	return e, tr, e.Load("dst").CurrentSnapshot().SnapshotID
}

func column(t *testing.T, def string) ddl.Column {
	t.Helper()
	c, err := ddl.ParseColumn(def)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fieldID(t *testing.T, e *env, tbl, col string) int {
	t.Helper()
	f, ok := e.Load(tbl).Schema().FindFieldByName(col)
	if !ok {
		t.Fatalf("%s has no column %s: %s", tbl, col, e.Load(tbl).Schema())
	}
	return f.ID
}

// TestSchemaChangeRebuild: by default a column added to the source under
// SELECT * rebuilds the destination in full with it, saying why; a column
// removed too.
func TestSchemaChangeRebuild(t *testing.T) {
	e, tr, _ := schemaEnv(t, "", tableops.Alter{AddColumns: []ddl.Column{column(t, "note string")}},
		[]any{int64(4), "d", int64(1), true, "new"})
	res, err := e.build(tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Incremental || !strings.Contains(res.Reason, "column note string added") || !strings.Contains(res.Reason, "on_schema_change: rebuild") {
		t.Fatalf("build %+v", res)
	}
	if got, want := e.rowsOf("dst"), e.recompute(schemaQuery); got != want || !strings.Contains(got, "'new'") {
		t.Fatalf("got %s, want %s", got, want)
	}
	// The next build is incremental again.
	e.insert("src", []any{int64(5), "e", int64(2), false, "x"})
	if res, err := e.build(tr); err != nil || !res.Incremental {
		t.Fatalf("build after the rebuild: %+v %v", res, err)
	}

	// A column removed: the destination loses it.
	if _, err := tableops.AlterTable(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, tableops.Alter{DropColumns: []string{"flag"}}); err != nil {
		t.Fatal(err)
	}
	// A schema change alone is no new snapshot: the next build with new
	// input sees it.
	e.insert("src", []any{int64(6), "f", int64(3), "y"})
	if res, err = e.build(tr); err != nil {
		t.Fatal(err)
	}
	if res.Incremental || !strings.Contains(res.Reason, "column flag boolean removed") {
		t.Fatalf("build %+v", res)
	}
	if _, ok := e.Load("dst").Schema().FindFieldByName("flag"); ok {
		t.Fatalf("dst kept flag: %s", e.Load("dst").Schema())
	}
	if got, want := e.rowsOf("dst"), e.recompute(schemaQuery); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestSchemaChangeEvolve: evolve takes an added column and a widened type,
// keeping the other columns' field ids; a removed column fails the build
// and commits nothing.
func TestSchemaChangeEvolve(t *testing.T) {
	e, tr, _ := schemaEnv(t, sqltx.SchemaEvolve, tableops.Alter{AddColumns: []ddl.Column{column(t, "note string")}},
		[]any{int64(4), "d", int64(1), true, "new"})
	idBefore, catBefore := fieldID(t, e, "dst", "id"), fieldID(t, e, "dst", "cat")
	res, err := e.build(tr)
	if err != nil {
		t.Fatal(err)
	}
	if res.Incremental || !strings.Contains(res.Reason, "column note string added") || !strings.Contains(res.Reason, "on_schema_change: evolve") {
		t.Fatalf("build %+v", res)
	}
	if fieldID(t, e, "dst", "id") != idBefore || fieldID(t, e, "dst", "cat") != catBefore {
		t.Fatalf("field ids changed: %s", e.Load("dst").Schema())
	}
	if got, want := e.rowsOf("dst"), e.recompute(schemaQuery); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}

	if _, err := tableops.AlterTable(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, tableops.Alter{DropColumns: []string{"flag"}}); err != nil {
		t.Fatal(err)
	}
	// A schema change alone is no new snapshot: the next build with new
	// input sees it.
	e.insert("src", []any{int64(6), "f", int64(3), "y"})
	before := e.Load("dst").CurrentSnapshot().SnapshotID
	_, err = e.build(tr)
	if err == nil || !strings.Contains(err.Error(), "column flag boolean removed") || !strings.Contains(err.Error(), "on_schema_change: evolve only adds columns") ||
		!strings.Contains(err.Error(), "ns.dst") {
		t.Fatalf("error %v", err)
	}
	if after := e.Load("dst").CurrentSnapshot().SnapshotID; after != before {
		t.Fatalf("a failed build committed: %d -> %d", before, after)
	}
}

// TestSchemaChangeFail: fail names the transform's destination and the
// column, commits nothing, and says what to do; a --full build takes the
// new schema.
func TestSchemaChangeFail(t *testing.T) {
	e, tr, before := schemaEnv(t, sqltx.SchemaFail, tableops.Alter{AddColumns: []ddl.Column{column(t, "note string")}},
		[]any{int64(4), "d", int64(1), true, "new"})
	_, err := e.build(tr)
	if err == nil || !strings.Contains(err.Error(), "column note string added") || !strings.Contains(err.Error(), "on_schema_change is fail") ||
		!strings.Contains(err.Error(), "ns.dst") || !strings.Contains(err.Error(), "--full") || !strings.Contains(err.Error(), "transform copy") {
		t.Fatalf("error %v", err)
	}
	if after := e.Load("dst").CurrentSnapshot().SnapshotID; after != before {
		t.Fatalf("a failed build committed: %d -> %d", before, after)
	}
	res, err := (&transform.Runner{Catalog: e.Cat, Full: true}).Build(e.Ctx, tr)
	if err != nil || res.Incremental {
		t.Fatalf("--full build: %+v %v", res, err)
	}
	if got, want := e.rowsOf("dst"), e.recompute(schemaQuery); got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestSchemaChangePolicyValue: an unknown policy fails at declaration.
func TestSchemaChangePolicyValue(t *testing.T) {
	_, _, err := sqltx.New(t.Context(), sqltx.Spec{Query: "SELECT 1 AS id FROM ns.src", Dst: "ns.dst", OnSchemaChange: "append_new_columns"})
	if err == nil || !strings.Contains(err.Error(), `on_schema_change "append_new_columns": want rebuild, evolve or fail`) {
		t.Fatalf("error %v", err)
	}
}
