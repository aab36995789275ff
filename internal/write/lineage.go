package write

import (
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// assignFirstRowIDs gives v3 data files added by a copy-on-write commit
// explicit first_row_id values from the table's next row id, in order, as
// iceberg-go's ReplaceFiles requires for v3. The ids fall in the range the
// commit's snapshot reserves for its added rows, so they stay unique.
//
// NB: rows carried over from a rewritten file get new row ids; Iceberg's
// Java writer carries their _row_id over instead. Row lineage across floe's
// copy-on-write rewrites is therefore not preserved.
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
