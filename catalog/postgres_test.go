package catalog_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/pgtest"
)

// TestPostgresCatalog opens SQL catalogs on a real PostgreSQL server, by
// every uri form PyIceberg and Spark users write, and checks that tables
// made through one are there through another (and across reopening).
func TestPostgresCatalog(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := t.Context()
	wh := t.TempDir()
	cfg := filepath.Join(t.TempDir(), ".pyiceberg.yaml")
	yaml := "catalog:\n" +
		"  pg:\n    type: sql\n    uri: " + pg.URL("postgresql+psycopg2", "postgres") + "\n    warehouse: file://" + wh + "\n" +
		"  jdbc:\n    uri: jdbc:postgresql://127.0.0.1:" + itoa(pg.Port) + "/postgres?sslmode=disable\n    jdbc.user: " + pg.User + "\n    warehouse: file://" + wh + "\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(ctx, catalog.Options{Name: "pg", ConfigFile: cfg, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kind() != "sql" {
		t.Fatalf("kind %s", c.Kind())
	}
	ns := table.Identifier{"shop"}
	if err := c.CreateNamespace(ctx, ns, false); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1}, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := c.Iceberg().CreateTable(ctx, table.Identifier{"shop", "orders"}, sc); err != nil {
		t.Fatal(err)
	}
	tbl, err := c.LoadTable(ctx, "shop.orders")
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"owner": "floe"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit through the PostgreSQL catalog: %v", err)
	}
	if err := c.RenameTable(ctx, table.Identifier{"shop", "orders"}, table.Identifier{"shop", "orders2"}); err != nil {
		t.Fatal(err)
	}
	c.Close()

	// The JDBC spelling (Spark's JdbcCatalog) of another catalog name sees
	// nothing: rows are keyed by catalog name.
	j, err := catalog.Open(ctx, catalog.Options{Name: "jdbc", ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	nss, err := j.ListNamespaces(ctx, nil)
	if err != nil || len(nss) != 0 {
		t.Errorf("catalog jdbc: namespaces %v %v, want none", nss, err)
	}
	j.Close()

	// Reopened, and through the environment instead of the file.
	t.Setenv("PYICEBERG_CATALOG__PG__URI", pg.URL("postgresql", "postgres"))
	t.Setenv("PYICEBERG_CATALOG__PG__WAREHOUSE", "file://"+wh)
	t.Setenv("HOME", t.TempDir())
	t.Setenv(catalog.EnvPyIcebergHome, "")
	t.Setenv(catalog.EnvConfig, "")
	r, err := catalog.Open(ctx, catalog.Options{Name: "pg"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ids, err := r.ListTables(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || !slices.Equal(ids[0], table.Identifier{"shop", "orders2"}) {
		t.Fatalf("tables %v, want shop.orders2", ids)
	}
	got, err := r.LoadTable(ctx, "shop.orders2")
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties()["owner"] != "floe" {
		t.Errorf("properties %v", got.Properties())
	}
	if err := r.DropTable(ctx, table.Identifier{"shop", "orders2"}); err != nil {
		t.Fatal(err)
	}
	if err := r.DropNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string {
	b := []byte{}
	for n > 0 || len(b) == 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}
