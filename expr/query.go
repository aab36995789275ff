package expr

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Select is a single-table query, the subquery a MERGE may take as its
// source: SELECT items FROM table [[AS] alias] [WHERE cond].
type Select struct {
	// Pos is the offset of the SELECT keyword.
	Pos   int
	Items []SelectItem
	// From is the table's dotted name, one part per identifier.
	From []string
	// FromAlias is the alias after the table name, "" when none.
	FromAlias string
	// Where is the filter; nil when absent.
	Where Expr
}

// SelectItem is one item of a SELECT list: * (Star), or an expression
// with an optional alias.
type SelectItem struct {
	Pos   int
	Star  bool
	Expr  Expr
	Alias string
}

// Name is the column name the item produces: its alias, else a column
// reference's last part, else the expression as SQL (as Spark names it).
func (it SelectItem) Name() string {
	if it.Alias != "" {
		return it.Alias
	}
	if c, ok := it.Expr.(*ColumnRef); ok {
		return c.Parts[len(c.Parts)-1]
	}
	return it.Expr.String()
}

// parseSelect parses SELECT ... FROM ... [WHERE ...] up to the closing
// parenthesis, which it does not consume.
func (p *parser) parseSelect() (*Select, error) {
	t, err := p.expectKeyword("SELECT")
	if err != nil {
		return nil, err
	}
	q := &Select{Pos: t.pos}
	for {
		it := SelectItem{Pos: p.peek().pos}
		if p.atKeyword("FROM") {
			return nil, p.expected("a column, an expression or *")
		}
		if p.acceptOp("*") {
			it.Star = true
		} else {
			if it.Expr, err = p.parseExpr(); err != nil {
				return nil, err
			}
			if it.Alias, err = p.parseAlias("FROM"); err != nil {
				return nil, err
			}
		}
		q.Items = append(q.Items, it)
		if !p.acceptOp(",") {
			break
		}
	}
	if _, err := p.expectKeyword("FROM"); err != nil {
		return nil, err
	}
	if p.atOp("(") {
		return nil, p.errAt(p.peek().pos, "the subquery must read one table: nested subqueries are not supported")
	}
	if q.From, err = p.parseTableName(); err != nil {
		return nil, err
	}
	if err := p.refuseClauses(); err != nil {
		return nil, err
	}
	if q.FromAlias, err = p.parseAlias("WHERE"); err != nil {
		return nil, err
	}
	if err := p.refuseClauses(); err != nil {
		return nil, err
	}
	if p.acceptKeyword("WHERE") {
		if q.Where, err = p.parseExpr(); err != nil {
			return nil, err
		}
	}
	if err := p.refuseClauses(); err != nil {
		return nil, err
	}
	return q, nil
}

// refuseClauses explains the query clauses a MERGE source cannot have.
func (p *parser) refuseClauses() error {
	t := p.peek()
	if t.kind == tOp && t.text == "," {
		return p.errAt(t.pos, "the subquery must read one table: joins are not supported")
	}
	for _, kw := range []string{"JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS", "NATURAL"} {
		if p.isKeyword(t, kw) {
			return p.errAt(t.pos, "the subquery must read one table: joins are not supported")
		}
	}
	for _, kw := range []string{"GROUP", "ORDER", "LIMIT", "HAVING", "UNION", "EXCEPT", "INTERSECT", "SORT", "CLUSTER", "DISTRIBUTE", "WINDOW"} {
		if p.isKeyword(t, kw) {
			return p.errAt(t.pos, fmt.Sprintf("%s is not supported in a MERGE source subquery (only SELECT ... FROM one table [WHERE ...])", strings.ToUpper(t.text)))
		}
	}
	return nil
}

// String renders the query as SQL.
func (q *Select) String() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, it := range q.Items {
		if i > 0 {
			b.WriteString(", ")
		}
		if it.Star {
			b.WriteString("*")
			continue
		}
		b.WriteString(it.Expr.String())
		if it.Alias != "" {
			b.WriteString(" AS " + QuoteIdent(it.Alias))
		}
	}
	b.WriteString(" FROM " + quoteName(q.From))
	if q.FromAlias != "" {
		b.WriteString(" AS " + QuoteIdent(q.FromAlias))
	}
	if q.Where != nil {
		b.WriteString(" WHERE " + q.Where.String())
	}
	return b.String()
}

// Query is a Select compiled against the schema of its table's rows.
type Query struct {
	src    *Select
	schema *arrow.Schema
	where  *Program
	cols   []queryCol
}

type queryCol struct {
	star int // index of the input column for * items, else -1
	prog *Program
}

// Compile binds the query to the schema of the rows of its FROM table.
// Names may be qualified by the table's alias or its name's last part.
// Errors are *BindError values with positions in the statement the query
// was parsed from; the output columns must have distinct names
// (case-insensitively), as MERGE refers to them by name.
func (q *Select) Compile(schema *arrow.Schema, opts ...Option) (*Query, error) {
	qual := q.FromAlias
	if qual == "" {
		qual = q.From[len(q.From)-1]
	}
	opts = append([]Option{WithQualifier(qual)}, opts...)
	out := &Query{src: q}
	if q.Where != nil {
		w, err := Compile(q.Where, schema, opts...)
		if err != nil {
			return nil, err
		}
		if err := w.predicate(); err != nil {
			return nil, &BindError{Pos: q.Where.Pos(), Kind: ErrType, Msg: fmt.Sprintf("WHERE needs a boolean condition but found %s", describe(q.Where, w.Type()))}
		}
		out.where = w
	}
	var fields []arrow.Field
	seen := map[string]int{}
	addField := func(f arrow.Field, pos int) error {
		key := strings.ToLower(f.Name)
		if at, dup := seen[key]; dup {
			return &BindError{Pos: pos, Kind: ErrAmbiguousColumn, Msg: fmt.Sprintf("the subquery has two columns named %s (the other at position %d); give one an alias", QuoteIdent(f.Name), at)}
		}
		seen[key] = pos
		fields = append(fields, f)
		return nil
	}
	for _, it := range q.Items {
		if it.Star {
			for i, f := range schema.Fields() {
				if err := addField(f, it.Pos); err != nil {
					return nil, err
				}
				out.cols = append(out.cols, queryCol{star: i})
			}
			continue
		}
		prog, err := Compile(it.Expr, schema, opts...)
		if err != nil {
			return nil, err
		}
		if err := addField(arrow.Field{Name: it.Name(), Type: prog.Type(), Nullable: true}, it.Pos); err != nil {
			return nil, err
		}
		out.cols = append(out.cols, queryCol{star: -1, prog: prog})
	}
	for i, f := range fields {
		if familyOf(f.Type) == famNull && out.cols[i].prog != nil {
			// a bare NULL: Spark types it as NULL too, but files and MERGE
			// need a concrete type
			fields[i].Type = arrow.BinaryTypes.String
			out.cols[i].prog.root = &constNode{dt: arrow.BinaryTypes.String}
		}
	}
	out.schema = arrow.NewSchema(fields, nil)
	return out, nil
}

// Schema is the schema of the query's rows.
func (q *Query) Schema() *arrow.Schema { return q.schema }

// Apply returns the rows of rec the query keeps, projected. The caller
// releases the result.
func (q *Query) Apply(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if q.where != nil {
		f, err := q.where.Filter(ctx, rec)
		if err != nil {
			return nil, err
		}
		defer f.Release()
		rec = f
	}
	cols := make([]arrow.Array, len(q.cols))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, c := range q.cols {
		if c.star >= 0 {
			cols[i] = rec.Column(c.star)
			cols[i].Retain()
			continue
		}
		a, err := c.prog.Eval(ctx, rec)
		if err != nil {
			return nil, err
		}
		cols[i] = a
	}
	return array.NewRecordBatch(q.schema, cols, rec.NumRows()), nil
}

// Rows applies the query to a sequence of record batches. As with the
// input, the consumer owns (and releases) each batch it receives.
func (q *Query) Rows(ctx context.Context, rows iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range rows {
			if err != nil {
				yield(nil, err)
				return
			}
			out, err := q.Apply(ctx, rec)
			rec.Release()
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}
