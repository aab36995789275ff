package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/hadoop"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"gopkg.in/yaml.v3"
)

// Config is a catalog configuration file in the format pyiceberg and
// iceberg-go use:
//
//	catalog:
//	  prod:
//	    type: rest
//	    uri: https://catalog.example.com
//	    warehouse: s3://bucket/wh
//	    credential: client-id:client-secret   # OAuth2 client credentials
//	    token: eyJ...                         # or a bearer token
//
// Every key of a catalog's map is passed to iceberg-go as a catalog property
// (so scope, oauth2-server-uri, s3.* and the like work too). The storage
// section names sets of storage settings (s3.*, gcs.*, adls.*) for Delta
// tables outside any catalog; see StorageProfile and docs/storage.md.
type Config struct {
	Catalogs map[string]map[string]any `yaml:"catalog"`
	Storage  map[string]map[string]any `yaml:"storage"`
	// DefaultCatalog is the catalog used when none is named (PyIceberg's
	// default-catalog); floe's embedded catalog when empty.
	DefaultCatalog string         `yaml:"default-catalog"`
	Spark          map[string]any `yaml:"spark"`
}

// LoadConfig reads and parses a configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var cfg Config
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	return &cfg, nil
}

// Properties returns the named catalog's properties as strings.
func (c *Config) Properties(name string) (iceberg.Properties, error) {
	m, ok := c.Catalogs[name]
	if !ok {
		m, ok = c.Catalogs[strings.ToLower(name)]
	}
	if !ok {
		names := make([]string, 0, len(c.Catalogs))
		for n := range c.Catalogs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%w: no catalog named %q (configured: %s)", ErrConfig, name, strings.Join(names, ", "))
	}
	props := iceberg.Properties{}
	for k, v := range m {
		switch v := v.(type) {
		case nil:
		case map[string]any:
			// A nested block (spark:, see SparkConfig) is floe's, not
			// a catalog property.
		case string:
			props[k] = v
		default:
			props[k] = fmt.Sprint(v)
		}
	}
	return props, nil
}

// defaultConfigFile is ~/.floe.yaml when it exists, else the
// .pyiceberg.yaml PyIceberg reads ($PYICEBERG_HOME, the home folder, the
// current folder), else "".
func defaultConfigFile() string {
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".floe.yaml")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return pyIcebergConfigFile()
}

func openNamed(ctx context.Context, o Options) (*Catalog, error) {
	path := o.ConfigFile
	if path == "" {
		path = defaultConfigFile()
	}
	cfg, err := resolvedConfig(path)
	if err != nil {
		return nil, err
	}
	props, err := cfg.Properties(o.Name)
	if err != nil {
		if path == "" {
			return nil, fmt.Errorf("%w: catalog %q requested but no configuration file (and no PYICEBERG_CATALOG__%s__* variables): pass --config FILE or set %s or %s",
				ErrConfig, o.Name, strings.ToUpper(o.Name), EnvConfig, EnvPyIcebergHome)
		}
		return nil, fmt.Errorf("%w (file %s)", err, path)
	}
	if path == "" {
		path = "environment"
	}
	kind := strings.ToLower(props.Get("type", ""))
	if kind == "" {
		uri := props.Get("uri", "")
		switch {
		case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
			kind = "rest"
		case strings.HasPrefix(uri, "sqlite"), strings.HasSuffix(uri, ".db"), strings.HasPrefix(uri, "postgres"), strings.HasPrefix(uri, "jdbc:"):
			kind = "sql"
		default:
			return nil, fmt.Errorf("%w: catalog %q in %s has no type (rest, sql, glue, hive or hadoop)", ErrConfig, o.Name, path)
		}
	}
	if err := checkWarehouseScheme(o.Name, path, props); err != nil {
		return nil, err
	}
	c := &Catalog{name: o.Name, kind: kind, props: props, configFile: path}
	switch kind {
	case "sql":
		if err := c.openSQL(ctx, props); err != nil {
			return nil, fmt.Errorf("catalog %q (%s): %w", o.Name, path, err)
		}
		return c, nil
	case "hadoop":
		wh := props.Get("warehouse", props.Get("uri", ""))
		cat, err := hadoop.NewCatalog(o.Name, wh, props)
		if err != nil {
			return nil, fmt.Errorf("catalog %q (%s): %w", o.Name, path, err)
		}
		c.ice = cat
		return c, nil
	case "rest", "glue", "hive":
		if err := compiledIn(kind); err != nil {
			return nil, fmt.Errorf("catalog %q (%s): %w", o.Name, path, err)
		}
		props["type"] = kind
		cat, err := c.openRemote(ctx, props)
		if err != nil {
			return nil, fmt.Errorf("catalog %q (%s, type %s): %w", o.Name, path, kind, err)
		}
		c.ice = cat
		return c, nil
	default:
		return nil, fmt.Errorf("%w: catalog %q in %s has unknown type %q (want rest, sql, glue, hive or hadoop)", ErrConfig, o.Name, path, kind)
	}
}

// openSQL opens a SQL catalog: on a SQLite file (uri as SQLAlchemy reads
// it: sqlite:///relative.db, sqlite:////absolute.db; or jdbc:sqlite:path,
// sqlite:path, a plain path) or on PostgreSQL (postgresql://user:pw@host/db,
// postgresql+psycopg2://..., jdbc:postgresql://host/db with jdbc.user and
// jdbc.password), through pure-Go drivers.
func (c *Catalog) openSQL(ctx context.Context, props iceberg.Properties) error {
	uri := props.Get("uri", "")
	if uri == "" {
		return fmt.Errorf("%w: sql catalog needs uri (sqlite:///catalog.db or postgresql://user@host/db)", ErrConfig)
	}
	if _, ok := props[sqlcat.SchemaVersionKey]; !ok {
		props[sqlcat.SchemaVersionKey] = sqlcat.SchemaVersionV1
	}
	dsn, isPG, err := postgresDSN(uri, props)
	if err != nil {
		return err
	}
	if isPG {
		return c.openPostgres(ctx, dsn, props)
	}
	dialect := strings.ToLower(props.Get(sqlcat.DialectKey, "sqlite"))
	if dialect != "sqlite" {
		return fmt.Errorf("%w: sql catalogs on %s: floe has the SQLite and PostgreSQL drivers", ErrUnsupported, dialect)
	}
	path, ok, err := sqlitePath(uri)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: sql catalog uri %q: want a SQLite (sqlite:///catalog.db) or PostgreSQL (postgresql://user@host/db) URL", ErrUnsupported, uri)
	}
	db, err := openSQLite(path)
	if err != nil {
		return err
	}
	cat, err := sqlcat.NewCatalog(c.name, db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return err
	}
	c.ice, c.db = cat, db
	if abs, err := filepath.Abs(path); err == nil {
		c.dbFile = abs
	}
	return c.ensurePathRootTable(ctx)
}
