package expr

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Option configures Compile.
type Option func(*options)

type options struct {
	mem        memory.Allocator
	qualifiers []string
	resultType arrow.DataType
}

// WithAllocator makes the Program allocate its results and temporaries from
// mem (default memory.DefaultAllocator).
func WithAllocator(mem memory.Allocator) Option {
	return func(o *options) { o.mem = mem }
}

// WithQualifier lets references qualified by alias resolve against
// unqualified fields: with WithQualifier("t"), t.id matches the field "id"
// when there is no field literally named "t.id". Use it to evaluate a
// condition written with a table alias on that table's own rows.
func WithQualifier(alias string) Option {
	return func(o *options) { o.qualifiers = append(o.qualifiers, alias) }
}

// WithResultType makes the Program convert its result to dt, as when a
// value is stored into a column of that type (UPDATE SET, INSERT VALUES):
// numbers convert to any numeric type with ANSI overflow checks (an
// *EvalError at run time), dates and timestamps to each other, strings and
// binaries within their kind, NULL to anything; other combinations, such as
// a string into a number column, are an ErrType *BindError.
func WithResultType(dt arrow.DataType) Option {
	return func(o *options) { o.resultType = dt }
}

// Program is an expression bound to an Arrow schema, ready to evaluate on
// record batches with that schema. A Program is immutable: its methods may
// be called concurrently from several goroutines.
type Program struct {
	src    Expr
	schema *arrow.Schema
	root   node
	mem    memory.Allocator
	used   []int // top-level field indexes the program reads
}

// Compile resolves the names of e against schema and type-checks it.
//
// A reference a.b first matches a field literally named "a.b" (so a joined
// batch with fields "s.id" and "t.id" works), then, when a is a struct
// column, its field b. An unqualified id matches the field named "id", or
// else the unique field whose name ends in ".id". Matching prefers the
// exact spelling and falls back to a case-insensitive match. Errors are
// *BindError values carrying the position of the offending expression:
// ErrUnknownColumn (listing the available columns), ErrAmbiguousColumn,
// ErrType, ErrUnsupported or ErrInvalidCast (a literal that cannot be
// converted, e.g. DATE column compared with '2024-13-01').
func Compile(e Expr, schema *arrow.Schema, opts ...Option) (*Program, error) {
	o := options{mem: memory.DefaultAllocator}
	for _, opt := range opts {
		opt(&o)
	}
	b := &binder{schema: schema, opts: o}
	root, err := b.bind(e)
	if err != nil {
		return nil, err
	}
	if o.resultType != nil {
		if root, err = b.store(root, e, o.resultType); err != nil {
			return nil, err
		}
	}
	used := make([]int, 0, len(b.used))
	for i := range b.used {
		used = append(used, i)
	}
	sort.Ints(used)
	return &Program{src: e, schema: schema, root: root, mem: o.mem, used: used}, nil
}

// Expr returns the expression the program was compiled from.
func (p *Program) Expr() Expr { return p.src }

// String renders the program's expression as SQL.
func (p *Program) String() string { return p.src.String() }

// Type returns the Arrow type of the values Eval produces.
func (p *Program) Type() arrow.DataType { return p.root.dataType() }

// Eval evaluates the expression for every row of rec and returns one value
// per row; the caller must Release the result. rec must have the schema
// the program was compiled with (ErrSchemaMismatch otherwise). Failures
// such as division by zero are *EvalError values naming the sub-expression
// and the row. Branches that are not taken (CASE, COALESCE, the right side of
// AND/OR once the left side decides) raise no errors for those rows.
func (p *Program) Eval(ctx context.Context, rec arrow.RecordBatch) (arrow.Array, error) {
	if err := p.check(rec); err != nil {
		return nil, err
	}
	ec := &evalCtx{ctx: compute.WithAllocator(ctx, p.mem), mem: p.mem, rec: rec, n: int(rec.NumRows())}
	return p.root.eval(ec, nil)
}

// Mask evaluates a boolean expression and returns a boolean array without
// nulls: true where the expression is TRUE, false where it is FALSE or NULL
// (SQL WHERE semantics). The caller must Release it. It fails with ErrType
// when the expression is not boolean.
func (p *Program) Mask(ctx context.Context, rec arrow.RecordBatch) (*array.Boolean, error) {
	if err := p.predicate(); err != nil {
		return nil, err
	}
	res, err := p.Eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	return nullAsFalse(p.mem, res), nil
}

// Filter returns the rows of rec for which the boolean expression is TRUE
// (NULL counts as false). The caller must Release the result. It fails with
// ErrType when the expression is not boolean.
func (p *Program) Filter(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if err := p.predicate(); err != nil {
		return nil, err
	}
	res, err := p.Eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	b, ok := res.(*array.Boolean)
	if !ok { // an all-NULL predicate
		b = nullAsFalse(p.mem, res)
		defer b.Release()
	}
	if b.NullN() == 0 {
		all := true
		for i := 0; i < b.Len() && all; i++ {
			all = b.Value(i)
		}
		if all {
			rec.Retain()
			return rec, nil
		}
	}
	return compute.FilterRecordBatch(compute.WithAllocator(ctx, p.mem), rec, b, compute.DefaultFilterOptions())
}

func (p *Program) predicate() error {
	if t := p.root.dataType(); t.ID() != arrow.BOOL && t.ID() != arrow.NULL {
		return &BindError{Pos: p.src.Pos(), Kind: ErrType,
			Msg: fmt.Sprintf("a filter needs a boolean expression but %s", describe(p.src, t))}
	}
	return nil
}

func (p *Program) check(rec arrow.RecordBatch) error {
	s := rec.Schema()
	if s == p.schema {
		return nil
	}
	if s.NumFields() != p.schema.NumFields() {
		return fmt.Errorf("%w: the batch has %d columns but the expression %q was compiled for %d",
			ErrSchemaMismatch, s.NumFields(), p.src, p.schema.NumFields())
	}
	for _, i := range p.used {
		if !arrow.TypeEqual(s.Field(i).Type, p.schema.Field(i).Type) {
			return fmt.Errorf("%w: column %d (%s) has type %s in the batch but %s when %q was compiled",
				ErrSchemaMismatch, i, s.Field(i).Name, s.Field(i).Type, p.schema.Field(i).Type, p.src)
		}
	}
	return nil
}

// --- name resolution ---------------------------------------------------------

// resolved is a column reference bound to a (possibly nested) field.
type resolved struct {
	path  []int    // field index at each level
	names []string // field names at each level
	dt    arrow.DataType
}

func matchFields(fields []arrow.Field, name string) []int {
	var exact, fold []int
	for i, f := range fields {
		switch {
		case f.Name == name:
			exact = append(exact, i)
		case strings.EqualFold(f.Name, name):
			fold = append(fold, i)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return fold
}

func (b *binder) resolve(ref *ColumnRef) (*resolved, error) {
	fields := b.schema.Fields()
	ambiguous := func(cands []int) error {
		names := make([]string, len(cands))
		for i, c := range cands {
			names[i] = fmt.Sprintf("%q", fields[c].Name)
		}
		return &BindError{Pos: ref.P, Kind: ErrAmbiguousColumn,
			Msg: fmt.Sprintf("column reference %s is ambiguous: it could be %s", ref, strings.Join(names, " or "))}
	}
	try := func(parts []string) (*resolved, error) {
		// longest literal prefix first: "a.b.c", then "a.b" + struct field c, ...
		for k := len(parts); k >= 1; k-- {
			cands := matchFields(fields, strings.Join(parts[:k], "."))
			if len(cands) > 1 {
				return nil, ambiguous(cands)
			}
			if len(cands) == 0 {
				continue
			}
			f := fields[cands[0]]
			r := &resolved{path: []int{cands[0]}, names: []string{f.Name}, dt: f.Type}
			ok := true
			for _, part := range parts[k:] {
				st, isStruct := r.dt.(*arrow.StructType)
				if !isStruct {
					ok = false
					break
				}
				sub := matchFields(st.Fields(), part)
				if len(sub) != 1 {
					ok = false
					break
				}
				sf := st.Field(sub[0])
				r.path = append(r.path, sub[0])
				r.names = append(r.names, sf.Name)
				r.dt = sf.Type
			}
			if ok {
				return r, nil
			}
		}
		return nil, nil
	}
	r, err := try(ref.Parts)
	if r != nil || err != nil {
		return r, err
	}
	if len(ref.Parts) > 1 {
		for _, q := range b.opts.qualifiers {
			if strings.EqualFold(q, ref.Parts[0]) {
				if r, err := try(ref.Parts[1:]); r != nil || err != nil {
					return r, err
				}
			}
		}
	}
	if len(ref.Parts) == 1 {
		// an unqualified name may stand for a unique qualified field "x.name"
		var cands []int
		for i, f := range fields {
			if dot := strings.LastIndexByte(f.Name, '.'); dot >= 0 && strings.EqualFold(f.Name[dot+1:], ref.Parts[0]) {
				cands = append(cands, i)
			}
		}
		if len(cands) > 1 {
			var exact []int
			for _, c := range cands {
				if strings.HasSuffix(fields[c].Name, "."+ref.Parts[0]) {
					exact = append(exact, c)
				}
			}
			if len(exact) == 1 {
				cands = exact
			} else {
				return nil, ambiguous(cands)
			}
		}
		if len(cands) == 1 {
			f := fields[cands[0]]
			return &resolved{path: []int{cands[0]}, names: []string{f.Name}, dt: f.Type}, nil
		}
	}
	names := make([]string, 0, len(fields))
	for _, f := range fields {
		names = append(names, f.Name)
	}
	avail := strings.Join(names, ", ")
	if len(names) == 0 {
		avail = "(none)"
	}
	return nil, &BindError{Pos: ref.P, Kind: ErrUnknownColumn,
		Msg: fmt.Sprintf("unknown column %s; available columns: %s", ref, avail)}
}
