package merge

import (
	"context"
	"fmt"

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
