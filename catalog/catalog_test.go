package catalog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "ns.t", want: []string{"ns", "t"}},
		{in: "a.b.t", want: []string{"a", "b", "t"}},
		{in: "`my.ns`.t", want: []string{"my.ns", "t"}},
		{in: "`a``b`.t", want: []string{"a`b", "t"}},
		{in: "ns..t", err: true},
		{in: "`open.t", err: true},
		{in: "", err: true},
	} {
		got, err := ParseName(tc.in)
		if tc.err {
			if err == nil || !errors.Is(err, ErrBadName) {
				t.Errorf("%q: want ErrBadName, got %v %v", tc.in, got, err)
			}
			continue
		}
		if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%q: got %v %v", tc.in, got, err)
		}
		if back, _ := ParseName(FormatName(got)); strings.Join(back, "|") != strings.Join(got, "|") {
			t.Errorf("FormatName(%v) = %s does not parse back", got, FormatName(got))
		}
	}
	if _, err := ParseTableName("t"); !errors.Is(err, ErrBadName) {
		t.Error("a table name needs a namespace")
	}
}

func TestEmbeddedAndNamedSQLCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateNamespace(ctx, table.Identifier{"ns"}, false); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(filepath.Join(dir, DBFile)); err != nil {
		t.Fatal("the embedded catalog lives in <warehouse>/catalog.db")
	}
	// The same file as a named sql catalog from a pyiceberg-style YAML file.
	cfg := filepath.Join(t.TempDir(), "catalogs.yaml")
	yaml := "catalog:\n  local:\n    type: sql\n    uri: sqlite:///" + filepath.Join(dir, DBFile) + "\n    warehouse: file://" + dir + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	// The embedded catalog's name is "floe": a named catalog "local" sees
	// its own (empty) namespace list in the same file.
	n, err := Open(ctx, Options{Name: "local", ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if n.Kind() != "sql" || n.Name() != "local" {
		t.Fatalf("%s %s", n.Kind(), n.Name())
	}
	if _, err := Open(ctx, Options{Name: "nope", ConfigFile: cfg}); err == nil || !strings.Contains(err.Error(), `no catalog named "nope" (configured: local)`) {
		t.Fatalf("unknown catalog: %v", err)
	}
	if _, err := Open(ctx, Options{Name: "x", ConfigFile: filepath.Join(dir, "missing.yaml")}); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("catalog:\n  x:\n    type: mongo\n"), 0o644)
	if _, err := Open(ctx, Options{Name: "x", ConfigFile: bad}); err == nil || !strings.Contains(err.Error(), `unknown type "mongo"`) {
		t.Fatalf("bad type: %v", err)
	}
}

func TestUnknownTableAndNamespace(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.LoadTable(ctx, "nope.t"); !errors.Is(err, ErrNoSuchNamespace) {
		t.Fatalf("missing namespace: %v", err)
	}
	c.CreateNamespace(ctx, table.Identifier{"ns"}, false)
	if _, err := c.LoadTable(ctx, "ns.t"); !errors.Is(err, ErrNoSuchTable) {
		t.Fatalf("missing table: %v", err)
	}
	if _, err := c.ListTables(ctx, table.Identifier{"nope"}); !errors.Is(err, ErrNoSuchNamespace) {
		t.Fatalf("list missing namespace: %v", err)
	}
}

func TestWarehouseWithSpecialCharacters(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a#b?c%d")
	c, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateNamespace(ctx, table.Identifier{"ns"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DBFile)); err != nil {
		t.Fatalf("the catalog must live in the folder named: %v", err)
	}
}
