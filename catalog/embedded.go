package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"

	_ "modernc.org/sqlite" // pure-Go SQLite driver "sqlite"
)

// DBFile is the name of the embedded catalog's SQLite file inside the
// warehouse folder.
const DBFile = "catalog.db"

// sqliteDSN returns a DSN for modernc SQLite that waits for locks held by
// other processes instead of failing at once, and takes the write lock at
// the start of a write transaction (deferred transactions that upgrade
// later can fail without waiting).
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	// NB: in a SQLite URI filename, '?' starts the parameters and '#' a
	// fragment; escape them (and '%') so any folder name works.
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + q.Encode()
}

func openSQLite(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", sqliteDSN(path))
	if err != nil {
		return nil, fmt.Errorf("open SQLite catalog %s: %w", path, err)
	}
	return db, nil
}

func openEmbedded(ctx context.Context, warehouse string, mustExist bool) (*Catalog, error) {
	dir, err := absDir(warehouse)
	if err != nil {
		return nil, err
	}
	dbPath := filepath.Join(dir, DBFile)
	if mustExist {
		if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
			return nil, noCatalogError(dbPath)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create warehouse %s: %w", dir, err)
	}
	db, err := openSQLite(dbPath)
	if err != nil {
		return nil, err
	}
	props := iceberg.Properties{
		"warehouse":             FileURI(dir),
		sqlcat.SchemaVersionKey: sqlcat.SchemaVersionV1,
	}
	cat, err := sqlcat.NewCatalog(EmbeddedName, db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open embedded catalog %s: %w", dbPath, err)
	}
	c := &Catalog{ice: cat, name: EmbeddedName, kind: "embedded", warehouse: dir, db: db, dbFile: dbPath, props: props}
	if err := c.ensurePathRootTable(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// ErrNoCatalog is returned when a command that does not create anything
// is run where no embedded catalog exists (see Options.MustExist).
var ErrNoCatalog = errors.New("no catalog")

func noCatalogError(dbPath string) error {
	return fmt.Errorf("%w at %s: floe creates the embedded catalog only with `floe init` or a command that creates something (namespace create, table create, sync, run, ...); "+
		"pass --warehouse DIR or set %s to use a warehouse elsewhere, or --catalog NAME for a catalog of the configuration file (--config, %s, ~/.pyiceberg.yaml)",
		ErrNoCatalog, dbPath, EnvWarehouse, EnvConfig)
}

// Register adds an existing table, given the path of one of its metadata
// files, without copying any data. When pathRoot is not empty, relative
// paths inside the table's metadata and manifests resolve against it (and
// floe remembers that for later loads). Only the embedded catalog and
// catalogs with a native register operation support it.
func (c *Catalog) Register(ctx context.Context, ident table.Identifier, metadataFile, pathRoot string) (*table.Table, error) {
	name := FormatName(ident)
	c.tables.forget(name)
	if pathRoot != "" {
		abs, err := filepath.Abs(pathRoot)
		if err != nil {
			return nil, err
		}
		pathRoot = abs
		if c.db == nil {
			return nil, fmt.Errorf("%w: --path-root needs the embedded catalog (catalog %q is %s)", ErrUnsupported, c.name, c.kind)
		}
	}
	if !isURI(metadataFile) {
		p := metadataFile
		if !filepath.IsAbs(p) && pathRoot != "" {
			if _, err := os.Stat(p); err != nil {
				p = filepath.Join(pathRoot, p)
			}
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("register %s: metadata file %s: %w", name, metadataFile, err)
		}
		metadataFile = abs
	}
	if ok, err := c.NamespaceExists(ctx, ident[:len(ident)-1]); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: namespace %s (registering %s)", ErrNoSuchNamespace, FormatName(ident[:len(ident)-1]), name)
	}
	// Validate the metadata before anything is recorded.
	fsF := pathRootFSF(pathRoot, metadataFile)
	probe, err := table.NewFromLocation(ctx, ident, metadataFile, fsF, nil)
	if err != nil {
		return nil, fmt.Errorf("register %s: read metadata %s: %w", name, metadataFile, err)
	}
	// Refuse a location that holds the warehouse, the catalog file or
	// another table: maintenance of this table (remove-orphans) would
	// reach their files. A table that cannot be loaded has no known
	// location and is left out here; remove-orphans, which deletes,
	// refuses to run while any table cannot be loaded.
	others, err := c.tableLocations(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("register %s: check the locations of the catalog's tables: %w", name, err)
	}
	if err := c.CheckLocation(ident, NormalizeLocation(probe.Location(), pathRoot), others); err != nil {
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	type registrar interface {
		RegisterTable(context.Context, table.Identifier, string) (*table.Table, error)
	}
	if r, ok := c.ice.(registrar); ok && c.db == nil {
		if _, err := r.RegisterTable(ctx, ident, metadataFile); err != nil {
			return nil, fmt.Errorf("register %s: %w", name, err)
		}
		return c.Load(ctx, ident)
	}
	if c.db == nil {
		return nil, fmt.Errorf("%w: register (catalog %q is %s)", ErrUnsupported, c.name, c.kind)
	}
	if exists, err := c.TableExists(ctx, ident); err != nil {
		return nil, err
	} else if exists {
		return nil, fmt.Errorf("register %s: a table with that name already exists", name)
	}
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ns := nsKey(ident[:len(ident)-1])
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, iceberg_type, metadata_location, previous_metadata_location) VALUES (?, ?, ?, 'TABLE', ?, NULL)`,
		c.name, ns, ident[len(ident)-1], metadataFile); err != nil {
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	if pathRoot != "" {
		if _, err := tx.ExecContext(ctx,
			`INSERT OR REPLACE INTO floe_path_roots (catalog_name, table_namespace, table_name, path_root) VALUES (?, ?, ?, ?)`,
			c.name, ns, ident[len(ident)-1], pathRoot); err != nil {
			return nil, fmt.Errorf("register %s: %w", name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	return c.Load(ctx, ident)
}

// nsKey encodes a namespace as iceberg-go's SQL catalog (and Java's
// JdbcCatalog) stores it: parts joined by dots.
func nsKey(ns table.Identifier) string {
	out := ""
	for i, p := range ns {
		if i > 0 {
			out += "."
		}
		out += p
	}
	return out
}

func (c *Catalog) ensurePathRootTable(ctx context.Context) error {
	_, err := c.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS floe_path_roots (
		catalog_name VARCHAR(255) NOT NULL,
		table_namespace VARCHAR(255) NOT NULL,
		table_name VARCHAR(255) NOT NULL,
		path_root VARCHAR(1000) NOT NULL,
		PRIMARY KEY (catalog_name, table_namespace, table_name))`)
	if err != nil {
		return fmt.Errorf("prepare embedded catalog: %w", err)
	}
	return nil
}

func (c *Catalog) pathRoot(ctx context.Context, ident table.Identifier) (string, bool, error) {
	if c.db == nil {
		return "", false, nil
	}
	var root string
	err := c.db.QueryRowContext(ctx,
		`SELECT path_root FROM floe_path_roots WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`,
		c.name, nsKey(ident[:len(ident)-1]), ident[len(ident)-1]).Scan(&root)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return root, true, nil
}
