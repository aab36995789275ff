package cli

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
	"github.com/floedata/floe/tableops"
)

// exprError reports a bad expression with its position marked.
func exprError(flag, src string, err error) error {
	return usageError{fmt.Errorf("bad %s expression: %s", flag, expr.FormatError(src, err))}
}

// columnNames lists the distinct columns an expression reads.
func columnNames(e expr.Expr) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range expr.Columns(e) {
		n := c.Parts[0]
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// arrowOf returns the Arrow schema of the given top-level columns of tbl.
func arrowOf(tbl *table.Table, cols []string) (*arrow.Schema, error) {
	sc, err := scan.SelectColumns(tbl.Schema(), cols)
	if err != nil {
		return nil, err
	}
	return table.SchemaToArrowSchema(sc, nil, true, false)
}

// predicate compiles a --where expression into a tableops.Predicate: an
// Iceberg expression for pruning and an exact row matcher.
func predicate(tbl *table.Table, src string) (*tableops.Predicate, error) {
	e, err := expr.Parse(src)
	if err != nil {
		return nil, exprError("--where", src, err)
	}
	cols := columnNames(e)
	as, err := arrowOf(tbl, cols)
	if err != nil {
		return nil, exprError("--where", src, err)
	}
	prog, err := expr.Compile(e, as)
	if err != nil {
		return nil, exprError("--where", src, err)
	}
	ib, _, err := expr.ToIceberg(e, tbl.Schema())
	if err != nil {
		return nil, exprError("--where", src, err)
	}
	return &tableops.Predicate{
		Iceberg: ib,
		Columns: cols,
		Match: func(ctx context.Context, rec arrow.RecordBatch) ([]bool, error) {
			if len(cols) == 0 {
				// A predicate reading no column ("TRUE") was compiled for no
				// columns, but the batches hold the table's.
				rec = array.NewRecordBatch(as, nil, rec.NumRows())
				defer rec.Release()
			}
			m, err := prog.Mask(ctx, rec)
			if err != nil {
				return nil, err
			}
			defer m.Release()
			out := make([]bool, m.Len())
			for i := range out {
				out[i] = m.Value(i)
			}
			return out, nil
		},
	}, nil
}

// assignments compiles --set "col = expr, ..." against the table's full
// rows into an Assign that builds the updated rows.
func assignments(tbl *table.Table, src string) (tableops.Assign, error) {
	as, err := expr.ParseAssignments(src)
	if err != nil {
		return nil, exprError("--set", src, err)
	}
	full, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	progs := make([]*expr.Program, full.NumFields())
	ids := map[string]bool{}
	for _, n := range merge.IdentifierNames(tbl) {
		ids[n] = true
	}
	for _, a := range as {
		name := a.Column.Name()
		if ref, ok := a.Value.(*expr.ColumnRef); ids[name] && !(ok && ref.Name() == name) {
			return nil, usagef("bad --set: %s is an identifier field of %s: updating it could give several rows one identifier value, so floe refuses; delete the rows and append them with their new identifiers instead",
				name, scan.FormatIdent(tbl.Identifier()))
		}
		idx := -1
		for i, f := range full.Fields() {
			if f.Name == name {
				idx = i
			}
		}
		if idx < 0 {
			return nil, usagef("bad --set: %q is not a column of %s (columns: %s)", name, scan.FormatIdent(tbl.Identifier()), names(full))
		}
		f := full.Field(idx)
		p, err := expr.Compile(a.Value, full, expr.WithResultType(f.Type))
		if err != nil {
			return nil, exprError("--set", src, fmt.Errorf("column %s: %w", name, err))
		}
		progs[idx] = p
	}
	return func(ctx context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
		sel, err := rows.Select(ctx, rec, touched)
		if err != nil {
			return nil, err
		}
		defer sel.Release()
		cols := make([]arrow.Array, sel.NumCols())
		var owned []arrow.Array
		defer func() {
			for _, c := range owned {
				c.Release()
			}
		}()
		for i := range cols {
			if progs[i] == nil {
				cols[i] = sel.Column(i)
				continue
			}
			v, err := progs[i].Eval(ctx, sel)
			if err != nil {
				return nil, fmt.Errorf("--set %s: %w", full.Field(i).Name, err)
			}
			owned = append(owned, v)
			if !full.Field(i).Nullable && v.NullN() > 0 {
				return nil, fmt.Errorf("--set %s = %s: column %s is NOT NULL but the new value is NULL", full.Field(i).Name, progs[i].String(), full.Field(i).Name)
			}
			cols[i] = v
		}
		return array.NewRecordBatch(full, cols, sel.NumRows()), nil
	}, nil
}

func names(s *arrow.Schema) string {
	out := ""
	for i, f := range s.Fields() {
		if i > 0 {
			out += ", "
		}
		out += f.Name
	}
	return out
}
