package write

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floedata/floe/internal/scan"
)

// EqualityDeletes describes equality delete files of one partition: the
// spec and partition tuple they are filed under (those of the data files
// whose rows they delete) and their columns.
type EqualityDeletes struct {
	// SpecID and Partition are the partition the delete rows apply to, as
	// a data file's manifest entry holds them (partition field id ->
	// value).
	SpecID    int
	Partition map[int]any
	// FieldIDs are the equality field ids; Schema holds exactly those
	// fields, and Arrow is its Arrow schema with field ids (the columns of
	// the batches given to WriteEqualityDeletes, in that order).
	FieldIDs []int
	Schema   *iceberg.Schema
	Arrow    *arrow.Schema
}

// WriteEqualityDeletes writes recs (columns d.Arrow) as one equality
// delete Parquet file filed under d's spec and partition, and returns its
// manifest entry, with column statistics. Unlike iceberg-go's writer it
// does not derive the partition from the rows: the caller knows it (the
// partition of the data files holding the keys), so the rows need only
// the key columns, and the partition may be of a spec other than the
// table's current one. Nothing references the file until the caller
// commits it; on error nothing is left behind.
func WriteEqualityDeletes(ctx context.Context, tbl *table.Table, d EqualityDeletes, recs []arrow.RecordBatch) (iceberg.DataFile, error) {
	name := scan.FormatIdent(tbl.Identifier())
	meta := tbl.Metadata()
	if meta.Version() < 2 {
		return nil, fmt.Errorf("equality deletes need format v2 or later; table %s is v%d", name, meta.Version())
	}
	spec := meta.PartitionSpecByID(d.SpecID)
	if spec == nil {
		return nil, fmt.Errorf("equality deletes of table %s: unknown partition spec %d", name, d.SpecID)
	}
	if len(d.FieldIDs) == 0 || d.Schema == nil || d.Arrow == nil {
		return nil, fmt.Errorf("equality deletes of table %s: no key columns", name)
	}
	var n int64
	for _, rec := range recs {
		if int(rec.NumCols()) != d.Arrow.NumFields() {
			return nil, fmt.Errorf("equality deletes of table %s: rows have %d columns, want %d (%s)", name, rec.NumCols(), d.Arrow.NumFields(), d.Arrow)
		}
		for i, f := range d.Arrow.Fields() {
			if t := rec.Column(i).DataType(); !arrow.TypeEqual(t, f.Type) {
				return nil, fmt.Errorf("equality deletes of table %s: key column %s is %s, want %s", name, f.Name, t, f.Type)
			}
		}
		n += rec.NumRows()
	}
	if n == 0 {
		return nil, fmt.Errorf("equality deletes of table %s: no rows", name)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	fs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("table %s: its file system is read-only", name)
	}
	lp, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	path := lp.NewDataLocation(fmt.Sprintf("delete-%s-eq.parquet", uuid.NewString()))
	w, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create equality delete file %s: %w", path, err)
	}
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true)}
	if len(d.FieldIDs) == 1 {
		// NB: one key column holds distinct values (a key per row): a
		// dictionary of them is a hash table insert per row, thrown away
		// once it outgrows its page.
		opts = append(opts, parquet.WithDictionaryDefault(false))
	}
	pw, err := pqarrow.NewFileWriter(d.Arrow, w, parquet.NewWriterProperties(opts...), pqarrow.DefaultWriterProps())
	if err != nil {
		w.Close()
		_ = fs.Remove(path)
		return nil, err
	}
	for _, rec := range recs {
		if err = ctx.Err(); err != nil {
			break
		}
		if err = pw.WriteBuffered(rec); err != nil {
			break
		}
	}
	if err == nil {
		err = pw.Close()
	} else {
		pw.Close()
	}
	if err != nil {
		_ = fs.Remove(path)
		return nil, fmt.Errorf("write equality delete file %s: %w", path, err)
	}
	df, err := equalityDeleteFile(tbl, *spec, d, pw, path, fs)
	if err != nil {
		_ = fs.Remove(path)
		return nil, fmt.Errorf("equality delete file %s: %w", path, err)
	}
	if df.Count() != n {
		_ = fs.Remove(path)
		return nil, fmt.Errorf("write equality delete file %s: %w: %d rows given, %d written", path, ErrIncompleteWrite, n, df.Count())
	}
	return df, nil
}

// equalityDeleteFile builds the manifest entry of a written equality
// delete file: column statistics from its footer, the given partition.
func equalityDeleteFile(tbl *table.Table, spec iceberg.PartitionSpec, d EqualityDeletes, pw *pqarrow.FileWriter, path string, fs iceio.IO) (iceberg.DataFile, error) {
	fm, err := pw.FileMetadata()
	if err != nil {
		return nil, err
	}
	size, err := fileSize(fs, path)
	if err != nil {
		return nil, err
	}
	// The statistics, as iceberg-go computes them for the files it
	// writes, filed unpartitioned: its partition inference would look for
	// the partition source columns, which the file does not hold.
	stats, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema:           d.Schema,
		Spec:             *iceberg.UnpartitionedSpec,
		Format:           iceberg.ParquetFile,
		Metadata:         fm,
		FilePath:         path,
		FileSize:         size,
		Content:          iceberg.EntryContentEqDeletes,
		Properties:       tbl.Properties(),
		EqualityFieldIDs: d.FieldIDs,
		FormatVersion:    tbl.Metadata().Version(),
	})
	if err != nil {
		return nil, err
	}
	part := d.Partition
	if part == nil {
		part = map[int]any{}
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentEqDeletes, path, iceberg.ParquetFile,
		part, nil, nil, stats.Count(), size)
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(stats.ColumnSizes()).
		ValueCounts(stats.ValueCounts()).
		NullValueCounts(stats.NullValueCounts()).
		NaNValueCounts(stats.NaNValueCounts()).
		LowerBoundValues(stats.LowerBoundValues()).
		UpperBoundValues(stats.UpperBoundValues()).
		SplitOffsets(stats.SplitOffsets()).
		EqualityFieldIDs(d.FieldIDs)
	return b.Build(), nil
}
