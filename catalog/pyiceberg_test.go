package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestSQLitePath(t *testing.T) {
	for _, tc := range []struct {
		uri, want string
		notSQLite bool
		err       bool
	}{
		// SQLAlchemy: three slashes and a relative path, four for an absolute one.
		{uri: "sqlite:///x.db", want: "x.db"},
		{uri: "sqlite:///dir/x.db", want: "dir/x.db"},
		{uri: "sqlite:////abs/catalog.db", want: "/abs/catalog.db"},
		{uri: "sqlite+pysqlite:////abs/catalog.db", want: "/abs/catalog.db"},
		{uri: "sqlite:////abs/catalog.db?mode=ro", want: "/abs/catalog.db"},
		{uri: "sqlite:////abs/my%20catalog.db", want: "/abs/my catalog.db"},
		{uri: "sqlite:rel.db", want: "rel.db"},
		{uri: "jdbc:sqlite:/abs/catalog.db", want: "/abs/catalog.db"},
		{uri: "jdbc:sqlite:file:/abs/catalog.db", want: "/abs/catalog.db"},
		{uri: "file:///abs/catalog.db", want: "/abs/catalog.db"},
		{uri: "/abs/catalog.db", want: "/abs/catalog.db"},
		{uri: "catalog.db", want: "catalog.db"},
		{uri: "sqlite://", err: true},
		{uri: "sqlite:///:memory:", err: true},
		{uri: "sqlite://host/x.db", err: true},
		{uri: "postgresql://u@h/db", notSQLite: true},
		{uri: "sqlitefoo:x", notSQLite: true},
	} {
		got, ok, err := sqlitePath(tc.uri)
		switch {
		case tc.err:
			if err == nil || !errors.Is(err, ErrConfig) {
				t.Errorf("%s: want an ErrConfig, got %q %v", tc.uri, got, err)
			}
		case tc.notSQLite:
			if ok || err != nil {
				t.Errorf("%s: want not SQLite, got %q %v %v", tc.uri, got, ok, err)
			}
		case err != nil || !ok || got != tc.want:
			t.Errorf("%s: got %q %v %v, want %q", tc.uri, got, ok, err, tc.want)
		}
	}
}

func TestPostgresDSN(t *testing.T) {
	for _, tc := range []struct {
		uri   string
		props map[string]string
		want  string
		notPG bool
	}{
		{uri: "postgresql://u:p@h:5432/db", want: "postgres://u:p@h:5432/db"},
		{uri: "postgresql+psycopg2://u@h/db?sslmode=disable", want: "postgres://u@h/db?sslmode=disable"},
		{uri: "postgres://u@h/db", want: "postgres://u@h/db"},
		{uri: "jdbc:postgresql://h:5432/db", props: map[string]string{"jdbc.user": "u", "jdbc.password": "p"}, want: "postgres://u:p@h:5432/db"},
		{uri: "jdbc:postgresql://h/db?user=u&password=p&sslmode=disable", want: "postgres://u:p@h/db?sslmode=disable"},
		{uri: "sqlite:///x.db", notPG: true},
		{uri: "mysql://u@h/db", notPG: true},
	} {
		got, ok, err := postgresDSN(tc.uri, tc.props)
		switch {
		case tc.notPG:
			if ok || err != nil {
				t.Errorf("%s: want not PostgreSQL, got %q %v %v", tc.uri, got, ok, err)
			}
		case err != nil || !ok || got != tc.want:
			t.Errorf("%s: got %q %v %v, want %q", tc.uri, got, ok, err, tc.want)
		}
	}
}

func TestApplyEnvironment(t *testing.T) {
	cfg := &Config{Catalogs: map[string]map[string]any{"prod": {"uri": "http://file", "warehouse": "s3://a"}}}
	err := applyEnvironment(cfg, []string{
		"PYICEBERG_CATALOG__PROD__URI=http://env",
		"PYICEBERG_CATALOG__PROD__WAREHOUSE=",             // empty: the file's value stays
		"PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID=AKIA", // "__" after the name: ".", "_": "-"
		"pyiceberg_catalog__Lab__type=sql",                // case-insensitive
		"PYICEBERG_DEFAULT_CATALOG=lab",
		"PYICEBERG_HOME=/somewhere",
		"PATH=/bin",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"prod": {"uri": "http://env", "warehouse": "s3://a", "s3.access-key-id": "AKIA"},
		"lab":  {"type": "sql"},
	}
	for name, props := range want {
		for k, v := range props {
			if got := cfg.Catalogs[name][k]; got != v {
				t.Errorf("catalog %s key %s = %v, want %v (all: %v)", name, k, got, v, cfg.Catalogs)
			}
		}
		if len(cfg.Catalogs[name]) != len(props) {
			t.Errorf("catalog %s = %v, want %v", name, cfg.Catalogs[name], props)
		}
	}
	if cfg.DefaultCatalog != "lab" {
		t.Errorf("default catalog %q", cfg.DefaultCatalog)
	}
	if err := applyEnvironment(&Config{}, []string{"PYICEBERG_CATALOG__PROD=x"}); err == nil {
		t.Errorf("PYICEBERG_CATALOG__PROD=x: want an error")
	}
}

func TestPyIcebergConfigSearch(t *testing.T) {
	home, phome, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv(EnvPyIcebergHome, phome)
	t.Chdir(cwd)
	if got := defaultConfigFile(); got != "" {
		t.Fatalf("no file anywhere: got %q", got)
	}
	write := func(dir, name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("catalog: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// PyIceberg's order: $PYICEBERG_HOME, the home folder, the current folder.
	inCwd := write(cwd, ".pyiceberg.yaml")
	if got := defaultConfigFile(); got != inCwd {
		t.Errorf("got %q, want %q", got, inCwd)
	}
	inHome := write(home, ".pyiceberg.yaml")
	if got := defaultConfigFile(); got != inHome {
		t.Errorf("got %q, want %q", got, inHome)
	}
	inPHome := write(phome, ".pyiceberg.yaml")
	if got := defaultConfigFile(); got != inPHome {
		t.Errorf("got %q, want %q", got, inPHome)
	}
	// floe's own file comes first.
	floe := write(home, ".floe.yaml")
	if got := defaultConfigFile(); got != floe {
		t.Errorf("got %q, want %q", got, floe)
	}
}

func TestDefaultCatalogAndMustExist(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv(EnvPyIcebergHome, "")
	t.Setenv(EnvWarehouse, "")
	t.Chdir(dir)
	// Without a catalog, a command that must not create one fails and says so.
	if _, err := Open(t.Context(), Options{MustExist: true}); !errors.Is(err, ErrNoCatalog) {
		t.Fatalf("want ErrNoCatalog, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the failed open created the warehouse folder: %v", err)
	}
	// The file's default-catalog is used when no catalog is named.
	db := filepath.Join(dir, "lab.db")
	cfg := "default-catalog: Lab\ncatalog:\n  LAB:\n    type: sql\n    uri: sqlite:///lab.db\n    warehouse: file://" + filepath.Join(dir, "wh") + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".pyiceberg.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(t.Context(), Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// PyIceberg keeps the name as written (it is the catalog_name of the
	// catalog's rows) and looks its configuration up case-insensitively.
	if c.Name() != "Lab" || c.Kind() != "sql" {
		t.Errorf("opened %s (%s), want the default catalog Lab (sql)", c.Name(), c.Kind())
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("sqlite:///lab.db is lab.db in the current folder: %v", err)
	}
}
