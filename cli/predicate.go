package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/tableops"
)

// exprError reports a bad expression of flag: a usage error when the text
// is wrong (its message has the position marked), err as it is otherwise.
func exprError(flag string, err error) error {
	var ce *expr.CompileError
	if errors.As(err, &ce) {
		return usageError{fmt.Errorf("bad %s expression: %w", flag, err)}
	}
	return err
}

// predicate compiles a --where expression into a tableops.Predicate: an
// Iceberg expression for pruning and an exact row matcher.
func predicate(tbl *table.Table, src string) (*tableops.Predicate, error) {
	p, err := expr.CompilePredicate(tbl.Schema(), src)
	if err != nil {
		return nil, exprError("--where", err)
	}
	return &tableops.Predicate{Iceberg: p.Iceberg, Columns: p.Columns, Match: p.Match}, nil
}

// assignments compiles --set "col = expr, ..." against the table's full
// rows into an Assign that builds the updated rows.
func assignments(tbl *table.Table, src string) (tableops.Assign, error) {
	as, err := expr.CompileAssignments(tbl.Schema(), src)
	if err != nil {
		return nil, exprError("--set", err)
	}
	return func(ctx context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
		sel, err := rows.Select(ctx, rec, touched)
		if err != nil {
			return nil, err
		}
		defer sel.Release()
		out, err := as.Apply(ctx, sel)
		if err != nil {
			return nil, fmt.Errorf("--set %w", err)
		}
		return out, nil
	}, nil
}
