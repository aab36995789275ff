package merge

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
)

// querySource applies the statement's subquery source (USING (SELECT ...
// FROM t WHERE ...)) to the rows of its table, which source holds: the
// filter first, then the projection. Without a subquery it returns source
// unchanged.
func querySource(ctx context.Context, stmt *expr.Merge, source Source) (Source, error) {
	q := stmt.Source.Query
	if q == nil {
		return source, nil
	}
	prog, err := q.Compile(source.Schema)
	if err != nil {
		return Source{}, fmt.Errorf("%w: the source subquery: %w", ErrBadMerge, err)
	}
	name := source.Name
	if name == "" {
		name = q.From[len(q.From)-1]
	}
	return Source{Name: name, Schema: prog.Schema(), Rows: prog.Rows(ctx, source.Rows)}, nil
}

// resolveNames drops the catalog part of catalog-qualified names in stmt
// (floe.ns.t, as Spark reads them; see catalog.Catalog.Resolve). It
// returns a copy when a name changes.
func resolveNames(cat *catalog.Catalog, stmt *expr.Merge) (*expr.Merge, error) {
	resolve := func(name []string) ([]string, error) {
		if len(name) == 0 {
			return name, nil
		}
		r, err := cat.Resolve(table.Identifier(name))
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadMerge, err)
		}
		return r, nil
	}
	out := *stmt
	var err error
	if out.Target, err = resolve(stmt.Target); err != nil {
		return nil, err
	}
	if out.Source.Table, err = resolve(stmt.Source.Table); err != nil {
		return nil, err
	}
	if q := stmt.Source.Query; q != nil {
		qc := *q
		if qc.From, err = resolve(q.From); err != nil {
			return nil, err
		}
		out.Source.Query = &qc
	}
	return &out, nil
}
