//go:build interop

package interop_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/floedata/floe/interop"
)

// pyListTables loads a catalog as PyIceberg's load_catalog does from a
// fresh Config (the file in $PYICEBERG_HOME, ~ or the current folder, then
// the PYICEBERG_* variables) with env set and the working folder cwd, and
// lists every table of every namespace.
const pyListTables = `
import os
import pyiceberg.catalog as pc
from pyiceberg.utils.config import Config
saved, savedcwd = dict(os.environ), os.getcwd()
try:
    for k in [k for k in os.environ if k.upper().startswith("PYICEBERG_")]:
        del os.environ[k]
    os.environ.update(args["env"])
    os.chdir(args["cwd"])
    pc._ENV_CONFIG = Config()
    cat = pc.load_catalog(args["name"])
    result = {"name": cat.name,
              "tables": sorted(".".join(t) for ns in cat.list_namespaces() for t in cat.list_tables(ns))}
finally:
    os.environ.clear()
    os.environ.update(saved)
    os.chdir(savedcwd)
    pc._ENV_CONFIG = Config()
`

// TestPyIcebergConfigParity reads the same configuration (a .pyiceberg.yaml
// in $PYICEBERG_HOME with default-catalog and a relative sqlite:/// URI, a
// catalog defined only by PYICEBERG_CATALOG__* variables with an absolute
// sqlite://// URI, names in another case) with PyIceberg and with floe, and
// checks that both open the same catalogs and list the same tables, whoever
// created them.
func TestPyIcebergConfigParity(t *testing.T) {
	py := interop.SharedPy(t)
	ctx := testCtx(t)
	dir := t.TempDir()
	home, phome, wh := filepath.Join(dir, "home"), filepath.Join(dir, "phome"), filepath.Join(dir, "wh")
	for _, d := range []string{home, phome, wh} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := "default-catalog: Lab\ncatalog:\n  lab:\n    type: sql\n    uri: sqlite:///lab.db\n    warehouse: " + interop.FileURI(wh) + "\n"
	if err := os.WriteFile(filepath.Join(phome, ".pyiceberg.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HOME":                                  home,
		"PYICEBERG_HOME":                        phome,
		"PYICEBERG_CATALOG__ARCHIVE__TYPE":      "sql",
		"PYICEBERG_CATALOG__ARCHIVE__URI":       "sqlite:///" + filepath.Join(dir, "archive.db"), // absolute: four slashes
		"PYICEBERG_CATALOG__ARCHIVE__WAREHOUSE": interop.FileURI(wh),
	}
	floe := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, interop.FloeBinary(t), args...)
		cmd.Dir = dir
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if k == "HOME" || strings.HasPrefix(strings.ToUpper(k), "PYICEBERG_") || strings.HasPrefix(k, "FLOE_") {
				continue
			}
			cmd.Env = append(cmd.Env, kv)
		}
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("floe %s: %v\n%s", strings.Join(args, " "), err, errb.String())
		}
		return out.String()
	}
	pyTables := func(name any) (string, []string) {
		t.Helper()
		raw, err := py.Python(ctx, pyListTables, map[string]any{"env": env, "cwd": dir, "name": name})
		if err != nil {
			t.Fatalf("PyIceberg load_catalog(%v): %v", name, err)
		}
		var res struct {
			Name   string   `json:"name"`
			Tables []string `json:"tables"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		return res.Name, res.Tables
	}
	floeTables := func(global ...string) []string {
		t.Helper()
		var out []string
		for _, ns := range strings.Fields(floe(append(global, "namespace", "list", "--format", "csv")...))[1:] {
			out = append(out, strings.Fields(floe(append(global, "table", "list", ns, "--format", "csv")...))[1:]...)
		}
		slices.Sort(out)
		return out
	}

	// floe writes through the default catalog (no --catalog: the file's
	// default-catalog) and through the catalog made of variables.
	floe("namespace", "create", "shop")
	floe("table", "create", "shop.orders", "--schema", "id long not null, v string", "--key", "id")
	floe("--catalog", "archive", "namespace", "create", "old")
	floe("--catalog", "archive", "table", "create", "old.orders_2023", "--schema", "id long")
	if _, err := os.Stat(filepath.Join(dir, "lab.db")); err != nil {
		t.Fatalf("sqlite:///lab.db is lab.db in the current folder, as SQLAlchemy reads it: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); !os.IsNotExist(err) {
		t.Errorf("floe used its embedded catalog instead of the default-catalog: %v", err)
	}

	// PyIceberg writes into both too.
	if _, err := py.Python(ctx, `
import os
import pyiceberg.catalog as pc
from pyiceberg.utils.config import Config
import pyarrow as pa
saved, savedcwd = dict(os.environ), os.getcwd()
try:
    os.environ.update(args["env"])
    os.chdir(args["cwd"])
    pc._ENV_CONFIG = Config()
    pc.load_catalog(None).create_table("shop.from_py", schema=pa.schema([pa.field("id", pa.int64())]))
    pc.load_catalog("archive").create_table("old.from_py", schema=pa.schema([pa.field("id", pa.int64())]))
finally:
    os.environ.clear()
    os.environ.update(saved)
    os.chdir(savedcwd)
    pc._ENV_CONFIG = Config()
result = True
`, map[string]any{"env": env, "cwd": dir}); err != nil {
		t.Fatalf("PyIceberg create_table: %v", err)
	}

	name, got := pyTables(nil)
	want := floeTables()
	if name != "Lab" || !slices.Equal(got, want) || !slices.Equal(want, []string{"shop.from_py", "shop.orders"}) {
		t.Errorf("default catalog: PyIceberg (%s) lists %v, floe %v; want both [shop.from_py shop.orders]", name, got, want)
	}
	_, got = pyTables("archive")
	want = floeTables("--catalog", "archive")
	if !slices.Equal(got, want) || !slices.Equal(want, []string{"old.from_py", "old.orders_2023"}) {
		t.Errorf("catalog archive: PyIceberg lists %v, floe %v; want both [old.from_py old.orders_2023]", got, want)
	}
	// Names are looked up case-insensitively, and the name as written is the
	// catalog_name of the rows, in both: ARCHIVE is another catalog in the
	// same file, empty.
	_, got = pyTables("ARCHIVE")
	want = floeTables("--catalog", "ARCHIVE")
	if !slices.Equal(got, want) || len(want) != 0 {
		t.Errorf("catalog ARCHIVE: PyIceberg lists %v, floe %v; want both empty", got, want)
	}
}
