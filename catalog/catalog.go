// Package catalog opens Iceberg catalogs for floe: the embedded default (an
// iceberg-go SQL catalog on a pure-Go SQLite file inside a local warehouse
// folder, laid out as Iceberg's Java JdbcCatalog lays it out) and named
// catalogs from a YAML file in the format pyiceberg and iceberg-go use.
//
// The sql and hadoop types are compiled in; rest, glue and hive are
// registered by the program that imports them (the floe binary does, in
// cmd/floe; see package floe), and a configuration naming one that is not
// compiled in fails with ErrUnsupported, naming the import. Errors wrap the
// sentinels of errors.go (test with errors.Is). A Catalog is safe for
// concurrent use as far as the iceberg-go catalog under it is; Close it
// when done.
package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// EmbeddedName is the catalog name floe's embedded catalog writes into the
// catalog_name column of its SQLite tables. Another engine opening the same
// file (Spark's JdbcCatalog, PyIceberg's SqlCatalog) must use this name.
const EmbeddedName = "floe"

// Environment variables consulted by Options.EnsureDefaults.
const (
	EnvWarehouse = "FLOE_WAREHOUSE"
	EnvConfig    = "FLOE_CONFIG"
)

// Options says which catalog to open. The zero value opens the embedded
// catalog in ./warehouse (or $FLOE_WAREHOUSE).
type Options struct {
	// Warehouse is the folder of the embedded catalog. It is created on first
	// use. Empty means $FLOE_WAREHOUSE, else ./warehouse.
	Warehouse string
	// Name selects a catalog from the configuration file instead of the
	// embedded one.
	Name string
	// ConfigFile is the YAML file holding named catalogs. Empty means
	// $FLOE_CONFIG, else ~/.floe.yaml when it exists, else ~/.pyiceberg.yaml.
	ConfigFile string
	// MustExist makes opening the embedded catalog fail with
	// ErrNoCatalog, instead of creating it, when its catalog.db does not
	// exist: commands that only read or change existing tables must not
	// create an empty catalog somewhere by surprise.
	MustExist bool
}

// EnsureDefaults fills the empty fields of o from the environment.
func (o *Options) EnsureDefaults() {
	if o.Warehouse == "" {
		o.Warehouse = os.Getenv(EnvWarehouse)
	}
	if o.Warehouse == "" {
		o.Warehouse = "warehouse"
	}
	if o.ConfigFile == "" {
		o.ConfigFile = os.Getenv(EnvConfig)
	}
}

// Catalog is an open catalog. It is safe for concurrent use as far as the
// underlying iceberg-go catalog is.
type Catalog struct {
	ice       icecat.Catalog
	name      string
	kind      string
	warehouse string // absolute folder for the embedded catalog, else ""
	db        *sql.DB
	dbFile    string // the SQLite file of the embedded or a sql catalog, else ""
	props     iceberg.Properties
	// configFile is the configuration file of a named catalog, or the one
	// Options named for the embedded catalog (storage profiles live there).
	configFile string
	wrapIO     func(iceio.IO) iceio.IO // see Wrap
	// retryBudget bounds the retries of transient failures (see retry);
	// unset: DefaultRetryBudget.
	retryBudget    time.Duration
	retryBudgetSet bool
	tables         tableCache
}

// Open opens the catalog o describes. For the embedded catalog the
// warehouse folder and its catalog.db are created when missing.
func Open(ctx context.Context, o Options) (*Catalog, error) {
	if o.Name == "" && o.Warehouse == "" && os.Getenv(EnvWarehouse) == "" {
		// PyIceberg's load_catalog() without a name loads the file's
		// default-catalog.
		o.Name = defaultCatalogName(o.ConfigFile)
	}
	o.EnsureDefaults()
	if o.Name == "" {
		c, err := openEmbedded(ctx, o.Warehouse, o.MustExist)
		if c != nil {
			c.configFile = o.ConfigFile
		}
		return c, err
	}
	return openNamed(ctx, o)
}

// Iceberg returns the underlying iceberg-go catalog.
func (c *Catalog) Iceberg() icecat.Catalog { return c.ice }

// Name returns the catalog's name (EmbeddedName for the embedded catalog).
func (c *Catalog) Name() string { return c.name }

// Kind returns the catalog type: "embedded", "rest", "sql", "hadoop", "glue"
// or "hive".
func (c *Catalog) Kind() string { return c.kind }

// Warehouse returns the embedded catalog's absolute warehouse folder, or ""
// for other catalogs.
func (c *Catalog) Warehouse() string { return c.warehouse }

// Close releases the catalog's resources.
func (c *Catalog) Close() error {
	var err error
	if cl, ok := c.ice.(icecat.Closer); ok {
		err = cl.Close()
	}
	if c.db != nil {
		err = errors.Join(err, c.db.Close())
	}
	return err
}

// LoadTable loads the table called name ("ns.tbl", or "catalog.ns.tbl" with
// this catalog's name: see Resolve). An unknown table or
// namespace is an error wrapping ErrNoSuchTable or ErrNoSuchNamespace that
// names it.
func (c *Catalog) LoadTable(ctx context.Context, name string) (*table.Table, error) {
	ident, err := ParseTableName(name)
	if err != nil {
		return nil, err
	}
	return c.Load(ctx, ident)
}

// Load loads the table with the given identifier. See LoadTable. The
// table commits through CommitTable, and its file IO is wrapped as Wrap
// says. Transient failures are retried (see WithoutRetry). Every call sees
// the catalog's current metadata location; when it is the one of the last
// load through c, the table is not parsed again (see tableCache).
func (c *Catalog) Load(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	ident, rerr := c.Resolve(ident) // catalog.ns.table, as in Spark
	if rerr != nil {
		return nil, rerr
	}
	if len(ident) < 2 {
		return nil, fmt.Errorf("%w: %q: a table name needs a namespace, as in ns.t", ErrNoSuchTable, FormatName(ident))
	}
	name := FormatName(ident)
	loc, known := c.currentLocation(ctx, ident)
	if known {
		if tbl, ok := c.tables.get(name, loc); ok {
			return tbl, nil
		}
	}
	var tbl *table.Table
	var root string
	var rooted bool
	err := c.retry(ctx, "load table "+name, func(ctx context.Context) error {
		var err error
		if tbl, err = c.ice.LoadTable(ctx, ident); err != nil {
			return err
		}
		root, rooted, err = c.pathRoot(ctx, ident)
		return err
	})
	if err != nil {
		if tbl == nil {
			return nil, c.explainMissing(ctx, ident, err)
		}
		return nil, err
	}
	fsF := tbl.FS
	if rooted {
		fsF = pathRootFSF(root, tbl.MetadataLocation())
	}
	tbl = c.rebind(tbl, fsF)
	if known {
		c.tables.put(name, tbl)
	}
	return tbl, nil
}

// explainMissing turns iceberg-go's lookup errors into messages that say
// whether the namespace or the table is missing.
func (c *Catalog) explainMissing(ctx context.Context, ident table.Identifier, err error) error {
	name := FormatName(ident)
	if errors.Is(err, icecat.ErrNoSuchNamespace) || errors.Is(err, icecat.ErrNoSuchTable) {
		ns := ident[:len(ident)-1]
		if ok, nerr := c.ice.CheckNamespaceExists(ctx, ns); nerr == nil && !ok {
			return fmt.Errorf("%w: %s", ErrNoSuchNamespace, MissingNamespace(ident, "table"))
		}
		return fmt.Errorf("%w: %s in catalog %q", ErrNoSuchTable, name, c.name)
	}
	return fmt.Errorf("load table %s: %w", name, err)
}

// CreateNamespace creates a namespace; it is not an error if it exists
// when ifNotExists is set. Transient failures are retried; a namespace
// that exists at a retry was created by the call whose answer was lost.
func (c *Catalog) CreateNamespace(ctx context.Context, ns table.Identifier, ifNotExists bool) error {
	n := 0
	err := c.retry(ctx, "create namespace "+FormatName(ns), func(ctx context.Context) error {
		n++
		return c.ice.CreateNamespace(ctx, ns, iceberg.Properties{})
	})
	if err != nil && (ifNotExists || n > 1) && errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create namespace %s: %w", FormatName(ns), err)
	}
	return nil
}

// EnsureNamespace creates ns and its parents when they are missing.
func (c *Catalog) EnsureNamespace(ctx context.Context, ns table.Identifier) error {
	for i := 1; i <= len(ns); i++ {
		ok, err := c.NamespaceExists(ctx, ns[:i])
		if err != nil {
			return fmt.Errorf("check namespace %s: %w", FormatName(ns[:i]), err)
		}
		if !ok {
			if err := c.CreateNamespace(ctx, ns[:i], true); err != nil {
				return err
			}
		}
	}
	return nil
}

// ListNamespaces lists the namespaces under parent (all top-level ones
// when parent is empty).
func (c *Catalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	var out []table.Identifier
	err := c.retry(ctx, "list namespaces", func(ctx context.Context) error {
		var err error
		out, err = c.ice.ListNamespaces(ctx, parent)
		return err
	})
	return out, err
}

// NamespaceExists reports whether the namespace exists, retrying
// transient failures.
func (c *Catalog) NamespaceExists(ctx context.Context, ns table.Identifier) (bool, error) {
	var ok bool
	err := c.retry(ctx, "check namespace "+FormatName(ns), func(ctx context.Context) error {
		var err error
		ok, err = c.ice.CheckNamespaceExists(ctx, ns)
		return err
	})
	return ok, err
}

// TableExists reports whether the table exists, retrying transient
// failures.
func (c *Catalog) TableExists(ctx context.Context, ident table.Identifier) (bool, error) {
	var ok bool
	err := c.retry(ctx, "check table "+FormatName(ident), func(ctx context.Context) error {
		var err error
		ok, err = c.ice.CheckTableExists(ctx, ident)
		return err
	})
	return ok, err
}

// ListTables lists the tables of a namespace. An unknown namespace is an
// error wrapping ErrNoSuchNamespace.
func (c *Catalog) ListTables(ctx context.Context, ns table.Identifier) ([]table.Identifier, error) {
	ok, err := c.NamespaceExists(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchNamespace, FormatName(ns))
	}
	var out []table.Identifier
	err = c.retry(ctx, "list tables of "+FormatName(ns), func(ctx context.Context) error {
		out = nil
		for id, err := range c.ice.ListTables(ctx, ns) {
			if err != nil {
				return err
			}
			out = append(out, id)
		}
		return nil
	})
	return out, err
}

func absDir(dir string) (string, error) {
	if p, ok := FileURIPath(dir); ok {
		dir = p
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("warehouse %q: %w", dir, err)
	}
	return abs, nil
}
