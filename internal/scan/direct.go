package scan

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// directBufferSize is what each column of a direct read holds of the
// file at a time.
const directBufferSize = 1 << 20

// useDirect turns direct reads on (tests compare both paths).
var useDirect = true

// directReads counts the files read directly (tests).
var directReads atomic.Int64

// direct reads data file df projected onto names with floe's own Parquet
// reader, when that gives exactly what iceberg-go's reader gives: every
// column is a top-level primitive the file stores under the same field
// ID, with the Arrow type of the table's schema or one Iceberg promotes to
// it (int to long, float to double: widened), and no NULLs where the
// schema has none; an optional column without an initial default that the
// file lacks is NULL where the file's columns all have field IDs and the
// table has no name mapping; with lin, the lineage columns among names are read where the
// file stores them and filled by inheritance where it does not. It reports
// false, having read nothing, for any other file, which iceberg-go's
// reader then reads.
//
// With where (a filter bound to the table's schema), the row groups whose
// statistics rule it out are not read (see keptGroups): the batches then
// hold the rows of the other row groups only, at their positions.
//
// Why: iceberg-go v0.7.0 opens Parquet files with default reader
// properties and gives no way to change them, so each column reader
// loads its whole column chunk into memory for as long as it reads the
// row group (a 1M-row file: tens of MiB per file read). Here each column
// reads through a buffer of directBufferSize.
func (r *Reader) direct(ctx context.Context, df iceberg.DataFile, names []string, lin *Lineage, where iceberg.BooleanExpression) (iter.Seq2[Batch, error], bool) {
	if !useDirect || len(names) == 0 || df.FileFormat() != iceberg.ParquetFile || df.ContentType() != iceberg.EntryContentData {
		return nil, false
	}
	// With lin, names may hold the lineage columns: they are read where the
	// file stores them and filled from lin where it does not (or holds
	// NULL), as iceberg-go's reader does.
	linOf := make([]int, len(names)) // position in names -> lineage column (0, 1) or -1
	data := []string{}               // not nil: project(nil) is the whole schema
	for k, n := range names {
		linOf[k] = -1
		if lin != nil && n == iceberg.RowID().Name {
			linOf[k] = 0
		} else if lin != nil && n == iceberg.LastUpdatedSequenceNumber().Name {
			linOf[k] = 1
		} else {
			data = append(data, n)
		}
	}
	sc, err := r.project(data)
	if err != nil {
		return nil, false
	}
	wantData, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return nil, false
	}
	linFields := []iceberg.NestedField{iceberg.RowID(), iceberg.LastUpdatedSequenceNumber()}
	linSchema, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, linFields...), nil, false, false)
	if err != nil {
		return nil, false
	}
	outFields := make([]arrow.Field, len(names))
	for k, d := 0, 0; k < len(names); k++ {
		if linOf[k] >= 0 {
			outFields[k] = linSchema.Field(linOf[k])
		} else {
			outFields[k] = wantData.Field(d)
			d++
		}
	}
	want := arrow.NewSchema(outFields, nil)
	r.checked.expect(df)
	f, err := r.checked.Open(df.FilePath())
	if err != nil {
		return nil, false
	}
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = directBufferSize
	pr, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		f.Close()
		return nil, false
	}
	// Not Parallel: pqarrow's parallel record reader decodes in goroutines
	// of its own, where a damaged page's decoder panic cannot be recovered
	// and ends the process; readColumns decodes the columns in parallel in
	// goroutines that recover.
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: int64(r.batchSize)}, memory.DefaultAllocator)
	if err != nil {
		pr.Close()
		return nil, false
	}
	byID := map[int]int{} // field ID -> top-level field of the file
	root := pr.MetaData().Schema.Root()
	// A column the file lacks is NULL only where the file's columns are
	// matched by field ID: every column has one, and the table has no name
	// mapping (iceberg-go's reader applies it).
	_, mapped := r.tbl.Properties()[table.DefaultNameMappingKey]
	byIDOnly := !mapped && root.NumFields() > 0
	for j := range root.NumFields() {
		id := int(root.Field(j).FieldID())
		byIDOnly = byIDOnly && id >= 0
		if _, dup := byID[id]; dup {
			byID[id] = -1
			continue
		}
		byID[id] = j
	}
	// The field IDs to read, in the order of names; a lineage column the
	// file does not store has none (0).
	ids := make([]int, len(names))
	var leaves []int
	dataFields := sc.Fields()
	for k, d := 0, 0; k < len(names); k++ {
		var fd iceberg.NestedField
		if linOf[k] >= 0 {
			fd = linFields[linOf[k]]
		} else {
			fd = dataFields[d]
			d++
		}
		j, ok := byID[fd.ID]
		if !ok && (linOf[k] >= 0 || byIDOnly && !fd.Required && fd.InitialDefault == nil) {
			continue // a lineage column to fill, or a column added after the file: NULL
		}
		if !ok || j < 0 || j >= len(fr.Manifest.Fields) {
			pr.Close()
			return nil, false
		}
		mf := fr.Manifest.Fields[j]
		wf := want.Field(k)
		if !mf.IsLeaf() || len(mf.Children) > 0 || !(arrow.TypeEqual(mf.Field.Type, wf.Type) || promoted(mf.Field.Type, wf.Type)) ||
			(mf.Field.Nullable && !wf.Nullable) {
			pr.Close()
			return nil, false
		}
		ids[k] = fd.ID
		leaves = append(leaves, mf.ColIndex)
	}
	// The runs of row groups to read: all of them, or those in which
	// where may hold.
	runs := allGroups(pr.NumRowGroups())
	if where != nil && len(runs) > 0 {
		if runs = keptGroups(pr, byID, r.schema, df, where); len(runs) == 0 {
			pr.Close()
			directReads.Add(1)
			return func(func(Batch, error) bool) {}, true // no row group may hold a row where holds for
		}
	}
	// With only columns the file does not store (lineage, added later)
	// there is nothing to read: the rows are counted from the footer.
	var readers []*pqarrow.ColumnReader
	got := arrow.NewSchema(nil, nil)
	if len(leaves) > 0 && len(runs) > 0 {
		readers, got, err = fieldReaders(ctx, fr, leaves, runs[0])
		if err != nil {
			pr.Close()
			return nil, false
		}
	}
	release := func() {
		for _, c := range readers {
			c.Release()
		}
	}
	// Find each column in the reader's output by its field ID.
	at := make([]int, len(names))
	for k, id := range ids {
		at[k] = -1
		if id == 0 {
			continue
		}
		for c := range got.NumFields() {
			md := got.Field(c).Metadata
			if i := md.FindKey("PARQUET:field_id"); i >= 0 && md.Values()[i] == strconv.Itoa(id) {
				at[k] = c
			}
		}
		if at[k] < 0 || !(arrow.TypeEqual(got.Field(at[k]).Type, want.Field(k).Type) || promoted(got.Field(at[k]).Type, want.Field(k).Type)) {
			release()
			pr.Close()
			return nil, false
		}
	}
	directReads.Add(1)
	// starts[g] is the position of row group g's first row; starts[len] the
	// file's row count.
	starts := make([]int64, pr.NumRowGroups()+1)
	for g, rg := range pr.MetaData().RowGroups {
		starts[g+1] = starts[g] + rg.NumRows
	}
	rows := starts[len(starts)-1]
	batch := min(int64(r.batchSize), max(1, int64(bitutil.NextPowerOf2(int(rows)))))
	damaged := func(problem string) error {
		return &CorruptFileError{Table: r.checked.table, Kind: "data file", Path: df.FilePath(), Problem: problem}
	}
	return func(yield func(Batch, error) bool) {
		defer pr.Close()
		defer func() { release() }()
		if len(runs) == 0 {
			return
		}
		run := 0
		next, end := starts[runs[0][0]], starts[runs[0][len(runs[0])-1]+1]
		for {
			if err := ctx.Err(); err != nil {
				yield(Batch{}, err)
				return
			}
			if next >= end { // the end of a run: on to the next one
				if run++; run == len(runs) {
					return
				}
				g := runs[run]
				next, end = starts[g[0]], starts[g[len(g)-1]+1]
				if len(readers) > 0 {
					release()
					var err error
					if readers, _, err = fieldReaders(ctx, fr, leaves, g); err != nil {
						readers = nil
						yield(Batch{}, r.readError(df, err))
						return
					}
				}
				continue
			}
			var cols []arrow.Array
			var err error
			n := min(batch, end-next)
			if len(readers) > 0 {
				cols, err = readColumns(readers, n)
			}
			if err != nil {
				var pe *decodePanic
				if errors.As(err, &pe) {
					err = damaged(fmt.Sprintf("the Parquet decoder failed at row %d (a damaged page?): %v", next, pe.value))
				} else {
					err = r.readError(df, err)
				}
				yield(Batch{}, err)
				return
			}
			if len(readers) > 0 {
				if cols == nil {
					yield(Batch{}, damaged(fmt.Sprintf("its row groups hold fewer rows than its footer says (%d from row %d on)", end-next, next)))
					return
				}
				n = int64(cols[0].Len())
			}
			for _, c := range cols {
				if int64(c.Len()) != n {
					releaseArrays(cols)
					yield(Batch{}, damaged(fmt.Sprintf("its columns hold different numbers of values from row %d on", next)))
					return
				}
			}
			out := make([]arrow.Array, len(at))
			var filled []arrow.Array
			for k, c := range at {
				if linOf[k] < 0 {
					switch {
					case c < 0: // not in the file
						out[k] = array.MakeArrayOfNull(memory.DefaultAllocator, want.Field(k).Type, int(n))
						filled = append(filled, out[k])
					case !arrow.TypeEqual(cols[c].DataType(), want.Field(k).Type):
						out[k] = promote(cols[c], want.Field(k).Type)
						filled = append(filled, out[k])
					default:
						out[k] = cols[c]
					}
					continue
				}
				var stored *array.Int64
				if c >= 0 {
					stored, _ = cols[c].(*array.Int64)
				}
				out[k] = fillLineage(stored, linOf[k], lin, next, n)
				filled = append(filled, out[k])
			}
			rec := array.NewRecordBatch(want, out, n)
			releaseArrays(cols)
			releaseArrays(filled)
			pos := positions(next, n)
			next += n
			if !yield(Batch{Rec: rec, Pos: pos}, nil) {
				return
			}
		}
	}, true
}

// promoted reports whether Iceberg's type promotion takes a column stored
// as from to to (int to long, float to double), which direct reads widen.
func promoted(from, to arrow.DataType) bool {
	return from.ID() == arrow.INT32 && to.ID() == arrow.INT64 || from.ID() == arrow.FLOAT32 && to.ID() == arrow.FLOAT64
}

// promote widens a (see promoted) to type to, NULLs kept.
func promote(a arrow.Array, to arrow.DataType) arrow.Array {
	switch v := a.(type) {
	case *array.Int32:
		return widen(v, array.NewInt64Builder(memory.DefaultAllocator))
	case *array.Float32:
		return widen(v, array.NewFloat64Builder(memory.DefaultAllocator))
	}
	panic(fmt.Sprintf("scan: no promotion of %s to %s", a.DataType(), to))
}

// widen copies a into b, each value converted to b's wider type.
func widen[T int32 | float32, U int64 | float64, B interface {
	array.Builder
	UnsafeAppend(U)
}](a interface {
	arrow.Array
	Value(int) T
}, b B) arrow.Array {
	defer b.Release()
	b.Reserve(a.Len())
	for i := range a.Len() {
		if a.IsNull(i) {
			b.UnsafeAppendBoolToBitmap(false)
		} else {
			b.UnsafeAppend(U(a.Value(i)))
		}
	}
	return b.NewArray()
}

// fillLineage gives lineage column which (0: _row_id, 1:
// _last_updated_sequence_number) of the n rows from position next on: the
// stored values (stored may be nil), with a NULL filled from lin as the
// spec's inheritance says: lin.FirstRowID plus the row's position, or
// lin.DataSeq.
func fillLineage(stored *array.Int64, which int, lin *Lineage, next, n int64) arrow.Array {
	if stored != nil && stored.NullN() == 0 {
		stored.Retain()
		return stored
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.Reserve(int(n))
	for i := range n {
		switch {
		case stored != nil && stored.IsValid(int(i)):
			b.UnsafeAppend(stored.Value(int(i)))
		case which == 0:
			b.UnsafeAppend(lin.FirstRowID + next + i)
		default:
			b.UnsafeAppend(lin.DataSeq)
		}
	}
	return b.NewArray()
}

// decodePanic is a panic of arrow-go's decoder, recovered.
type decodePanic struct{ value any }

func (p *decodePanic) Error() string { return fmt.Sprintf("the Parquet decoder failed: %v", p.value) }

// fieldReaders makes a column reader for each of leaves (in order) over
// the row groups groups and the schema of their output, with a decoder
// panic returned as *decodePanic.
func fieldReaders(ctx context.Context, fr *pqarrow.FileReader, leaves, groups []int) (_ []*pqarrow.ColumnReader, _ *arrow.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &decodePanic{value: p}
		}
	}()
	readers, sc, err := fr.GetFieldReaders(ctx, leaves, groups)
	if err != nil {
		return nil, nil, err
	}
	return readers, sc, nil
}

// readColumns reads the next batch of up to n values of every column, the
// columns in parallel: one array per column, or nil at the end of the
// file (no column has a value left). A decoder panic is returned as a
// *decodePanic; the first error (in column order) is returned and every
// array read released.
func readColumns(readers []*pqarrow.ColumnReader, n int64) ([]arrow.Array, error) {
	cols := make([]arrow.Array, len(readers))
	errs := make([]error, len(readers))
	one := func(i int) {
		defer func() {
			if p := recover(); p != nil {
				errs[i] = &decodePanic{value: p}
			}
		}()
		data, err := readers[i].NextBatch(n)
		if err != nil {
			errs[i] = err
			return
		}
		defer data.Release()
		switch len(data.Chunks()) {
		case 0:
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, data.DataType(), 0)
		case 1:
			a := data.Chunk(0)
			a.Retain()
			cols[i] = a
		default:
			cols[i], errs[i] = array.Concatenate(data.Chunks(), memory.DefaultAllocator)
		}
	}
	if len(readers) == 1 {
		one(0)
	} else {
		var wg sync.WaitGroup
		for i := range readers {
			wg.Go(func() { one(i) })
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			releaseArrays(cols)
			return nil, err
		}
	}
	empty := true
	for _, c := range cols {
		empty = empty && c.Len() == 0
	}
	if empty {
		releaseArrays(cols)
		return nil, nil
	}
	return cols, nil
}

func releaseArrays(cols []arrow.Array) {
	for _, c := range cols {
		if c != nil {
			c.Release()
		}
	}
}
