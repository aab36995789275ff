package delta

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/internal/pqcheck"
)

// Names of the change data columns Changes appends.
const (
	ChangeTypeColumn      = "_change_type"
	CommitVersionColumn   = "_commit_version"
	CommitTimestampColumn = "_commit_timestamp"
)

// Values of the _change_type column defined by the protocol. Change data
// files written by other tools may hold other values; Changes passes them
// through unchanged.
const (
	ChangeInsert          = "insert"
	ChangeDelete          = "delete"
	ChangeUpdatePreimage  = "update_preimage"
	ChangeUpdatePostimage = "update_postimage"
)

type colKind int

const (
	colData colKind = iota
	colPartition
	colChangeType
	colVersion
	colTimestamp
)

// outCol is one column of the batches a read produces.
type outCol struct {
	kind  colKind
	field *StructField // colData, colPartition
	atype arrow.DataType
}

// readSpec is the output layout shared by all files of a Scan or Changes.
type readSpec struct {
	schema *arrow.Schema
	cols   []outCol
	mode   ColumnMappingMode
}

// newReadSpec lays out the columns: the table columns (all, or those named in
// columns, in that order) and, with cdf, the three change data columns
// (which columns may also name).
func newReadSpec(schema *StructType, meta *Metadata, columns []string, cdf bool) (*readSpec, error) {
	spec := &readSpec{mode: meta.ColumnMappingMode()}
	isPart := func(name string) bool {
		for _, p := range meta.PartitionColumns {
			if strings.EqualFold(p, name) {
				return true
			}
		}
		return false
	}
	var fields []arrow.Field
	addField := func(f *StructField) error {
		af, err := ArrowField(f)
		if err != nil {
			return err
		}
		kind := colData
		if isPart(f.Name) {
			kind = colPartition
		}
		spec.cols = append(spec.cols, outCol{kind: kind, field: f, atype: af.Type})
		fields = append(fields, af)
		return nil
	}
	addMeta := func(name string) {
		switch name {
		case ChangeTypeColumn:
			spec.cols = append(spec.cols, outCol{kind: colChangeType, atype: arrow.BinaryTypes.String})
			fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String})
		case CommitVersionColumn:
			spec.cols = append(spec.cols, outCol{kind: colVersion, atype: arrow.PrimitiveTypes.Int64})
			fields = append(fields, arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int64})
		case CommitTimestampColumn:
			spec.cols = append(spec.cols, outCol{kind: colTimestamp, atype: arrowTimestampUTC})
			fields = append(fields, arrow.Field{Name: name, Type: arrowTimestampUTC})
		}
	}
	if columns == nil {
		for i := range schema.Fields {
			if err := addField(&schema.Fields[i]); err != nil {
				return nil, err
			}
		}
		if cdf {
			addMeta(ChangeTypeColumn)
			addMeta(CommitVersionColumn)
			addMeta(CommitTimestampColumn)
		}
	} else {
		seen := map[string]bool{}
		for _, name := range columns {
			if seen[name] {
				return nil, fmt.Errorf("%w: column %q is listed twice", ErrColumnNotFound, name)
			}
			seen[name] = true
			if cdf && (name == ChangeTypeColumn || name == CommitVersionColumn || name == CommitTimestampColumn) {
				addMeta(name)
				continue
			}
			f, _ := schema.Field(name)
			if f == nil {
				return nil, fmt.Errorf("%w: column %q is not in the table schema %s", ErrColumnNotFound, name, schema)
			}
			if err := addField(f); err != nil {
				return nil, err
			}
		}
	}
	spec.schema = arrow.NewSchema(fields, nil)
	return spec, nil
}

// selection says which rows of a file a task reads, in terms of deletion
// vectors that are loaded when the file is read.
type selection struct {
	// include false: all rows except those in dv (a nil dv keeps all).
	// include true: only the rows in dv that are not in minus (a nil dv
	// keeps none).
	include bool
	dv      *DeletionVector
	minus   *DeletionVector
}

// rowSelection is a loaded selection: with keep false the rows in rows are
// dropped, with keep true only they are kept. A nil *rowSelection keeps all.
type rowSelection struct {
	rows *roaring64.Bitmap
	keep bool
}

// readTask is one file to read, with the constant columns of its rows.
type readTask struct {
	location   string
	what       string // names the file and the version for errors
	partition  map[string]*string
	sel        selection
	changeType string // constant _change_type; "" reads it from the file (cdc)
	version    int64
	timestamp  time.Time
}

// loadSelection loads the deletion vectors of a task's selection. skip
// reports that no row is selected.
func (t *Table) loadSelection(ctx context.Context, task *readTask) (sel *rowSelection, skip bool, err error) {
	s := task.sel
	if !s.include {
		if s.dv == nil {
			return nil, false, nil
		}
		bm, err := t.loadDV(ctx, s.dv, task.what)
		if err != nil {
			return nil, false, err
		}
		return &rowSelection{rows: bm}, false, nil
	}
	if s.dv == nil {
		return nil, true, nil
	}
	bm, err := t.loadDV(ctx, s.dv, task.what)
	if err != nil {
		return nil, false, err
	}
	if s.minus != nil {
		m, err := t.loadDV(ctx, s.minus, task.what)
		if err != nil {
			return nil, false, err
		}
		bm.AndNot(m)
	}
	if bm.IsEmpty() {
		return nil, true, nil
	}
	return &rowSelection{rows: bm, keep: true}, false, nil
}

// readFile reads one task and calls yield for each non-empty batch, which
// yield then owns. It returns false when yield asked to stop.
func (t *Table) readFile(ctx context.Context, spec *readSpec, task *readTask, cache *constCache, yield func(arrow.RecordBatch) bool) (cont bool, err error) {
	defer func() {
		// NB: arrow-go's Parquet decoder can panic on a damaged file:
		// report it as damage (see readParquetActions).
		if p := recover(); p != nil {
			cont, err = true, fmt.Errorf("%w: %s is damaged: the Parquet decoder failed: %v", ErrCorruptDataFile, task.what, p)
		}
	}()
	sel, skip, err := t.loadSelection(ctx, task)
	if err != nil || skip {
		return true, err
	}
	consts, err := t.constants(spec, task)
	if err != nil {
		return true, err
	}
	f, err := t.openFile(ctx, task.location, task.what)
	if err != nil {
		return true, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		return true, fmt.Errorf("%w: %s: not a readable Parquet file: %v", ErrCorruptDataFile, task.what, err)
	}
	defer pf.Close()
	if err := pqcheck.Check(pf); err != nil {
		return true, fmt.Errorf("%w: %s is damaged: %v", ErrCorruptDataFile, task.what, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(t.batchSize)}, t.mem)
	if err != nil {
		return true, fmt.Errorf("%w: %s: %v", ErrCorruptDataFile, task.what, err)
	}
	fileFields := make([]arrow.Field, len(fr.Manifest.Fields))
	for i := range fr.Manifest.Fields {
		fileFields[i] = *fr.Manifest.Fields[i].Field
	}
	// fileIdx[c] is the top-level file field of output column c (-1: absent).
	fileIdx := make([]int, len(spec.cols))
	used := map[int]bool{}
	for c, col := range spec.cols {
		fileIdx[c] = -1
		switch {
		case col.kind == colData:
			fileIdx[c] = matchField(fileFields, col.field, spec.mode)
		case col.kind == colChangeType && task.changeType == "":
			for i := range fileFields {
				if fileFields[i].Name == ChangeTypeColumn {
					fileIdx[c] = i
				}
			}
			if fileIdx[c] < 0 {
				return true, fmt.Errorf("%w: %s has no %s column", ErrCorruptDataFile, task.what, ChangeTypeColumn)
			}
		}
		if fileIdx[c] >= 0 {
			used[fileIdx[c]] = true
		}
	}
	top := make([]int, 0, len(used))
	for i := range used {
		top = append(top, i)
	}
	sort.Ints(top)
	rank := map[int]int{}
	var leaves []int
	for r, i := range top {
		rank[i] = r
		leaves = collectLeaves(&fr.Manifest.Fields[i], leaves)
	}
	conv := &converter{ctx: ctx, mem: t.mem, mode: spec.mode}
	emit := func(rec arrow.RecordBatch, first int64, n int) (bool, error) {
		mask, none := selectionMask(t.mem, sel, first, n)
		if none {
			return true, nil
		}
		cols := make([]arrow.Array, len(spec.cols))
		defer func() {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}()
		for c, col := range spec.cols {
			switch {
			case fileIdx[c] >= 0:
				src := rec.Column(rank[fileIdx[c]])
				dt := DataType(TypeString)
				path := ChangeTypeColumn
				if col.field != nil {
					dt, path = col.field.Type, col.field.Name
				}
				a, err := conv.conform(src, dt, col.atype, path)
				if err != nil {
					return true, fmt.Errorf("%s: %w", task.what, err)
				}
				cols[c] = a
			case consts[c] != nil:
				a, err := cache.array(consts[c], n, t.mem)
				if err != nil {
					return true, fmt.Errorf("%s: column %s: %w", task.what, spec.schema.Field(c).Name, err)
				}
				cols[c] = a
			default:
				cols[c] = array.MakeArrayOfNull(t.mem, col.atype, n)
			}
		}
		out := array.NewRecordBatch(spec.schema, cols, int64(n))
		if mask != nil {
			filtered, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, t.mem), out, mask, compute.DefaultFilterOptions())
			out.Release()
			mask.Release()
			if err != nil {
				return true, fmt.Errorf("%s: applying deletion vector: %w", task.what, err)
			}
			out = filtered
		}
		if out.NumRows() == 0 {
			out.Release()
			return true, nil
		}
		return yield(out), nil
	}
	if len(leaves) == 0 {
		// Only constant and missing columns: the row count is all we need.
		total := pf.NumRows()
		for first := int64(0); first < total; first += int64(t.batchSize) {
			n := int(min(int64(t.batchSize), total-first))
			if cont, err := emit(nil, first, n); err != nil || !cont {
				return cont, err
			}
		}
		return true, nil
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return true, fmt.Errorf("%w: %s: %v", ErrCorruptDataFile, task.what, err)
	}
	defer rr.Release()
	first := int64(0)
	for rr.Next() {
		rec := rr.RecordBatch()
		n := int(rec.NumRows())
		cont, err := emit(rec, first, n)
		if err != nil || !cont {
			return cont, err
		}
		first += int64(n)
		if err := ctx.Err(); err != nil {
			return true, err
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return true, fmt.Errorf("%w: %s: %v", ErrCorruptDataFile, task.what, err)
	}
	if sel != nil && sel.rows != nil {
		if max := sel.rows.Maximum(); !sel.rows.IsEmpty() && max >= uint64(first) {
			return true, fmt.Errorf("%w: deletion vector of %s names row %d but the file has %d rows", ErrCorruptDeletionVector, task.what, max, first)
		}
	}
	return true, nil
}

// constants returns the scalar of each constant column of a task: partition
// values (parsed per the schema), the change type of add/remove files, the
// commit version and timestamp. Other entries are nil.
func (t *Table) constants(spec *readSpec, task *readTask) ([]scalar.Scalar, error) {
	out := make([]scalar.Scalar, len(spec.cols))
	for c, col := range spec.cols {
		switch col.kind {
		case colPartition:
			raw, ok := task.partition[col.field.PhysicalName(spec.mode)]
			if !ok {
				raw = lookupFold(task.partition, col.field.Name)
			}
			s, err := ParsePartitionValue(raw, col.field.Type)
			if err != nil {
				return nil, fmt.Errorf("%s: partition column %q: %w", task.what, col.field.Name, err)
			}
			out[c] = s
		case colChangeType:
			if task.changeType != "" {
				out[c] = scalar.NewStringScalar(task.changeType)
			}
		case colVersion:
			out[c] = scalar.NewInt64Scalar(task.version)
		case colTimestamp:
			out[c] = scalar.NewTimestampScalar(arrow.Timestamp(task.timestamp.UnixMicro()), arrowTimestampUTC)
		}
	}
	return out, nil
}

// constCache keeps the constant columns built for recent batches (partition
// values, change type, commit version and timestamp repeat across batches
// and files), so a batch costs no allocation for them. Arrays are shared
// read-only between batches through reference counts.
type constCache struct {
	arrays map[constKey]arrow.Array
}

type constKey struct {
	n     int
	typ   string
	value string
}

const constCacheSize = 64

// array returns a new reference to an array of n copies of s.
func (c *constCache) array(s scalar.Scalar, n int, mem memory.Allocator) (arrow.Array, error) {
	k := constKey{n: n, typ: s.DataType().String(), value: s.String()}
	if !s.IsValid() {
		k.value = "\x00null"
	}
	if a, ok := c.arrays[k]; ok {
		a.Retain()
		return a, nil
	}
	a, err := scalar.MakeArrayFromScalar(s, n, mem)
	if err != nil {
		return nil, err
	}
	if c.arrays == nil || len(c.arrays) >= constCacheSize {
		c.release()
		c.arrays = map[constKey]arrow.Array{}
	}
	a.Retain()
	c.arrays[k] = a
	return a, nil
}

// release drops the cached arrays.
func (c *constCache) release() {
	for _, a := range c.arrays {
		a.Release()
	}
	c.arrays = nil
}

func lookupFold(m map[string]*string, name string) *string {
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}
