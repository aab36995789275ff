package sqltx

import (
	"context"
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
	for _, name := range plan.Tables {
		sch, seq, err := readTable(ctx, cat, name)
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
// catalog's storage settings).
func readTable(ctx context.Context, cat *catalog.Catalog, name string) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	loc, ok := DeltaLocation(name)
	if !ok {
		tbl, err := cat.LoadTable(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		return scan.Rows(ctx, tbl, scan.Options{})
	}
	props, err := catalog.SourceStorage(cat, "", "", nil)
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
