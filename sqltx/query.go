package sqltx

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/transform"
)

// Query runs query once over the current state of the Iceberg tables it
// names, read from cat, and returns its rows. Call done after reading them
// (it frees the engine's session).
func Query(ctx context.Context, cat *catalog.Catalog, query string) (schema *arrow.Schema, rows iter.Seq2[arrow.RecordBatch, error], done func(), err error) {
	return QueryWith(ctx, cat, query, QueryOptions{})
}

// QueryOptions are the settings of QueryWith.
type QueryOptions struct {
	// Storage, ConfigFile and SourceProperties choose the storage settings
	// the query's Delta tables (delta."PATH") are read with: the storage
	// profile Storage of ConfigFile ("": the catalog's configuration
	// file), else the catalog's own settings, with SourceProperties over
	// single keys (see catalog.SourceStorage).
	Storage          string
	ConfigFile       string
	SourceProperties map[string]string
	// NoCatalog is why cat is nil (a query of Delta tables needs no
	// catalog): the error of a query that names an Iceberg table then.
	NoCatalog error
}

// QueryWith is Query with options. cat may be nil when the query reads
// only Delta tables (opts.NoCatalog says why it is).
func QueryWith(ctx context.Context, cat *catalog.Catalog, query string, opts QueryOptions) (schema *arrow.Schema, rows iter.Seq2[arrow.RecordBatch, error], done func(), err error) {
	s, err := Open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	plan, err := Analyze(ctx, s, query)
	if err != nil {
		return nil, nil, nil, err
	}
	deltas := 0
	for _, name := range plan.Tables {
		if _, ok := DeltaLocation(name); ok {
			deltas++
		}
	}
	if deltas == 0 && (opts.Storage != "" || len(opts.SourceProperties) > 0) {
		return nil, nil, nil, fmt.Errorf("storage settings are for the query's Delta tables (delta.\"PATH\"), and it reads none")
	}
	for _, name := range plan.Tables {
		sch, seq, err := readTable(ctx, cat, name, opts)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("table %s: %w", name, err)
		}
		ns, tn, err := splitName(name)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := s.Bind(ctx, ns, tn, transform.NewRows(sch, seq)); err != nil {
			return nil, nil, nil, fmt.Errorf("table %s: %w", name, err)
		}
	}
	schema, rows, err = s.Query(ctx, query)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("query: %w", err)
	}
	return schema, rows, func() { s.Close() }, nil
}

// readTable reads the current rows of a table of Plan.Tables: an Iceberg
// table of cat, or a Delta table at its latest version (read with the
// storage settings of opts).
func readTable(ctx context.Context, cat *catalog.Catalog, name string, opts QueryOptions) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	loc, ok := DeltaLocation(name)
	if !ok && cat == nil {
		if opts.NoCatalog != nil {
			return nil, nil, opts.NoCatalog
		}
		return nil, nil, errors.New("no catalog to read it from")
	}
	if !ok {
		tbl, err := cat.LoadTable(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		return scan.Rows(ctx, tbl, scan.Options{})
	}
	props, err := catalog.SourceStorage(cat, opts.ConfigFile, opts.Storage, opts.SourceProperties)
	if err != nil {
		return nil, nil, err
	}
	tbl, err := delta.OpenLocation(ctx, loc, props)
	if err != nil {
		return nil, nil, err
	}
	snap, err := tbl.LatestSnapshot(ctx)
	if err != nil {
		return nil, nil, err
	}
	return snap.Scan(ctx, delta.ScanOptions{})
}
