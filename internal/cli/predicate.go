package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/merge"
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
	if err := refuseIdentifierSets(tbl, src); err != nil {
		return nil, err
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

// refuseIdentifierSets refuses --set assignments that change an identifier
// field of tbl (an assignment of the column to itself is harmless): they
// could give several rows one identifier value.
func refuseIdentifierSets(tbl *table.Table, src string) error {
	ids := map[string]bool{}
	for _, n := range merge.IdentifierNames(tbl) {
		ids[n] = true
	}
	if len(ids) == 0 {
		return nil
	}
	as, err := expr.ParseAssignments(src)
	if err != nil {
		return exprError("--set", err)
	}
	for _, a := range as {
		name := a.Column.Name()
		if ref, ok := a.Value.(*expr.ColumnRef); ids[name] && !(ok && ref.Name() == name) {
			return usagef("bad --set: %s is an identifier field of %s: updating it could give several rows one identifier value, so floe refuses; delete the rows and append them with their new identifiers instead",
				name, scan.FormatIdent(tbl.Identifier()))
		}
	}
	return nil
}
