package catalog

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// PyIceberg's configuration conventions, which floe follows so that one
// .pyiceberg.yaml (and one environment) opens the same catalogs in both.
const (
	// EnvPyIcebergHome is the folder PyIceberg looks in first for
	// .pyiceberg.yaml.
	EnvPyIcebergHome = "PYICEBERG_HOME"
	pyIcebergFile    = ".pyiceberg.yaml"
	pyIcebergEnv     = "pyiceberg_"
)

// pyIcebergConfigFile returns the configuration file PyIceberg reads: the
// first .pyiceberg.yaml in $PYICEBERG_HOME, the home folder and the
// current folder, or "" when there is none.
func pyIcebergConfigFile() string {
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	for _, dir := range []string{os.Getenv(EnvPyIcebergHome), home, cwd} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, pyIcebergFile)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// applyEnvironment merges PyIceberg's environment variables into cfg as
// PyIceberg does: PYICEBERG_CATALOG__PROD__URI=... sets catalog prod's uri,
// PYICEBERG_CATALOG__PROD__S3__ACCESS_KEY_ID its s3.access-key-id, and
// PYICEBERG_DEFAULT_CATALOG the default-catalog. Names are case-insensitive
// (lowercased), "_" in a part stands for "-", and a "__" after the third
// part for ".". A variable overrides the file unless it is empty.
func applyEnvironment(cfg *Config, environ []string) error {
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		lower := strings.ToLower(k)
		key, ok := strings.CutPrefix(lower, pyIcebergEnv)
		if !ok || lower == strings.ToLower(EnvPyIcebergHome) {
			continue
		}
		parts := strings.SplitN(key, "__", 3)
		for i, p := range parts {
			parts[i] = strings.ReplaceAll(strings.ReplaceAll(p, "__", "."), "_", "-")
		}
		switch {
		case len(parts) == 1 && parts[0] == "default-catalog":
			if v != "" {
				cfg.DefaultCatalog = v
			}
		case len(parts) == 3 && parts[0] == "catalog":
			if cfg.Catalogs == nil {
				cfg.Catalogs = map[string]map[string]any{}
			}
			m := cfg.Catalogs[parts[1]]
			if m == nil {
				m = map[string]any{}
				cfg.Catalogs[parts[1]] = m
			}
			if v != "" || m[parts[2]] == nil {
				m[parts[2]] = v
			}
		case len(parts) == 2 && parts[0] == "catalog":
			return fmt.Errorf("%w: environment variable %s: want PYICEBERG_CATALOG__<NAME>__<KEY>", ErrConfig, k)
		}
	}
	return nil
}

// lowercaseKeys makes catalog names and property keys lowercase, as
// PyIceberg reads them (lookups are case-insensitive).
func (c *Config) lowercaseKeys() {
	if c.Catalogs == nil {
		return
	}
	out := make(map[string]map[string]any, len(c.Catalogs))
	for name, props := range c.Catalogs {
		m := out[strings.ToLower(name)]
		if m == nil {
			m = map[string]any{}
		}
		for k, v := range props {
			m[strings.ToLower(k)] = v
		}
		out[strings.ToLower(name)] = m
	}
	c.Catalogs = out
}

// resolvedConfig reads the configuration file path ("" for none) and
// merges the environment into it, as PyIceberg's Config does.
func resolvedConfig(path string) (*Config, error) {
	cfg := &Config{}
	if path != "" {
		c, err := LoadConfig(path)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	cfg.lowercaseKeys()
	if err := applyEnvironment(cfg, os.Environ()); err != nil {
		return nil, err
	}
	return cfg, nil
}

// defaultCatalogName is the default-catalog of the configuration (file or
// environment), or "" when it names none: floe then uses its embedded
// catalog.
func defaultCatalogName(configFile string) string {
	path := configFile
	if path == "" {
		path = os.Getenv(EnvConfig)
	}
	if path == "" {
		path = defaultConfigFile()
	}
	cfg, err := resolvedConfig(path)
	if err != nil {
		return ""
	}
	return cfg.DefaultCatalog
}

// sqlitePath turns a SQL catalog uri naming a SQLite file into its path,
// reading SQLAlchemy URLs as SQLAlchemy does: sqlite:///x.db is the
// relative file x.db, sqlite:////abs/x.db the absolute /abs/x.db (a
// +driver suffix and query parameters are ignored). JDBC URLs
// (jdbc:sqlite:path), sqlite:path, file:path and plain paths work too. ok
// is false when uri is not SQLite.
func sqlitePath(uri string) (path string, ok bool, err error) {
	s := uri
	switch {
	case strings.HasPrefix(s, "jdbc:sqlite:"):
		s = strings.TrimPrefix(s, "jdbc:sqlite:")
		s = strings.TrimPrefix(s, "file:")
	case strings.HasPrefix(s, "sqlite"):
		scheme, rest, _ := strings.Cut(s, ":")
		if scheme != "sqlite" && !strings.HasPrefix(scheme, "sqlite+") {
			return "", false, nil
		}
		if strings.HasPrefix(rest, "//") {
			// SQLAlchemy: sqlite://<nohost>/<path>, so the path is what follows
			// the third slash, relative unless it starts with a fourth.
			rest = strings.TrimPrefix(rest, "//")
			host, p, _ := strings.Cut(rest, "/")
			if host != "" {
				return "", true, fmt.Errorf("%w: sql catalog uri %q: a SQLite URL has no host; write sqlite:///relative.db or sqlite:////absolute/path.db", ErrConfig, uri)
			}
			rest = p
		}
		if q := strings.IndexByte(rest, '?'); q >= 0 {
			rest = rest[:q]
		}
		if u, err := url.PathUnescape(rest); err == nil {
			rest = u
		}
		if rest == "" || rest == ":memory:" {
			return "", true, fmt.Errorf("%w: sql catalog uri %q: an in-memory SQLite catalog would vanish after each floe command; name a file (sqlite:///catalog.db)", ErrConfig, uri)
		}
		s = rest
	case strings.HasPrefix(s, "file:"):
		s = strings.TrimPrefix(s, "file://")
		s = strings.TrimPrefix(s, "file:")
	case strings.Contains(s, "://"):
		return "", false, nil
	}
	return s, true, nil
}

// postgresDSN turns a SQL catalog uri naming a PostgreSQL database into a
// DSN for the pgx driver: SQLAlchemy URLs (postgresql://,
// postgresql+psycopg2://, postgres://) and JDBC URLs
// (jdbc:postgresql://host/db, with jdbc.user and jdbc.password taken from
// props). ok is false when uri is not PostgreSQL.
func postgresDSN(uri string, props map[string]string) (dsn string, ok bool, err error) {
	s := strings.TrimPrefix(uri, "jdbc:")
	scheme, rest, found := strings.Cut(s, "://")
	if !found {
		return "", false, nil
	}
	base, _, _ := strings.Cut(scheme, "+")
	if base != "postgresql" && base != "postgres" {
		return "", false, nil
	}
	u, err := url.Parse("postgres://" + rest)
	if err != nil {
		return "", true, fmt.Errorf("%w: sql catalog uri: %w", ErrConfig, err)
	}
	if u.User == nil {
		if user := props["jdbc.user"]; user != "" {
			if pw, ok := props["jdbc.password"]; ok {
				u.User = url.UserPassword(user, pw)
			} else {
				u.User = url.User(user)
			}
		}
	}
	q := u.Query()
	// JDBC spells these as query parameters too.
	if user := q.Get("user"); user != "" && u.User == nil {
		pw := q.Get("password")
		u.User = url.UserPassword(user, pw)
		q.Del("user")
		q.Del("password")
	}
	u.RawQuery = q.Encode()
	return u.String(), true, nil
}
