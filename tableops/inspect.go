package tableops

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
)

// Metadata tables, as Spark's (SELECT * FROM t.files) and PyIceberg's
// (table.inspect.files()) list them, read with iceberg-go's inspect API.
const (
	MetaFiles      = "files"      // live data and delete files of the current snapshot
	MetaManifests  = "manifests"  // manifests of the current snapshot
	MetaHistory    = "history"    // every snapshot that was current, and when
	MetaPartitions = "partitions" // per partition: rows, files, sizes, deletes
)

// MetaTables lists the metadata tables Inspect reads.
var MetaTables = []string{MetaFiles, MetaManifests, MetaHistory, MetaPartitions}

// metaDetail are the columns left out unless every column is asked for:
// per-column statistics maps that make a listing unreadable.
var metaDetail = []string{"column_sizes", "value_counts", "null_value_counts", "nan_value_counts",
	"lower_bounds", "upper_bounds", "key_metadata", "split_offsets", "readable_metrics", "partition_summaries"}

// Inspect returns the rows of one of the table's metadata tables: the
// columns named (in that order), else every column but, without all, the
// per-column statistics.
func Inspect(ctx context.Context, tbl *table.Table, what string, all bool, columns ...string) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	in := tbl.Inspect()
	var (
		rr  array.RecordReader
		err error
	)
	switch what {
	case MetaFiles:
		rr, err = in.Files(ctx)
	case MetaManifests:
		rr, err = in.Manifests(ctx)
	case MetaHistory:
		rr, err = in.History(ctx)
	case MetaPartitions:
		rr, err = in.Partitions(ctx)
	default:
		return nil, nil, fmt.Errorf("no metadata table %q (want one of %v)", what, MetaTables)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s of %s: %w", what, catalog.FormatName(tbl.Identifier()), err)
	}
	schema := rr.Schema()
	var keep []int
	var fields []arrow.Field
	if len(columns) > 0 {
		for _, c := range columns {
			idx := schema.FieldIndices(c)
			if len(idx) == 0 {
				rr.Release()
				var names []string
				for _, f := range schema.Fields() {
					names = append(names, f.Name)
				}
				return nil, nil, fmt.Errorf("%s of %s has no column %q (columns: %s)", what, catalog.FormatName(tbl.Identifier()), c, strings.Join(names, ", "))
			}
			keep = append(keep, idx[0])
			fields = append(fields, schema.Field(idx[0]))
		}
	} else {
		for i, f := range schema.Fields() {
			if all || !slices.Contains(metaDetail, f.Name) {
				keep = append(keep, i)
				fields = append(fields, f)
			}
		}
	}
	out := arrow.NewSchema(fields, nil)
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		defer rr.Release()
		for rr.Next() {
			rec := rr.RecordBatch()
			cols := make([]arrow.Array, len(keep))
			for j, i := range keep {
				cols[j] = rec.Column(i)
			}
			if !yield(array.NewRecordBatch(out, cols, rec.NumRows()), nil) {
				return
			}
		}
		if err := rr.Err(); err != nil {
			yield(nil, err)
		}
	}
	return out, seq, nil
}
