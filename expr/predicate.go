package expr

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Predicate is a SQL predicate (a --where, an input's filter) compiled for
// the rows of a table: everything a reader of the table needs from it.
// Plan with Iceberg, read Columns (or whole rows), keep the rows Match or
// OnRows says. A Predicate is immutable and safe for concurrent use.
type Predicate struct {
	// Text is the predicate as written.
	Text string
	// Expr is the parsed predicate.
	Expr Expr
	// Iceberg prunes files and partitions: TRUE for every row the predicate
	// keeps (see ToIceberg), AlwaysTrue when nothing of the predicate can
	// be pushed down or the rows are not a table's (CompileRowPredicate).
	Iceberg iceberg.BooleanExpression
	// Exact reports whether Iceberg keeps exactly the predicate's rows;
	// callers evaluate the predicate on rows either way.
	Exact bool
	// Columns are the top-level columns the predicate reads, in the
	// schema's order, named as the schema names them.
	Columns []string
	// OnColumns is the predicate bound to the Arrow schema of Columns
	// alone, in that order: batches projected to Columns.
	OnColumns *Program
	// OnRows is the predicate bound to whole rows: the table's Arrow row
	// schema (as iceberg-go reads it), or the schema CompileRowPredicate
	// was given.
	OnRows *Program
}

// CompileError is an error in the text of a predicate or an assignment
// list: the text and the positioned error (*SyntaxError, *BindError) it
// wraps. Its message is FormatError's, with a caret under the position;
// errors.Is finds the sentinel (ErrSyntax, ErrUnknownColumn, ...).
type CompileError struct {
	Text string
	Err  error
}

// Error returns FormatError(Text, Err): the message, then the text with a
// caret under the position.
func (e *CompileError) Error() string { return FormatError(e.Text, e.Err) }

// Unwrap returns Err.
func (e *CompileError) Unwrap() error { return e.Err }

// CompilePredicate parses text and binds it to the rows of a table with
// schema: the single way floe turns a predicate into a pruning filter, the
// columns to read and a row filter. Errors in the text are *CompileError
// values (unknown or ambiguous columns, type mismatches, a non-boolean
// expression); an error converting schema to Arrow is returned as it is.
func CompilePredicate(schema *iceberg.Schema, text string) (*Predicate, error) {
	rows, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return nil, err
	}
	p, err := compilePredicate(rows, text)
	if err != nil {
		return nil, err
	}
	if ib, exact, err := ToIceberg(p.Expr, schema); err == nil {
		// NB: an error here is one of Iceberg's view of the types only (the
		// predicate binds to the rows): the predicate then prunes nothing.
		p.Iceberg, p.Exact = ib, exact
	}
	return p, nil
}

// CompileRowPredicate is CompilePredicate for rows that are not a table's
// (a changelog's rows with their metadata columns): it prunes nothing.
func CompileRowPredicate(schema *arrow.Schema, text string) (*Predicate, error) {
	return compilePredicate(schema, text)
}

func compilePredicate(rows *arrow.Schema, text string) (*Predicate, error) {
	e, err := Parse(text)
	if err != nil {
		return nil, &CompileError{Text: text, Err: err}
	}
	all, err := Compile(e, rows)
	if err == nil {
		err = all.predicate()
	}
	if err != nil {
		return nil, &CompileError{Text: text, Err: err}
	}
	p := &Predicate{Text: text, Expr: e, Iceberg: iceberg.AlwaysTrue{}, OnRows: all}
	fields := make([]arrow.Field, 0, len(all.used))
	for _, i := range all.used {
		fields = append(fields, rows.Field(i))
		p.Columns = append(p.Columns, rows.Field(i).Name)
	}
	if p.OnColumns, err = Compile(e, arrow.NewSchema(fields, nil)); err != nil {
		return nil, &CompileError{Text: text, Err: err}
	}
	return p, nil
}

// Match evaluates the predicate on a batch of Columns (OnColumns' schema)
// and returns, per row, whether the predicate is TRUE (NULL is false).
// Evaluation errors are *EvalError values naming the row.
func (p *Predicate) Match(ctx context.Context, rec arrow.RecordBatch) ([]bool, error) {
	if len(p.Columns) == 0 {
		// A predicate reading no column ("TRUE") was compiled for no
		// columns, but the batches may hold the table's.
		rec = array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, rec.NumRows())
		defer rec.Release()
	}
	m, err := p.OnColumns.Mask(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer m.Release()
	out := make([]bool, m.Len())
	for i := range out {
		out[i] = m.Value(i)
	}
	return out, nil
}

// Assignments is an assignment list ("col = expr, ...", as UPDATE ... SET
// takes) compiled against the whole rows of a table. It is immutable and
// safe for concurrent use.
type Assignments struct {
	// Text is the list as written.
	Text string
	// Schema is the table's Arrow row schema: what Apply reads and returns.
	Schema *arrow.Schema
	values []*Program // per column of Schema; nil keeps the column
}

// CompileAssignments parses text and binds each value to the whole rows of
// a table with schema, converted to its column's type. Errors in the text
// are *CompileError values: an unknown column (ErrUnknownColumn, listing
// the columns), a value that cannot be stored in its column (ErrType).
func CompileAssignments(schema *iceberg.Schema, text string) (*Assignments, error) {
	as, err := ParseAssignments(text)
	if err != nil {
		return nil, &CompileError{Text: text, Err: err}
	}
	full, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return nil, err
	}
	out := &Assignments{Text: text, Schema: full, values: make([]*Program, full.NumFields())}
	for _, a := range as {
		name := a.Column.Name()
		idx := -1
		for i, f := range full.Fields() {
			if f.Name == name {
				idx = i
			}
		}
		if idx < 0 {
			names := make([]string, full.NumFields())
			for i, f := range full.Fields() {
				names[i] = f.Name
			}
			return nil, &CompileError{Text: text, Err: &BindError{Pos: a.Column.P, Kind: ErrUnknownColumn,
				Msg: fmt.Sprintf("%s is not a column of the table (columns: %s)", QuoteIdent(name), strings.Join(names, ", "))}}
		}
		p, err := Compile(a.Value, full, WithResultType(full.Field(idx).Type))
		if err != nil {
			return nil, &CompileError{Text: text, Err: fmt.Errorf("column %s: %w", name, err)}
		}
		out.values[idx] = p
	}
	return out, nil
}

// Apply returns rec (with Schema) with the assigned columns replaced by
// their new values; the caller releases the result. It fails, naming the
// column, when a value cannot be computed (an *EvalError) or is NULL for a
// NOT NULL column.
func (a *Assignments) Apply(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != len(a.values) {
		return nil, fmt.Errorf("%w: the batch has %d columns but the assignments %q were compiled for %d",
			ErrSchemaMismatch, rec.NumCols(), a.Text, len(a.values))
	}
	cols := make([]arrow.Array, rec.NumCols())
	var owned []arrow.Array
	defer func() {
		for _, c := range owned {
			c.Release()
		}
	}()
	for i := range cols {
		if a.values[i] == nil {
			cols[i] = rec.Column(i)
			continue
		}
		f := a.Schema.Field(i)
		v, err := a.values[i].Eval(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		owned = append(owned, v)
		if !f.Nullable && v.NullN() > 0 {
			return nil, fmt.Errorf("%s = %s: column %s is NOT NULL but the new value is NULL", f.Name, a.values[i], f.Name)
		}
		cols[i] = v
	}
	return array.NewRecordBatch(a.Schema, cols, rec.NumRows()), nil
}
