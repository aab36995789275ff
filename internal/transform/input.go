package transform

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/delta"
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
	delta       *deltaInput // set for a Delta input (then tbl and head are nil)
}

// deltaInput is a Delta input as one build sees it: the version it
// pinned (start is then the last version processed).
type deltaInput struct {
	tbl       *delta.Table
	snap      *delta.Snapshot // at version
	version   int64
	committed time.Time // version's commit time (zero when unknown)
}

// Name is the input's declared name.
func (in *Input) Name() string { return in.spec.Name }

// Table is the iceberg-go table (nil for a Delta input).
func (in *Input) Table() *table.Table { return in.tbl }

// IsDelta reports whether the input is a Delta table (WithDeltaInput).
func (in *Input) IsDelta() bool { return in.delta != nil }

// DeltaVersion is the Delta version a Delta input is read at (0 for an
// Iceberg input). Start is then the last version the previous build
// processed.
func (in *Input) DeltaVersion() int64 {
	if in.delta == nil {
		return 0
	}
	return in.delta.version
}

// Changed reports whether the input has anything after its watermark: a
// full build, or new snapshots (new versions of a Delta input).
func (in *Input) Changed() bool {
	if !in.incremental || in.start == nil {
		return true
	}
	if in.delta != nil {
		return *in.start != in.delta.version
	}
	return in.head == nil || *in.start != in.head.SnapshotID
}

// ArrowSchema is the schema of the rows Current reads.
func (in *Input) ArrowSchema() (*arrow.Schema, error) {
	if in.delta != nil {
		return in.delta.snap.ArrowSchema()
	}
	sch, _, err := scanSchema(in.tbl)
	return sch, err
}

// DeltaChanges reads a Delta input's Change Data Feed after its watermark
// up to the pinned version, as Delta gives it: the table's columns and
// _change_type (insert, delete, update_preimage, update_postimage),
// _commit_version and _commit_timestamp (the input's filter does not
// apply). The range is checked before it returns: a range the feed does
// not cover fails with delta.ErrChangeDataNotRecorded, ErrVersionNotFound
// or ErrIncompatibleSchemaChange; a data file vacuumed away fails the
// sequence with delta.ErrFileNotFound. Without a watermark (a full build)
// or new versions the result is empty.
func (in *Input) DeltaChanges() (*Rows, error) {
	if in.delta == nil {
		return nil, fmt.Errorf("input %s is not a Delta table", in.spec.Name)
	}
	if in.start == nil || *in.start >= in.delta.version {
		sch, err := in.delta.snap.ArrowSchema()
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
		}
		fields := append(append([]arrow.Field{}, sch.Fields()...),
			arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String},
			arrow.Field{Name: "_commit_version", Type: arrow.PrimitiveTypes.Int64},
			arrow.Field{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}})
		return NewRows(arrow.NewSchema(fields, nil), func(func(arrow.RecordBatch, error) bool) {}), nil
	}
	sch, seq, err := in.delta.tbl.Changes(in.ctx(), delta.ChangesOptions{Start: delta.AtVersion(*in.start + 1), End: delta.AtVersion(in.delta.version)})
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
	}
	return NewRows(sch, seq), nil
}

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
	if in.delta != nil {
		return in.deltaCurrent()
	}
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

// deltaCurrent reads a Delta input at its pinned version, filtered.
func (in *Input) deltaCurrent() (*Rows, error) {
	sch, seq, err := in.delta.snap.Scan(in.ctx(), delta.ScanOptions{})
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.spec.Name, err)
	}
	p, err := in.compileFilter(sch)
	if err != nil || p == nil {
		return NewRows(sch, seq), err
	}
	return NewRows(sch, in.filtered(p, seq)), nil
}

// filtered keeps the rows of seq that p accepts.
func (in *Input) filtered(p *expr.Program, seq iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range seq {
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
}

// errDeltaChanges is the error of a changelog read of a Delta input.
func (in *Input) errDeltaChanges() error {
	return fmt.Errorf("input %s is a Delta table: read its changes with DeltaChanges", in.spec.Name)
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
	if in.delta != nil {
		return nil, in.errDeltaChanges()
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
	if in.delta != nil {
		return nil, in.errDeltaChanges()
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
	if in.delta != nil {
		return nil, in.errDeltaChanges()
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
	return NewRows(cl.Schema(), in.filtered(p, cl.Rows(in.ctx()))), nil
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
