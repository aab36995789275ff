package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestResolveQualified: catalog.ns.table names as Spark reads them.
func TestResolveQualified(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "catalogs.yaml")
	yaml := "catalog:\n  other:\n    type: sql\n    uri: sqlite:///" + strings.TrimPrefix(filepath.Join(t.TempDir(), "o.db"), "/") + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(ctx, Options{Warehouse: dir, ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateNamespace(ctx, table.Identifier{"shop"}, true); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := c.Iceberg().CreateTable(ctx, table.Identifier{"shop", "t"}, sc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		in   []string
		want string // resolved name, or an error substring after "error: "
	}{
		{[]string{"shop", "t"}, "shop.t"},
		{[]string{"floe", "shop", "t"}, "shop.t"},
		{[]string{"FLOE", "shop", "t"}, "shop.t"},
		{[]string{"a", "b", "t"}, "a.b.t"},
		{[]string{"other", "shop", "t"}, `error: other.shop.t names the catalog "other", but this command works on the catalog "floe"; pass --catalog other`},
	} {
		got, err := c.Resolve(tc.in)
		if err != nil {
			if !errors.Is(err, ErrBadName) || !strings.HasPrefix(tc.want, "error: ") || !strings.Contains(err.Error(), tc.want[7:]) {
				t.Errorf("Resolve(%v): %v, want %s", tc.in, err, tc.want)
			}
			continue
		}
		if FormatName(got) != tc.want {
			t.Errorf("Resolve(%v) = %s, want %s", tc.in, FormatName(got), tc.want)
		}
	}
	// Load resolves: the qualified name loads the table, another catalog's
	// name is refused before any lookup.
	tbl, err := c.LoadTable(ctx, "floe.shop.t")
	if err != nil {
		t.Fatal(err)
	}
	if FormatName(tbl.Identifier()) != "shop.t" {
		t.Fatalf("loaded %v", tbl.Identifier())
	}
	if _, err := c.LoadTable(ctx, "other.shop.t"); !errors.Is(err, ErrBadName) {
		t.Fatalf("other catalog: %v", err)
	}
}
