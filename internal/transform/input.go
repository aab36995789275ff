package transform

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// Input is an input table as one build sees it: its state at the head the
// build pinned, and the range since the last build.
type Input struct {
	spec        InputSpec
	b           *build
	tbl         *table.Table
	head        *table.Snapshot // nil: no snapshot
	start       *int64          // last processed snapshot (exclusive); nil = from the beginning
	incremental bool
	filter      string
}

// Name is the input's declared name.
func (in *Input) Name() string { return in.spec.Name }

// Table is the iceberg-go table.
func (in *Input) Table() *table.Table { return in.tbl }

// Head is the snapshot this build reads up to (nil for an empty table).
func (in *Input) Head() *table.Snapshot { return in.head }

// Start is the last snapshot the previous build processed (nil when this
// build reads from the beginning).
func (in *Input) Start() *int64 { return in.start }

// Filter returns a view of the input whose reads keep only rows matching
// the SQL predicate. On Changelog, rows that stop matching (or whose
// filter columns become NULL) become DELETEs, so that an output keeping
// only matching rows drops them: the changelog of the filtered table.
func (in *Input) Filter(predicate string) *Input {
	c := *in
	if c.filter != "" {
		c.filter = "(" + c.filter + ") AND (" + predicate + ")"
	} else {
		c.filter = predicate
	}
	return &c
}

func (in *Input) ctx() context.Context { return in.b.ctx }

// compileFilter compiles the filter against rows with schema (nil when
// there is no filter).
func (in *Input) compileFilter(schema *arrow.Schema) (*expr.Program, error) {
	if in.filter == "" {
		return nil, nil
	}
	p, err := expr.CompileRowPredicate(schema, in.filter)
	if err != nil {
		return nil, fmt.Errorf("input %s filter: %w", in.spec.Name, err)
	}
	return p.OnRows, nil
}

// Current reads the whole current state of the input (at the pinned head).
func (in *Input) Current() (*Rows, error) {
	opts := scan.Options{}
	if in.head == nil {
		sch, _, err := scanSchema(in.tbl)
		if err != nil {
			return nil, err
		}
		return NewRows(sch, func(func(arrow.RecordBatch, error) bool) {}), nil
	}
	id := in.head.SnapshotID
	opts.At.SnapshotID = &id
	if in.filter != "" {
		p, err := expr.CompilePredicate(in.tbl.Schema(), in.filter)
		if err != nil {
			return nil, fmt.Errorf("input %s filter: %w", in.spec.Name, err)
		}
		opts.Filter, opts.RowFilter = p.Iceberg, p.OnRows.Filter
	}
	sch, seq, err := scan.Rows(in.ctx(), in.tbl, opts)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
	}
	return NewRows(sch, seq), nil
}

func scanSchema(tbl *table.Table) (*arrow.Schema, *table.Table, error) {
	sch, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	return sch, tbl, err
}

// Added reads the rows appended since the last build (append-only mode),
// or the whole current state when the build is not incremental.
func (in *Input) Added() (*Rows, error) {
	if !in.incremental || in.start == nil {
		return in.Current()
	}
	end := in.head.SnapshotID
	cl, err := changelog.Open(in.ctx(), in.tbl, changelog.Options{StartSnapshotID: in.start, EndSnapshotID: &end})
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
	}
	full, _, err := scanSchema(in.tbl)
	if err != nil {
		return nil, err
	}
	p, err := in.compileFilter(full)
	if err != nil {
		return nil, err
	}
	n := full.NumFields()
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range cl.Rows(in.ctx()) {
			if err != nil {
				yield(nil, err)
				return
			}
			kinds := rec.Column(n).(*array.String)
			keep := make([]bool, rec.NumRows())
			for i := range keep {
				keep[i] = kinds.Value(i) == changelog.Insert
			}
			data := rows.Project(rec, full, idx)
			rec.Release()
			sel, err := rows.Select(in.ctx(), data, keep)
			data.Release()
			if err != nil {
				yield(nil, err)
				return
			}
			if p != nil {
				f, err := p.Filter(in.ctx(), sel)
				sel.Release()
				if err != nil {
					yield(nil, err)
					return
				}
				sel = f
			}
			if !yield(sel, nil) {
				return
			}
		}
	}
	return NewRows(full, seq), nil
}

// Changelog reads the latest change per key since the last build
// (UPDATE_BEFORE rows dropped; Foundry's changelog(keys)): the table's
// columns plus _change_type, _change_ordinal and _commit_snapshot_id. It
// fails when several live rows share a key. With a filter, changes to rows
// that do not match become DELETEs. When the build is not incremental it
// returns the current rows as INSERTs.
func (in *Input) Changelog(keys ...string) (*Rows, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("input %s: Changelog needs key columns (NetChanges works without)", in.spec.Name)
	}
	if !in.incremental || in.start == nil {
		cur, err := in.currentAsInserts()
		if err != nil {
			return nil, err
		}
		seq, err := uniqueStream(in.ctx(), fmt.Sprintf("input %s (%s)", in.spec.Name, in.spec.Table), cur.Schema(), cur.All(), [][]string{keys})
		if err != nil {
			return nil, err
		}
		return NewRows(cur.Schema(), seq), nil
	}
	end := in.head.SnapshotID
	cl, err := changelog.Open(in.ctx(), in.tbl, changelog.Options{StartSnapshotID: in.start, EndSnapshotID: &end,
		IdentifierColumns: keys, PerKey: changelog.PerKeyLatest})
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
	}
	changes, err := in.reconcile(cl.Schema(), cl.Rows(in.ctx()))
	if err != nil {
		return nil, err
	}
	return in.checkSourceKeys(changes, keys)
}

// NetChanges reads the net inserts and deletes since the last build over
// whole rows (no identifiers needed; duplicates keep their counts).
func (in *Input) NetChanges() (*Rows, error) {
	if !in.incremental || in.start == nil {
		return in.currentAsInserts()
	}
	end := in.head.SnapshotID
	cl, err := changelog.Open(in.ctx(), in.tbl, changelog.Options{StartSnapshotID: in.start, EndSnapshotID: &end, NetChanges: true})
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
	}
	if in.filter == "" {
		return NewRows(cl.Schema(), cl.Rows(in.ctx())), nil
	}
	p, err := in.compileFilter(cl.Schema())
	if err != nil {
		return nil, err
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range cl.Rows(in.ctx()) {
			if err != nil {
				yield(nil, err)
				return
			}
			f, err := p.Filter(in.ctx(), rec)
			rec.Release()
			if !yield(f, err) || err != nil {
				return
			}
		}
	}
	return NewRows(cl.Schema(), seq), nil
}

// reconcile turns changes of rows failing the filter into DELETEs.
func (in *Input) reconcile(schema *arrow.Schema, seq func(func(arrow.RecordBatch, error) bool)) (*Rows, error) {
	if in.filter == "" {
		return NewRows(schema, seq), nil
	}
	p, err := in.compileFilter(schema)
	if err != nil {
		return nil, err
	}
	ct := schema.FieldIndices(changelog.ChangeTypeColumn)[0]
	out := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			m, err := p.Mask(in.ctx(), rec)
			if err != nil {
				rec.Release()
				yield(nil, err)
				return
			}
			kinds := rec.Column(ct).(*array.String)
			b := array.NewStringBuilder(memory.DefaultAllocator)
			for i := 0; i < int(rec.NumRows()); i++ {
				k := kinds.Value(i)
				if k != changelog.Delete && !m.Value(i) {
					k = changelog.Delete
				}
				b.Append(k)
			}
			m.Release()
			col := b.NewArray()
			b.Release()
			cols := append([]arrow.Array{}, rec.Columns()...)
			cols[ct] = col
			nr := array.NewRecordBatch(schema, cols, rec.NumRows())
			col.Release()
			rec.Release()
			if !yield(nr, nil) {
				return
			}
		}
	}
	return NewRows(schema, out), nil
}

// currentAsInserts returns the current (filtered) rows as INSERT changes.
func (in *Input) currentAsInserts() (*Rows, error) {
	cur, err := in.Current()
	if err != nil {
		return nil, err
	}
	data := cur.Schema()
	fields := append(append([]arrow.Field{}, data.Fields()...),
		arrow.Field{Name: changelog.ChangeTypeColumn, Type: arrow.BinaryTypes.String},
		arrow.Field{Name: changelog.ChangeOrdinalColumn, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: changelog.CommitSnapshotColumn, Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema(fields, nil)
	var snap int64
	if in.head != nil {
		snap = in.head.SnapshotID
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range cur.All() {
			if err != nil {
				yield(nil, err)
				return
			}
			n := int(rec.NumRows())
			ct, _ := rows.ConstantArray(arrow.BinaryTypes.String, changelog.Insert, n)
			co, _ := rows.ConstantArray(arrow.PrimitiveTypes.Int32, int32(0), n)
			cs, _ := rows.ConstantArray(arrow.PrimitiveTypes.Int64, snap, n)
			cols := append(append([]arrow.Array{}, rec.Columns()...), ct, co, cs)
			out := array.NewRecordBatch(schema, cols, int64(n))
			ct.Release()
			co.Release()
			cs.Release()
			rec.Release()
			if !yield(out, nil) {
				return
			}
		}
	}
	return NewRows(schema, seq), nil
}
