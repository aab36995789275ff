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
// ID, with the Arrow type of the table's schema (no promotion, no column
// missing from the file, no name mapping) and no NULLs where the schema
// has none. It reports false, having read nothing, for any other file,
// which iceberg-go's reader then reads.
//
// Why: iceberg-go v0.7.0 opens Parquet files with default reader
// properties and gives no way to change them, so each column reader
// loads its whole column chunk into memory for as long as it reads the
// row group (a 1M-row file: tens of MiB per file read). Here each column
// reads through a buffer of directBufferSize.
func (r *Reader) direct(ctx context.Context, df iceberg.DataFile, names []string) (iter.Seq2[Batch, error], bool) {
	if !useDirect || len(names) == 0 || df.FileFormat() != iceberg.ParquetFile || df.ContentType() != iceberg.EntryContentData {
		return nil, false
	}
	sc, err := r.project(names)
	if err != nil {
		return nil, false
	}
	want, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return nil, false
	}
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
	for j := range root.NumFields() {
		id := int(root.Field(j).FieldID())
		if _, dup := byID[id]; dup {
			byID[id] = -1
			continue
		}
		byID[id] = j
	}
	fields := sc.Fields()
	var leaves []int
	for k, fd := range fields {
		j, ok := byID[fd.ID]
		if !ok || j < 0 || j >= len(fr.Manifest.Fields) {
			pr.Close()
			return nil, false
		}
		mf := fr.Manifest.Fields[j]
		wf := want.Field(k)
		if !mf.IsLeaf() || len(mf.Children) > 0 || !arrow.TypeEqual(mf.Field.Type, wf.Type) || (mf.Field.Nullable && !wf.Nullable) {
			pr.Close()
			return nil, false
		}
		leaves = append(leaves, mf.ColIndex)
	}
	readers, got, err := fieldReaders(ctx, fr, leaves)
	if err != nil {
		pr.Close()
		return nil, false
	}
	release := func() {
		for _, c := range readers {
			c.Release()
		}
	}
	// Find each column in the reader's output by its field ID.
	at := make([]int, len(fields))
	for k, fd := range fields {
		at[k] = -1
		for c := range got.NumFields() {
			md := got.Field(c).Metadata
			if i := md.FindKey("PARQUET:field_id"); i >= 0 && md.Values()[i] == strconv.Itoa(fd.ID) {
				at[k] = c
			}
		}
		if at[k] < 0 || !arrow.TypeEqual(got.Field(at[k]).Type, want.Field(k).Type) {
			release()
			pr.Close()
			return nil, false
		}
	}
	directReads.Add(1)
	var rows int64
	for _, rg := range pr.MetaData().RowGroups {
		rows += rg.NumRows
	}
	batch := min(int64(r.batchSize), max(1, int64(bitutil.NextPowerOf2(int(rows)))))
	damaged := func(problem string) error {
		return &CorruptFileError{Table: r.checked.table, Kind: "data file", Path: df.FilePath(), Problem: problem}
	}
	return func(yield func(Batch, error) bool) {
		defer pr.Close()
		defer release()
		var next int64
		for {
			if err := ctx.Err(); err != nil {
				yield(Batch{}, err)
				return
			}
			cols, err := readColumns(readers, batch)
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
			if cols == nil {
				return
			}
			n := int64(cols[0].Len())
			for _, c := range cols {
				if int64(c.Len()) != n {
					releaseArrays(cols)
					yield(Batch{}, damaged(fmt.Sprintf("its columns hold different numbers of values from row %d on", next)))
					return
				}
			}
			out := make([]arrow.Array, len(at))
			for k, c := range at {
				out[k] = cols[c]
			}
			rec := array.NewRecordBatch(want, out, n)
			releaseArrays(cols)
			pos := positions(next, n)
			next += n
			if !yield(Batch{Rec: rec, Pos: pos}, nil) {
				return
			}
		}
	}, true
}

// decodePanic is a panic of arrow-go's decoder, recovered.
type decodePanic struct{ value any }

func (p *decodePanic) Error() string { return fmt.Sprintf("the Parquet decoder failed: %v", p.value) }

// fieldReaders makes a column reader for each of leaves (in order) and the
// schema of their output, with a decoder panic returned as *decodePanic.
func fieldReaders(ctx context.Context, fr *pqarrow.FileReader, leaves []int) (_ []*pqarrow.ColumnReader, _ *arrow.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &decodePanic{value: p}
		}
	}()
	groups := make([]int, fr.ParquetReader().NumRowGroups()) // nil would be none
	for i := range groups {
		groups[i] = i
	}
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
