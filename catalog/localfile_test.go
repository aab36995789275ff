package catalog

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLocalFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv(EnvWarehouse, "")
	t.Setenv(EnvConfig, "")
	t.Setenv(EnvPyIcebergHome, "")
	cfg := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(cfg, []byte(`catalog:
  lite:
    uri: sqlite:////abs/lite.db
  jdbc:
    type: sql
    uri: jdbc:sqlite:rel.db
  pg:
    type: sql
    uri: postgresql://u@localhost/db
  rest:
    uri: http://localhost:8181
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Warehouse: dir}, filepath.Join(dir, DBFile)},
		{Options{ConfigFile: cfg, Name: "lite"}, "/abs/lite.db"},
		{Options{ConfigFile: cfg, Name: "jdbc"}, "rel.db"},
		{Options{ConfigFile: cfg, Name: "pg"}, ""},
		{Options{ConfigFile: cfg, Name: "rest"}, ""},
		{Options{ConfigFile: cfg, Name: "missing"}, ""},
	} {
		if got := LocalFile(tc.o); got != tc.want {
			t.Errorf("LocalFile(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, DBFile)); err == nil {
		t.Error("LocalFile created the embedded catalog")
	}
}
