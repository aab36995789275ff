package write

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// assignFirstRowIDs gives v3 data files added by a copy-on-write commit
// explicit first_row_id values from the table's next row id, in order, as
// iceberg-go's ReplaceFiles requires for v3. The ids fall in the range the
// commit's snapshot reserves for its added rows, so they stay unique.
// Rows a copy-on-write rewrite carries over keep their own _row_id,
// written in the file (see rewriteLineage); the range covers the file's
// other rows, whose ids are inherited.
func assignFirstRowIDs(meta table.Metadata, files []iceberg.DataFile) ([]iceberg.DataFile, error) {
	if meta.Version() < 3 {
		return files, nil
	}
	next := meta.NextRowID()
	out := make([]iceberg.DataFile, len(files))
	for i, df := range files {
		if df.FirstRowID() != nil {
			out[i] = df
			continue
		}
		nf, err := copyDataFile(meta, df)
		if err != nil {
			return nil, err
		}
		out[i] = nf.FirstRowID(next).Build()
		next += df.Count()
	}
	return out, nil
}

// copyDataFile returns a builder holding every field of a data file.
func copyDataFile(meta table.Metadata, df iceberg.DataFile) (*iceberg.DataFileBuilder, error) {
	spec := meta.PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("data file %s has unknown partition spec %d", df.FilePath(), df.SpecID())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, df.ContentType(), df.FilePath(), df.FileFormat(),
		df.Partition(), nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).
		ValueCounts(df.ValueCounts()).
		NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(df.NaNValueCounts()).
		LowerBoundValues(df.LowerBoundValues()).
		UpperBoundValues(df.UpperBoundValues()).
		SplitOffsets(df.SplitOffsets())
	if so := df.SortOrderID(); so != nil {
		b.SortOrderID(*so)
	}
	if km := df.KeyMetadata(); km != nil {
		b.KeyMetadata(km)
	}
	return b, nil
}

// Row lineage of copy-on-write rewrites (v3). A rewritten file's rows that
// stay are written with the _row_id and _last_updated_sequence_number they
// had (read as the spec's inheritance gives them), so that they keep their
// identity and the next changelog can tell them from changed rows without
// comparing their values; the rows a rewrite adds in their place (updated
// or inserted rows) get NULL in both, so that they take a fresh id from
// the new file's first_row_id and the sequence number of the commit, as
// Iceberg's readers inherit them. An update therefore reads as a delete of
// the old row and an insert of a new one, which is what floe's changelog
// reports for it anyway (update images come from identifier columns).

// lineageWrite is how a copy-on-write rewrite of one file writes lineage.
type lineageWrite struct {
	lin        scan.Lineage
	fileSchema *iceberg.Schema // the table schema with the lineage columns
	arrow      *arrow.Schema   // its Arrow schema, with field ids
}

// rewriteLineage returns the lineage write of a copy-on-write rewrite of
// task t, or nil when t has no row lineage (tables before v3, files whose
// first_row_id is unknown): then the rewrite writes no lineage columns and
// its rows get new ids.
func rewriteLineage(tbl *table.Table, t scan.Task) (*lineageWrite, error) {
	lin, ok := t.Lineage(tbl.Metadata())
	if !ok {
		return nil, nil
	}
	fs := iceberg.SchemaWithRowLineage(tbl.Schema())
	as, err := table.SchemaToArrowSchemaWithOptions(fs, table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: tbl.Metadata().Properties()})
	if err != nil {
		return nil, fmt.Errorf("arrow schema for row lineage: %w", err)
	}
	return &lineageWrite{lin: lin, fileSchema: fs, arrow: as}, nil
}

// splitLineage returns the data columns of a batch read with
// scan.Reader.LiveLineage (the record without its last two columns). The
// caller releases it.
func splitLineage(rec arrow.RecordBatch, data *arrow.Schema) arrow.RecordBatch {
	cols := make([]int, data.NumFields())
	for i := range cols {
		cols[i] = i
	}
	return rows.Project(rec, data, cols)
}

// kept gives rows that stay, data and lineage columns, the write schema.
func (lw *lineageWrite) kept(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != lw.arrow.NumFields() {
		return nil, fmt.Errorf("row lineage: %d columns read, want %d", rec.NumCols(), lw.arrow.NumFields())
	}
	return array.NewRecordBatch(lw.arrow, rec.Columns(), rec.NumRows()), nil
}

// added gives rows a rewrite adds (data columns only) NULL lineage
// columns. It takes rec.
func (lw *lineageWrite) added(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := int(rec.NumRows())
	if int(rec.NumCols())+2 != lw.arrow.NumFields() {
		return nil, fmt.Errorf("row lineage: %d columns added, want %d", rec.NumCols(), lw.arrow.NumFields()-2)
	}
	nulls := array.MakeArrayOfNull(memory.DefaultAllocator, arrow.PrimitiveTypes.Int64, n)
	defer nulls.Release()
	cols := append(append([]arrow.Array{}, rec.Columns()...), nulls, nulls)
	return array.NewRecordBatch(lw.arrow, cols, int64(n)), nil
}

// writeDataLineage writes the rows of a copy-on-write rewrite with their
// lineage columns (see writeData).
func writeDataLineage(ctx context.Context, tbl *table.Table, lw *lineageWrite, stream iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, error) {
	return writeDataWith(ctx, tbl, lw.arrow, stream, table.WithPreserveRowLineage(lw.fileSchema))
}
