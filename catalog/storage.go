package catalog

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// checkWarehouseScheme is an error naming the catalog's warehouse setting
// when no file IO serves its scheme: caught when the catalog opens, not
// deep inside the first write.
func checkWarehouseScheme(name, file string, props iceberg.Properties) error {
	wh := props.Get("warehouse", "")
	scheme, _, ok := strings.Cut(wh, "://")
	if !ok || scheme == "" || scheme == "file" {
		return nil
	}
	schemes := iceio.GetRegisteredSchemes()
	if slices.Contains(schemes, scheme) {
		return nil
	}
	var named []string
	for _, s := range schemes {
		if s != "" && s != "file" {
			named = append(named, s+"://")
		}
	}
	sort.Strings(named)
	return fmt.Errorf("%w: catalog %q in %s: warehouse %s: no file IO for scheme %q (this floe reads local paths, file:// and %s): check warehouse",
		ErrConfig, name, file, wh, scheme, strings.Join(named, ", "))
}

// storagePrefixes are the property prefixes of storage settings, as Iceberg
// names them: s3.* (also for s3a://, oss://), gcs.*, adls.*, and client.*
// (client.region).
var storagePrefixes = []string{"s3.", "gcs.", "adls.", "client."}

// IsStorageKey reports whether a property is a storage setting (s3.*,
// gcs.*, adls.*, client.*).
func IsStorageKey(k string) bool {
	for _, p := range storagePrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// StorageProperties returns the storage settings of the catalog's entry in
// the configuration file (empty for the embedded catalog): the ones
// iceberg-go gives its file IO for the catalog's tables, and floe's Delta
// commands reuse for reading Delta tables.
func (c *Catalog) StorageProperties() iceberg.Properties {
	out := iceberg.Properties{}
	for k, v := range c.props {
		if IsStorageKey(k) {
			out[k] = v
		}
	}
	return out
}

// StorageProfile returns the storage settings named name in the
// configuration file's storage section:
//
//	storage:
//	  lake:
//	    s3.endpoint: http://127.0.0.1:9000
//	    s3.region: us-east-1
//
// configFile empty means $FLOE_CONFIG, else the default file (see
// Options.ConfigFile).
func StorageProfile(configFile, name string) (iceberg.Properties, error) {
	path := configFile
	if path == "" {
		path = os.Getenv(EnvConfig)
	}
	if path == "" {
		path = defaultConfigFile()
	}
	if path == "" {
		return nil, fmt.Errorf("%w: storage profile %q requested but no configuration file: pass --config FILE or set %s", ErrConfig, name, EnvConfig)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	m, ok := cfg.Storage[name]
	if !ok {
		names := make([]string, 0, len(cfg.Storage))
		for n := range cfg.Storage {
			names = append(names, n)
		}
		sort.Strings(names)
		have := strings.Join(names, ", ")
		if have == "" {
			have = "none"
		}
		return nil, fmt.Errorf("%w: no storage profile named %q in %s (configured: %s)", ErrConfig, name, path, have)
	}
	props := iceberg.Properties{}
	for k, v := range m {
		switch v := v.(type) {
		case nil:
		case string:
			props[k] = v
		default:
			props[k] = fmt.Sprint(v)
		}
	}
	return props, nil
}

// ConfigFile returns the configuration file the catalog was opened from
// ("" for the embedded catalog when none was given: the default file then
// applies).
func (c *Catalog) ConfigFile() string { return c.configFile }

// SourceStorage returns the storage settings for reading a table outside
// the catalog (a Delta table): the storage profile when one is named, else
// the catalog's own storage settings (c may be nil: none), with overrides
// (--source-property) on top. A profile replaces the catalog's settings
// rather than adding to them, so that credentials of two stores never mix.
// The profile is read from configFile, else from the catalog's file, else
// from the default file.
func SourceStorage(c *Catalog, configFile, profile string, overrides map[string]string) (map[string]string, error) {
	props := map[string]string{}
	switch {
	case profile != "":
		file := configFile
		if file == "" && c != nil {
			file = c.configFile
		}
		p, err := StorageProfile(file, profile)
		if err != nil {
			return nil, err
		}
		maps.Copy(props, p)
	case c != nil:
		maps.Copy(props, c.StorageProperties())
	}
	maps.Copy(props, overrides)
	return props, nil
}
