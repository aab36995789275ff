package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/pgtest"
)

// TestPostgresCatalogE2E runs the binary against a SQL catalog on a real
// PostgreSQL server, named in a PyIceberg configuration file: create,
// append, sync, read, evolve, expire, rename and drop.
func TestPostgresCatalogE2E(t *testing.T) {
	pg := pgtest.Start(t)
	work := t.TempDir()
	cfg := "catalog:\n  pg:\n    type: sql\n    uri: " + pg.URL("postgresql+psycopg2", "postgres") +
		"\n    warehouse: file://" + filepath.Join(work, "lake") + "\n"
	if err := os.WriteFile(filepath.Join(work, "catalogs.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "o.csv"), []byte("id,status\n1,open\n2,active\n3,active\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	floe := func(want string, args ...string) string {
		t.Helper()
		out := runFloe(t, work, append([]string{"--config", "catalogs.yaml", "--catalog", "pg"}, args...))
		if !strings.HasPrefix(out, want) {
			t.Fatalf("floe %s:\n%s\nwant it to start with %q", strings.Join(args, " "), out, want)
		}
		return out
	}
	floe("exit 0", "namespace", "create", "shop")
	floe("exit 0", "table", "create", "shop.orders", "--schema", "id long not null, status string", "--key", "id")
	floe("exit 0", "table", "append", "shop.orders", "o.csv")
	floe("exit 0", "sync", "shop.orders", "shop.active", "--key", "id", "--filter", "status = 'active'")
	if out := floe("exit 0", "table", "scan", "shop.active", "--format", "csv"); !strings.Contains(out, "2,active\n3,active\n") && !strings.Contains(out, "3,active\n2,active\n") {
		t.Errorf("sync through the PostgreSQL catalog: %s", out)
	}
	floe("exit 0", "table", "alter", "shop.orders", "--add-column", "note string")
	floe("exit 0", "table", "append", "shop.orders", "o.csv")
	floe("exit 0", "table", "expire-snapshots", "shop.orders", "--older-than", "0s", "--retain-last", "1")
	floe("exit 0", "table", "rename", "shop.active", "shop.active2")
	if out := floe("exit 0", "table", "list", "shop", "--format", "csv"); out != "exit 0\ntable\nshop.active2\nshop.orders\n" {
		t.Errorf("tables: %q", out)
	}
	floe("exit 0", "table", "drop", "shop.active2", "--purge")
	floe("exit 1", "namespace", "drop", "shop")
	floe("exit 0", "namespace", "drop", "shop", "--cascade")
}
