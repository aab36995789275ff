package merge

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/rows"
)

// DefaultMemoryBudget is the memory Apply and Merge give the change set
// (or source) and its index when WithMemoryBudget does not say: 512 MiB.
const DefaultMemoryBudget = 512 << 20

// WithMemoryBudget bounds the memory Apply and Merge hold for the change
// rows (or MERGE source rows) and their key index, in bytes (<= 0: the
// default, DefaultMemoryBudget). Past half of it (Apply) or a quarter
// (Merge, whose source rows are joined with an index and carried into the
// rewrite) the rows spill to temporary files, partitioned by key hash
// (Apply) or in runs (Merge), and are read back a part at a time; each
// part, and the keys the table is matched against, stay within the
// budget. The readers and writers of data files take memory beyond it
// (tens of MiB per file being read or written), and the Go runtime's
// garbage collector lets the heap grow to about twice what is live
// (GOGC), so a process's resident memory is about twice the budget at
// most, plus the readers and writers.
func WithMemoryBudget(bytes int64) Option { return func(o *Options) { o.MemoryBudget = bytes } }

// WithTempDir names the folder spill files go to ("" = os.TempDir()).
func WithTempDir(dir string) Option { return func(o *Options) { o.TempDir = dir } }

func (o *Options) budget() int64 {
	if o.MemoryBudget <= 0 {
		return DefaultMemoryBudget
	}
	return o.MemoryBudget
}

// changeSet holds the change rows in the table's shape plus their change
// type (by rank), their sequence value and their arrival ordinal,
// partitioned by key hash: in memory as they came while they fit half the
// budget, spilled to disk past it.
type changeSet struct {
	schema   *arrow.Schema // table columns, then kind, [seq], ord
	nTable   int
	tableSch *arrow.Schema
	keyCols  []int // in the rows (table columns)
	keyNames []string
	kindCol  int
	seqCol   int // -1 when none
	ordCol   int
	o        *Options
	part     *rows.Partitioner
	n        int64       // change rows read
	strict   *strictKeys // WithInsertsMustBeNew; nil: upserts
}

func (cs *changeSet) release() {
	if cs.part != nil {
		cs.part.Close()
	}
	cs.strict.release()
}

// Names of the columns the change set adds to the table's; they are found
// by position, so a table column of the same name does no harm.
const (
	kindField = "floe.kind"
	seqField  = "floe.seq"
	ordField  = "floe.ord"
)

func collect(ctx context.Context, tbl *table.Table, src *arrow.Schema, changes iter.Seq2[arrow.RecordBatch, error], keys []string, o *Options) (*changeSet, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key columns given", ErrBadChanges)
	}
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	extra := []arrow.Field{{Name: o.ChangeTypeColumn, Type: arrow.BinaryTypes.String, Nullable: false}}
	seqInTable := false
	if o.SequenceColumn != "" {
		if len(target.FieldIndices(o.SequenceColumn)) > 0 {
			seqInTable = true
		} else {
			extra = append(extra, arrow.Field{Name: o.SequenceColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: false})
		}
	}
	for _, m := range metadataColumns {
		if m != o.ChangeTypeColumn && m != o.SequenceColumn && len(src.FieldIndices(m)) > 0 {
			extra = append(extra, arrow.Field{Name: m, Type: src.Field(src.FieldIndices(m)[0]).Type, Nullable: true})
		}
	}
	if len(src.FieldIndices(o.ChangeTypeColumn)) == 0 {
		return nil, fmt.Errorf("%w: the changes have no %s column (INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE per row)", ErrBadChanges, o.ChangeTypeColumn)
	}
	cs := &changeSet{nTable: target.NumFields(), tableSch: target, seqCol: -1, o: o}
	for _, k := range keys {
		idx := target.FieldIndices(k)
		if len(idx) == 0 {
			for i, f := range target.Fields() {
				if strings.EqualFold(f.Name, k) {
					idx = []int{i}
				}
			}
		}
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w: key column %q is not a column of the table (columns: %s)", ErrBadChanges, k, fieldNames(target))
		}
		cs.keyCols = append(cs.keyCols, idx[0])
		cs.keyNames = append(cs.keyNames, target.Field(idx[0]).Name)
	}
	if err := checkKeyIdentifier(tbl, cs.keyNames, o); err != nil {
		return nil, err
	}
	fields := append([]arrow.Field{}, target.Fields()...)
	cs.kindCol = len(fields)
	fields = append(fields, arrow.Field{Name: kindField, Type: arrow.PrimitiveTypes.Int8})
	if o.SequenceColumn != "" {
		cs.seqCol = len(fields)
		fields = append(fields, arrow.Field{Name: seqField, Type: arrow.PrimitiveTypes.Int64})
	}
	cs.ordCol = len(fields)
	fields = append(fields, arrow.Field{Name: ordField, Type: arrow.PrimitiveTypes.Int64})
	cs.schema = arrow.NewSchema(fields, nil)
	po := rows.PartitionOptions{Budget: o.budget() / 2, TempDir: o.TempDir, Whole: true}
	if o.InsertsMustBeNew {
		// Whether a change adds a key twice depends on all of the key's
		// changes: they spill uncombined.
		cs.strict = newStrictKeys(cs)
	} else if cs.seqCol >= 0 {
		// A key's changes collapse to the one that wins: only winners
		// need to spill, so a key with many changes stays one row per run.
		po.Combine = cs.combine
	}
	cs.part = rows.NewPartitionerWith(cs.schema, cs.keyCols, po)

	r, err := rowfile.FromRecords(ctx, "changes", src, changes, rowfile.ReadOptions{Target: target, Extra: extra})
	if err != nil {
		cs.release()
		return nil, err
	}
	defer r.Close()
	in := r.Schema()
	typeCol := in.FieldIndices(o.ChangeTypeColumn)[0]
	seqIn := -1
	if o.SequenceColumn != "" {
		if seqInTable {
			seqIn = target.FieldIndices(o.SequenceColumn)[0]
		} else {
			seqIn = in.FieldIndices(o.SequenceColumn)[0]
		}
	}
	for rec, err := range r.All() {
		if err != nil {
			cs.release()
			return nil, err
		}
		held, err := cs.convert(rec, typeCol, seqIn)
		rec.Release()
		if err == nil && held != nil {
			err = cs.part.Add(ctx, held)
			held.Release()
		}
		if err != nil {
			cs.release()
			return nil, err
		}
	}
	return cs, nil
}

// convert checks one batch of change rows (change types, NULL keys and
// sequence values) and returns it in the change set's schema, or nil when
// none of its rows matter: without a sequence column, UPDATE_BEFORE rows
// are ignored and left out.
func (cs *changeSet) convert(rec arrow.RecordBatch, typeCol, seqIn int) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	if n == 0 {
		return nil, nil
	}
	kinds := rec.Column(typeCol).(*array.String)
	kind := make([]int8, n)
	before := 0
	for i := range kind {
		k := parseKind(kinds.Value(i))
		if k < 0 {
			return nil, fmt.Errorf("%w: row %d: %s %q is not INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE", ErrBadChanges, cs.n+int64(i), cs.o.ChangeTypeColumn, kinds.Value(i))
		}
		kind[i] = k
		if k == kindUpdateBefore {
			before++
		}
	}
	for _, k := range cs.keyCols {
		col := rec.Column(k)
		if col.NullN() == 0 {
			continue
		}
		for i := range n {
			if col.IsNull(i) {
				return nil, fmt.Errorf("%w: row %d (%s): key column %s is NULL", ErrBadChanges, cs.n+int64(i), kindNames[kind[i]], rec.Schema().Field(k).Name)
			}
		}
	}
	cols := make([]arrow.Array, 0, cs.schema.NumFields())
	cols = append(cols, rec.Columns()[:cs.nTable]...)
	var own []arrow.Array
	defer func() { releaseAll(own) }()
	kb := array.NewInt8Builder(memory.DefaultAllocator)
	kb.AppendValues(kind, nil)
	own = append(own, kb.NewArray())
	kb.Release()
	cols = append(cols, own[len(own)-1])
	if cs.seqCol >= 0 {
		sc := rec.Column(seqIn)
		seq := make([]int64, n)
		for i := range seq {
			if sc.IsNull(i) {
				return nil, fmt.Errorf("%w: row %d: sequence column %s is NULL", ErrBadChanges, cs.n+int64(i), cs.o.SequenceColumn)
			}
			seq[i] = seqValue(sc, i)
		}
		sb := array.NewInt64Builder(memory.DefaultAllocator)
		sb.AppendValues(seq, nil)
		own = append(own, sb.NewArray())
		sb.Release()
		cols = append(cols, own[len(own)-1])
	}
	ord := make([]int64, n)
	for i := range ord {
		ord[i] = cs.n + int64(i)
	}
	ob := array.NewInt64Builder(memory.DefaultAllocator)
	ob.AppendValues(ord, nil)
	own = append(own, ob.NewArray())
	ob.Release()
	cols = append(cols, own[len(own)-1])
	cs.n += int64(n)
	out := array.NewRecordBatch(cs.schema, cols, int64(n))
	if cs.seqCol >= 0 || before == 0 {
		return out, nil
	}
	defer out.Release()
	if before == n {
		return nil, nil
	}
	keep := make([]bool, n)
	for i, k := range kind {
		keep[i] = k != kindUpdateBefore
	}
	return rows.Select(context.Background(), out, keep)
}

func fieldNames(s *arrow.Schema) string {
	n := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		n[i] = f.Name
	}
	return strings.Join(n, ", ")
}

// kinds returns the change type column of a change set batch.
func (cs *changeSet) kinds(rec arrow.RecordBatch) []int8 {
	return rec.Column(cs.kindCol).(*array.Int8).Int8Values()
}

// ords returns the arrival ordinals of a change set batch.
func (cs *changeSet) ords(rec arrow.RecordBatch) []int64 {
	return rec.Column(cs.ordCol).(*array.Int64).Int64Values()
}

// seqs returns the sequence values of a change set batch (nil without a
// sequence column).
func (cs *changeSet) seqs(rec arrow.RecordBatch) []int64 {
	if cs.seqCol < 0 {
		return nil
	}
	return rec.Column(cs.seqCol).(*array.Int64).Int64Values()
}
