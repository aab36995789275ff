package catalog

import (
	"context"
	"sync"

	"github.com/apache/iceberg-go/table"
)

// tableCache keeps the table last loaded for each identifier, with the
// metadata location it was loaded from. A metadata file is immutable once
// written, so a later load that finds the same location in the catalog
// can return the same table instead of reading and parsing its metadata
// again: one command (an apply loads its table when it starts and again
// for each commit attempt) parses each metadata.json once. With thousands
// of snapshots, parsing is tens of milliseconds each time. The table's
// manifest-list cache (iceberg-go keeps one per table) is shared too.
//
// Only catalogs floe reads the location from itself (the embedded catalog
// and SQLite catalogs: one indexed query, as iceberg-go's own load makes)
// use it; others load as before.
type tableCache struct {
	mu       sync.Mutex
	tables   map[string]*table.Table // by FormatName(ident)
	disabled bool                    // set before the catalog is used (Wrap)
}

func (tc *tableCache) get(name, location string) (*table.Table, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	t, ok := tc.tables[name]
	if !ok || t.MetadataLocation() != location {
		return nil, false
	}
	return t, true
}

func (tc *tableCache) put(name string, t *table.Table) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.tables == nil {
		tc.tables = map[string]*table.Table{}
	}
	tc.tables[name] = t
}

func (tc *tableCache) forget(name string) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	delete(tc.tables, name)
}

func (tc *tableCache) forgetAll() {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	tc.tables = nil
}

// currentLocation reads the metadata location the SQL catalog holds for
// ident, the way iceberg-go's SQL catalog reads it on a load. ok is false
// when floe cannot read it itself (not a SQL catalog, a nested namespace,
// a legacy schema, no such table...): then the caller loads through
// iceberg-go, which also gives the proper error.
func (c *Catalog) currentLocation(ctx context.Context, ident table.Identifier) (string, bool) {
	if c.db == nil || len(ident) != 2 || c.tables.disabled {
		return "", false
	}
	var loc *string
	err := c.db.QueryRowContext(ctx,
		`SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)`,
		c.name, ident[0], ident[1]).Scan(&loc)
	if err != nil || loc == nil || *loc == "" {
		return "", false
	}
	return *loc, true
}
