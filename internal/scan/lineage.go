package scan

import (
	"context"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Lineage holds the row-lineage constants of a data file of a v3 table:
// the first_row_id of its manifest entry (after inheritance) and the data
// sequence number of that entry. A row whose _row_id the file does not
// store (or stores as NULL) has the id FirstRowID + its position; a row
// whose _last_updated_sequence_number is NULL was last updated at DataSeq.
type Lineage struct {
	FirstRowID int64
	DataSeq    int64
}

// LineageOf returns the lineage of a data file whose entry has data
// sequence number dataSeq (nil: unknown), or false when the table is not
// v3 or the file has no first_row_id.
func LineageOf(meta table.Metadata, df iceberg.DataFile, dataSeq *int64) (Lineage, bool) {
	if meta.Version() < 3 || dataSeq == nil || df.ContentType() != iceberg.EntryContentData {
		return Lineage{}, false
	}
	first := df.FirstRowID()
	if first == nil {
		return Lineage{}, false
	}
	return Lineage{FirstRowID: *first, DataSeq: *dataSeq}, true
}

// Lineage returns the row lineage of the task's file (see LineageOf).
func (t Task) Lineage(meta table.Metadata) (Lineage, bool) {
	return LineageOf(meta, t.File, t.DataSeq)
}

// LiveLineage is Live with two more columns after cols: _row_id and
// _last_updated_sequence_number (int64; never NULL, as the spec's
// inheritance fills them from lin). cols may be empty (only the lineage
// columns) or nil (every column).
func (r *Reader) LiveLineage(ctx context.Context, df iceberg.DataFile, lin Lineage, d Deletes, cols []string) (*arrow.Schema, iter.Seq2[Batch, error], error) {
	return r.live(ctx, df, d, cols, &lin, nil)
}
