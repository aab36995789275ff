package catalog

import (
	"os"
	"path/filepath"
	"strings"
)

// LocalFile returns the local SQLite file that opening o would use (the
// embedded catalog's catalog.db, or a named SQL catalog's SQLite file),
// without opening or creating anything; "" when o names a catalog kept
// elsewhere (REST, Glue, Hive, Hadoop, PostgreSQL) or a configuration
// that cannot be read. A caller that must not create a catalog by
// surprise checks that the file exists before calling Open (Open's
// MustExist covers the embedded catalog only).
func LocalFile(o Options) string {
	if o.Name == "" && o.Warehouse == "" && os.Getenv(EnvWarehouse) == "" {
		o.Name = defaultCatalogName(o.ConfigFile) // as Open does
	}
	o.EnsureDefaults()
	if o.Name == "" {
		dir, err := absDir(o.Warehouse)
		if err != nil {
			return ""
		}
		return filepath.Join(dir, DBFile)
	}
	path := o.ConfigFile
	if path == "" {
		path = defaultConfigFile()
	}
	cfg, err := resolvedConfig(path)
	if err != nil {
		return ""
	}
	props, err := cfg.Properties(o.Name)
	if err != nil {
		return ""
	}
	kind := strings.ToLower(props.Get("type", ""))
	uri := props.Get("uri", "")
	if kind != "sql" && kind != "" {
		return ""
	}
	if _, isPG, err := postgresDSN(uri, props); err != nil || isPG {
		return ""
	}
	p, ok, err := sqlitePath(uri)
	if err != nil || !ok {
		return ""
	}
	return p
}
