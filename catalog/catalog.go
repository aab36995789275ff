// Package catalog opens Iceberg catalogs for floe: the embedded default (an
// iceberg-go SQL catalog on a pure-Go SQLite file inside a local warehouse
// folder, laid out as Iceberg's Java JdbcCatalog lays it out) and named
// catalogs from a YAML file in the format pyiceberg and iceberg-go use.
package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
}

// Open opens the catalog o describes. For the embedded catalog the
// warehouse folder and its catalog.db are created when missing.
func Open(ctx context.Context, o Options) (*Catalog, error) {
	o.EnsureDefaults()
	if o.Name == "" {
		c, err := openEmbedded(ctx, o.Warehouse)
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
// says.
func (c *Catalog) Load(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	ident, rerr := c.Resolve(ident) // catalog.ns.table, as in Spark
	if rerr != nil {
		return nil, rerr
	}
	tbl, err := c.ice.LoadTable(ctx, ident)
	if err != nil {
		return nil, c.explainMissing(ctx, ident, err)
	}
	fsF := tbl.FS
	if root, ok, err := c.pathRoot(ctx, ident); err != nil {
		return nil, err
	} else if ok {
		fsF = pathRootFSF(root, tbl.MetadataLocation())
	}
	return c.rebind(tbl, fsF), nil
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
// when ifNotExists is set.
func (c *Catalog) CreateNamespace(ctx context.Context, ns table.Identifier, ifNotExists bool) error {
	err := c.ice.CreateNamespace(ctx, ns, iceberg.Properties{})
	if err != nil && ifNotExists && errors.Is(err, icecat.ErrNamespaceAlreadyExists) {
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
		ok, err := c.ice.CheckNamespaceExists(ctx, ns[:i])
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
	return c.ice.ListNamespaces(ctx, parent)
}

// ListTables lists the tables of a namespace. An unknown namespace is an
// error wrapping ErrNoSuchNamespace.
func (c *Catalog) ListTables(ctx context.Context, ns table.Identifier) ([]table.Identifier, error) {
	ok, err := c.ice.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoSuchNamespace, FormatName(ns))
	}
	var out []table.Identifier
	for id, err := range c.ice.ListTables(ctx, ns) {
		if err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, nil
}

func absDir(dir string) (string, error) {
	dir = strings.TrimPrefix(dir, "file://")
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("warehouse %q: %w", dir, err)
	}
	return abs, nil
}
