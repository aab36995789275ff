package catalog

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// ErrUnsafeLocation is returned (wrapped) for a table location that would
// let maintenance of that table reach files that are not the table's: a
// location that holds the warehouse root, the catalog's own file or another
// table of the catalog, or lies inside another table's location.
var ErrUnsafeLocation = errors.New("unsafe table location")

// NormalizeLocation spells a table location or file path the one way floe
// compares them: local paths (plain, or "file:/..." and "file:///..." URIs
// percent-decoded as floe's file IO opens them, see FileURIPath) as
// cleaned absolute paths, relative paths resolved against root (the table's
// path root, else the working folder), URIs with a lower-case scheme
// (s3a and s3n read as s3) and a cleaned path without a trailing slash.
func NormalizeLocation(loc, root string) string {
	if loc == "" {
		return ""
	}
	if p, ok := FileURIPath(loc); ok {
		loc = p
	}
	return normalize(loc, root)
}

// LiteralLocation is NormalizeLocation with the path of a file: URI taken
// as it is spelled, not percent-decoded: the file engines that do not
// decode read (Java's Hadoop paths: Spark writes a partition value "a:b"
// into the folder p=a%3Ab and records that name). Checks that keep files
// (remove-orphans, purge, expire) count a file referenced under either
// spelling as referenced.
func LiteralLocation(loc, root string) string {
	if loc == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(loc, "file://"); ok {
		loc = rest
	} else if rest, ok := strings.CutPrefix(loc, "file:"); ok {
		loc = rest
	}
	return normalize(loc, root)
}

// FileURIPath returns the local path a file: URI names as floe's file IO
// (iceberg-go's) opens it: percent-decoded, as the URI standard says
// (file:///data/a%20b is the folder "a b"; iceberg-go's catalogs write
// table locations so, and a "#" or "?" would start a fragment or query).
// ok is false when loc is not a file: URI.
func FileURIPath(loc string) (p string, ok bool) {
	if len(loc) < 5 || !strings.EqualFold(loc[:5], "file:") {
		return "", false
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Not a valid URI (a "%" not followed by two hex digits): iceberg-go
		// cannot open it either; keep the literal spelling.
		rest := loc[5:]
		if r, ok := strings.CutPrefix(rest, "//"); ok {
			rest = r
		}
		return rest, true
	}
	if u.Opaque != "" { // file:relative/path
		if p, err := url.PathUnescape(u.Opaque); err == nil {
			return p, true
		}
		return u.Opaque, true
	}
	return u.Path, true
}

// FileURI is the file: URI of the absolute local path p, with the three
// characters that would not come back from parsing it escaped ("%" would
// start an escape, "#" a fragment, "?" a query), so that it names p again
// when decoded (FileURIPath, iceberg-go). Nothing else is escaped: other
// characters keep the spelling they always had in floe's locations, which
// engines that read locations literally (Java's) rely on.
func FileURI(p string) string {
	return "file://" + uriEscaper.Replace(filepath.ToSlash(p))
}

var uriEscaper = strings.NewReplacer("%", "%25", "#", "%23", "?", "%3F")

func normalize(loc, root string) string {
	if scheme, rest, ok := strings.Cut(loc, "://"); ok && !strings.ContainsAny(scheme, "/\\") {
		scheme = strings.ToLower(scheme)
		if scheme == "s3a" || scheme == "s3n" {
			scheme = "s3"
		}
		authority, p, _ := strings.Cut(rest, "/")
		p = strings.TrimSuffix(path.Clean("/"+p), "/")
		return scheme + "://" + authority + p
	}
	if !filepath.IsAbs(loc) {
		if root != "" {
			loc = filepath.Join(root, loc)
		}
		if abs, err := filepath.Abs(loc); err == nil {
			loc = abs
		}
	}
	return filepath.Clean(loc)
}

// Within reports whether the normalized location child is parent or lies
// under it.
func Within(child, parent string) bool {
	if child == "" || parent == "" {
		return false
	}
	if child == parent {
		return true
	}
	sep := "/"
	if !strings.Contains(parent, "://") {
		sep = string(filepath.Separator)
	}
	return strings.HasPrefix(child, strings.TrimSuffix(parent, sep)+sep)
}

// TableLocation is a table of the catalog and its normalized location.
type TableLocation struct {
	Ident    table.Identifier
	Location string
}

// Location returns the normalized location of a loaded table, relative
// locations resolved against the table's path root.
func (c *Catalog) Location(ctx context.Context, ident table.Identifier, tbl *table.Table) (string, error) {
	root, _, err := c.pathRoot(ctx, ident)
	if err != nil {
		return "", err
	}
	return NormalizeLocation(tbl.Location(), root), nil
}

// Resolver returns a function that normalizes a file path as read from the metadata of table ident
// (relative paths resolved against its path root).
func (c *Catalog) Resolver(ctx context.Context, ident table.Identifier) (func(string) string, error) {
	root, _, err := c.pathRoot(ctx, ident)
	if err != nil {
		return nil, err
	}
	return func(p string) string { return NormalizeLocation(p, root) }, nil
}

// TableLocations lists every table of the catalog (every namespace, nested
// ones too) with its normalized location. A table that cannot be loaded is
// an error naming it: its files could be anywhere.
func (c *Catalog) TableLocations(ctx context.Context) ([]TableLocation, error) {
	return c.tableLocations(ctx, false)
}

// tableLocations lists the tables' locations; with skipBroken, tables that
// cannot be loaded are left out instead of failing.
func (c *Catalog) tableLocations(ctx context.Context, skipBroken bool) ([]TableLocation, error) {
	var out []TableLocation
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		nss, err := c.ice.ListNamespaces(ctx, parent)
		if err != nil {
			return fmt.Errorf("list namespaces: %w", err)
		}
		for _, ns := range nss {
			if len(ns) <= len(parent) { // some catalogs list the parent itself
				continue
			}
			for id, err := range c.ice.ListTables(ctx, ns) {
				if err != nil {
					return fmt.Errorf("list tables of %s: %w", FormatName(ns), err)
				}
				tbl, err := c.Load(ctx, id)
				if err != nil {
					if skipBroken {
						continue
					}
					return fmt.Errorf("table %s: %w", FormatName(id), err)
				}
				loc, err := c.Location(ctx, id, tbl)
				if err != nil {
					return fmt.Errorf("table %s: %w", FormatName(id), err)
				}
				out = append(out, TableLocation{Ident: id, Location: loc})
			}
			if err := walk(ns); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	return out, nil
}

// WarehouseRoot returns the normalized folder that holds the catalog's
// tables (the embedded catalog's warehouse, a named catalog's "warehouse"
// property when it is a path or URI), or "".
func (c *Catalog) WarehouseRoot() string {
	if c.warehouse != "" {
		return NormalizeLocation(c.warehouse, "")
	}
	wh := c.props.Get("warehouse", "")
	if strings.Contains(wh, "://") || filepath.IsAbs(wh) || strings.HasPrefix(wh, "file:") {
		return NormalizeLocation(wh, "")
	}
	return ""
}

// ProtectedFile reports whether the normalized path p is one of the
// catalog's own files (its SQLite file and the -wal, -shm and -journal files
// beside it), which no table operation may ever delete.
func (c *Catalog) ProtectedFile(p string) bool {
	if c.dbFile == "" {
		return false
	}
	db := NormalizeLocation(c.dbFile, "")
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if p == db+suffix {
			return true
		}
	}
	return false
}

// CheckLocation returns an error wrapping ErrUnsafeLocation when loc (a
// normalized location for table ident) contains the warehouse root or the
// catalog's file, or overlaps (contains, equals or lies inside) the
// location of another table in others.
func (c *Catalog) CheckLocation(ident table.Identifier, loc string, others []TableLocation) error {
	if loc == "" {
		return fmt.Errorf("%w: table %s has no location", ErrUnsafeLocation, FormatName(ident))
	}
	if wh := c.WarehouseRoot(); wh != "" && Within(wh, loc) {
		return fmt.Errorf("%w: location %s contains the warehouse root %s of catalog %q; a table needs a folder of its own",
			ErrUnsafeLocation, loc, wh, c.name)
	}
	if c.dbFile != "" {
		if db := NormalizeLocation(c.dbFile, ""); Within(db, loc) {
			return fmt.Errorf("%w: location %s contains the catalog file %s; a table needs a folder of its own", ErrUnsafeLocation, loc, db)
		}
	}
	for _, o := range others {
		if sameIdent(o.Ident, ident) {
			continue
		}
		switch {
		case o.Location == loc:
			return fmt.Errorf("%w: location %s is the location of table %s; a table needs a folder of its own",
				ErrUnsafeLocation, loc, FormatName(o.Ident))
		case Within(o.Location, loc):
			return fmt.Errorf("%w: location %s contains the location %s of table %s; a table needs a folder of its own",
				ErrUnsafeLocation, loc, o.Location, FormatName(o.Ident))
		case Within(loc, o.Location):
			return fmt.Errorf("%w: location %s is inside the location %s of table %s; a table needs a folder of its own",
				ErrUnsafeLocation, loc, o.Location, FormatName(o.Ident))
		}
	}
	return nil
}

func sameIdent(a, b table.Identifier) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
