//go:build interop

package interop

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "modernc.org/sqlite" // driver "sqlite" for floe's embedded catalog
)

// CatalogName is the catalog_name floe writes into its embedded SQLite
// catalog; engines sharing the file must use the same name (Spark's catalog is
// spark.sql.catalog.floe).
const CatalogName = "floe"

// Warehouse is a warehouse laid out the way floe lays out its own: tables
// beneath Dir and the embedded catalog in Dir/catalog.db.
type Warehouse struct {
	// Dir is the absolute warehouse directory.
	Dir string
	// CatalogDB is Dir/catalog.db.
	CatalogDB string
}

// NewWarehouse creates dir (and parents) and returns its Warehouse.
func NewWarehouse(dir string) (*Warehouse, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	return &Warehouse{Dir: abs, CatalogDB: filepath.Join(abs, "catalog.db")}, nil
}

// URI returns the warehouse location as a file:// URI.
func (w *Warehouse) URI() string { return FileURI(w.Dir) }

// FileURI returns the file:// URI of the absolute path p.
func FileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// Catalog is iceberg-go's SQL catalog over a warehouse's SQLite file, opened
// the way floe opens its embedded catalog. Close releases the database.
type Catalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

// Close closes the catalog and its database handle.
func (c *Catalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

// CatalogProps are the properties floe gives iceberg-go's SQL catalog.
func (w *Warehouse) CatalogProps() iceberg.Properties {
	return iceberg.Properties{
		"warehouse":             w.URI(),
		sqlcat.SchemaVersionKey: sqlcat.SchemaVersionV1,
	}
}

// OpenCatalog opens iceberg-go's SQL catalog on CatalogDB with pure-Go SQLite
// (modernc.org/sqlite), catalog name CatalogName and CatalogProps, creating the
// catalog tables when absent. The caller must Close it.
func (w *Warehouse) OpenCatalog(ctx context.Context) (*Catalog, error) {
	// busy_timeout: Spark's JdbcCatalog and PyIceberg use the same file from
	// other processes; wait for their locks instead of failing at once.
	dsn := "file:" + w.CatalogDB + "?_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("interop: opening %s: %w", w.CatalogDB, err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("interop: opening %s: %w", w.CatalogDB, err)
	}
	cat, err := sqlcat.NewCatalog(CatalogName, db, sqlcat.SQLite, w.CatalogProps())
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("interop: iceberg-go SQL catalog on %s: %w", w.CatalogDB, err)
	}
	return &Catalog{Catalog: cat, db: db}, nil
}

// SparkConf returns the Spark conf that mounts this warehouse's catalog as
// Iceberg catalog CatalogName (see SparkJDBCCatalog).
func (w *Warehouse) SparkConf() map[string]string {
	return SparkJDBCCatalog(CatalogName, w.CatalogDB, w.URI())
}

// PyIceberg returns PyIceberg's SqlCatalog spec for this warehouse's catalog.
func (w *Warehouse) PyIceberg() CatalogSpec {
	return PyIcebergSQLCatalog(CatalogName, w.CatalogDB, w.URI())
}

// SparkJDBCCatalog returns Spark conf mounting the SQLite catalog file db as
// the Iceberg catalog name: Iceberg's JdbcCatalog (type=jdbc) with
// uri=jdbc:sqlite:<db>, jdbc.schema-version=V1 and warehouse. Caching is off so
// Spark sees commits other engines make between statements.
func SparkJDBCCatalog(name, db, warehouse string) map[string]string {
	p := "spark.sql.catalog." + name
	return map[string]string{
		p:                          "org.apache.iceberg.spark.SparkCatalog",
		p + ".type":                "jdbc",
		p + ".uri":                 "jdbc:sqlite:" + db,
		p + ".jdbc.schema-version": "V1",
		p + ".warehouse":           warehouse,
		p + ".cache-enabled":       "false",
	}
}

// SparkRESTCatalog returns Spark conf mounting the REST catalog at uri as the
// Iceberg catalog name, with caching off.
func SparkRESTCatalog(name, uri string) map[string]string {
	p := "spark.sql.catalog." + name
	return map[string]string{
		p:                    "org.apache.iceberg.spark.SparkCatalog",
		p + ".type":          "rest",
		p + ".uri":           uri,
		p + ".cache-enabled": "false",
	}
}
