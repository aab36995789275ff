package write

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floedata/floe/internal/scan"
)

// Field IDs of the position delete file columns, reserved by the spec.
const (
	filePathFieldID = 2147483546
	posFieldID      = 2147483545
)

var posDeleteSchema = arrow.NewSchema([]arrow.Field{
	{Name: "file_path", Type: arrow.BinaryTypes.String, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{fmt.Sprint(filePathFieldID)})},
	{Name: "pos", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{fmt.Sprint(posFieldID)})},
}, nil)

// posDeleteDictSchema is posDeleteSchema with file_path as a dictionary of
// the one path a file-scoped delete file holds: its Parquet column is the
// same (a dictionary-encoded string), written from the dictionary's
// indices instead of hashing the path once per row. The Arrow schema is not
// stored in the file, so readers see file_path as the string it is.
var posDeleteDictSchema = arrow.NewSchema([]arrow.Field{
	{Name: "file_path", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Metadata: posDeleteSchema.Field(0).Metadata},
	posDeleteSchema.Field(1),
}, nil)

// writePositionDeletes writes a file-scoped v2 position delete file for one
// data file: its sorted positions, with referenced_data_file set so readers
// can skip it for every other file.
func writePositionDeletes(ctx context.Context, tbl *table.Table, fs iceio.WriteFileIO, df iceberg.DataFile, positions []int64) (iceberg.DataFile, error) {
	positions = slices.Clone(positions)
	slices.Sort(positions)
	positions = slices.Compact(positions)
	lp, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	path := lp.NewDataLocation(fmt.Sprintf("delete-%s-pos.parquet", uuid.NewString()))
	w, err := fs.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create position delete file %s: %w", path, err)
	}
	// NB: positions are distinct: a dictionary of them is a hash table
	// insert per row, thrown away once it outgrows its page.
	// The sorted positions compress as well at zstd's fastest level as at
	// its default (a 1 MiB page of them: 148 KB against 156 KB), in three
	// quarters of the time.
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true),
		parquet.WithDictionaryFor("pos", false), parquet.WithCompressionLevelFor("pos", 1))
	pw, err := pqarrow.NewFileWriter(posDeleteDictSchema, w, props, pqarrow.DefaultWriterProps())
	if err != nil {
		w.Close()
		_ = fs.Remove(path)
		return nil, err
	}
	// Written in batches of positions, each with the same one-entry
	// dictionary of the data file's path and all-zero indices.
	const batch = 64 * 1024
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.Append(df.FilePath())
	dict := sb.NewArray()
	sb.Release()
	defer dict.Release()
	zeros := array.NewInt32Data(array.NewData(arrow.PrimitiveTypes.Int32, batch,
		[]*memory.Buffer{nil, memory.NewBufferBytes(make([]byte, 4*batch))}, nil, 0, 0))
	defer zeros.Release()
	ib := array.NewInt64Builder(memory.DefaultAllocator)
	defer ib.Release()
	for lo := 0; lo < len(positions) && err == nil; lo += batch {
		hi := min(lo+batch, len(positions))
		idx := array.NewSlice(zeros, 0, int64(hi-lo))
		pa := array.NewDictionaryArray(posDeleteDictSchema.Field(0).Type, idx, dict)
		idx.Release()
		ib.AppendValues(positions[lo:hi], nil)
		ia := ib.NewArray()
		rec := array.NewRecordBatch(posDeleteDictSchema, []arrow.Array{pa, ia}, int64(hi-lo))
		pa.Release()
		ia.Release()
		err = pw.WriteBuffered(rec)
		rec.Release()
	}
	if err == nil {
		err = pw.Close()
	} else {
		pw.Close()
	}
	if err != nil {
		// Nothing references the file yet: a partial one goes.
		_ = fs.Remove(path)
		return nil, fmt.Errorf("write position delete file %s: %w", path, err)
	}
	size, err := fileSize(fs, path)
	if err != nil {
		_ = fs.Remove(path)
		return nil, err
	}
	spec := tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil, fmt.Errorf("data file %s has unknown partition spec %d", df.FilePath(), df.SpecID())
	}
	b, err := iceberg.NewDataFileBuilder(*spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile,
		df.Partition(), nil, nil, int64(len(positions)), size)
	if err != nil {
		return nil, err
	}
	lo := []byte(df.FilePath())
	b.ReferencedDataFile(df.FilePath()).
		LowerBoundValues(map[int][]byte{filePathFieldID: lo, posFieldID: le64(positions[0])}).
		UpperBoundValues(map[int][]byte{filePathFieldID: lo, posFieldID: le64(positions[len(positions)-1])}).
		ValueCounts(map[int]int64{filePathFieldID: int64(len(positions)), posFieldID: int64(len(positions))}).
		NullValueCounts(map[int]int64{filePathFieldID: 0, posFieldID: 0})
	return b.Build(), nil
}

func le64(v int64) []byte {
	b := make([]byte, 8)
	for i := 0; i < 8; i++ {
		b[i] = byte(uint64(v) >> (8 * i))
	}
	return b
}

func fileSize(fs iceio.IO, path string) (int64, error) {
	f, err := fs.Open(path)
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Size(), nil
}

// WritePositionDeletes writes one file-scoped v2 position delete file
// holding positions of data file df (sorted and deduplicated here), for
// compaction's rewrite of a file's position delete files into one. It
// returns the file's metadata; the caller commits it (or removes it).
func WritePositionDeletes(ctx context.Context, tbl *table.Table, df iceberg.DataFile, positions []int64) (iceberg.DataFile, error) {
	if len(positions) == 0 {
		return nil, fmt.Errorf("position delete file for %s: no positions", df.FilePath())
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("table %s: its file system is read-only", scan.FormatIdent(tbl.Identifier()))
	}
	return writePositionDeletes(ctx, tbl, wfs, df, positions)
}
