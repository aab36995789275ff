package scan

import (
	"context"
	"iter"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: int64(r.batchSize), Parallel: true}, memory.DefaultAllocator)
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
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		pr.Close()
		return nil, false
	}
	// Find each column in the reader's output by its field ID.
	at := make([]int, len(fields))
	got := rr.Schema()
	for k, fd := range fields {
		at[k] = -1
		for c := range got.NumFields() {
			md := got.Field(c).Metadata
			if i := md.FindKey("PARQUET:field_id"); i >= 0 && md.Values()[i] == strconv.Itoa(fd.ID) {
				at[k] = c
			}
		}
		if at[k] < 0 || !arrow.TypeEqual(got.Field(at[k]).Type, want.Field(k).Type) {
			rr.Release()
			pr.Close()
			return nil, false
		}
	}
	directReads.Add(1)
	return func(yield func(Batch, error) bool) {
		defer pr.Close()
		defer rr.Release()
		var next int64
		for rr.Next() {
			if err := ctx.Err(); err != nil {
				yield(Batch{}, err)
				return
			}
			rec := rr.RecordBatch()
			cols := make([]arrow.Array, len(at))
			for k, c := range at {
				cols[k] = rec.Column(c)
			}
			out := array.NewRecordBatch(want, cols, rec.NumRows())
			pos := positions(next, rec.NumRows())
			next += rec.NumRows()
			if !yield(Batch{Rec: out, Pos: pos}, nil) {
				return
			}
		}
		if err := rr.Err(); err != nil {
			yield(Batch{}, r.readError(df, err))
		}
	}, true
}
