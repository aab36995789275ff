package catalog

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestLoadReusesUnchangedMetadata checks the table cache: a second load
// of an unchanged table returns the table already parsed, and a load after
// another process (another Catalog on the same file) committed returns the
// new state, never the cached one.
func TestLoadReusesUnchangedMetadata(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ident := table.Identifier{"ns", "t"}
	if err := a.CreateNamespace(ctx, ident[:1], false); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := a.Iceberg().CreateTable(ctx, ident, sc); err != nil {
		t.Fatal(err)
	}
	t1, err := a.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := a.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if t1 != t2 {
		t.Fatal("a second load of an unchanged table parsed its metadata again")
	}
	b, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tb, err := b.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tb.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	t3, err := a.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if t3 == t1 || t3.MetadataLocation() == t1.MetadataLocation() || t3.Properties()["k"] != "v" {
		t.Fatalf("after another catalog's commit, load returned the old state (%s, k=%q)", t3.MetadataLocation(), t3.Properties()["k"])
	}
	if _, err := a.Load(ctx, table.Identifier{"ns", "missing"}); err == nil {
		t.Fatal("loading a missing table succeeded")
	}
}
