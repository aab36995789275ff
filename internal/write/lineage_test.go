package write_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// lineageRow is a live row's lineage: its _row_id and
// _last_updated_sequence_number.
type lineageRow struct {
	rowID, seq int64
	data       string
}

// lineage reads the live rows of the table's current snapshot with their
// row lineage, by id.
func (e *env) lineage(tbl *table.Table) map[int64]lineageRow {
	e.t.Helper()
	tasks, err := scan.Plan(e.ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := scan.NewReader(e.ctx, tbl, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]lineageRow{}
	for _, t := range tasks {
		lin, ok := t.Lineage(tbl.Metadata())
		if !ok {
			e.t.Fatalf("data file %s has no row lineage (first_row_id %v, data seq %v)", t.File.FilePath(), t.File.FirstRowID(), t.DataSeq)
		}
		_, seq, err := r.LiveLineage(e.ctx, t.File, lin, t.Deletes, []string{"id", "data"})
		if err != nil {
			e.t.Fatal(err)
		}
		for b, err := range seq {
			if err != nil {
				e.t.Fatal(err)
			}
			ids := b.Rec.Column(0).(*array.Int64)
			data := b.Rec.Column(1).(*array.String)
			rid := b.Rec.Column(2).(*array.Int64)
			lus := b.Rec.Column(3).(*array.Int64)
			for i := range ids.Len() {
				if rid.IsNull(i) || lus.IsNull(i) {
					e.t.Fatalf("row %d: NULL lineage after inheritance", ids.Value(i))
				}
				if _, dup := out[ids.Value(i)]; dup {
					e.t.Fatalf("id %d twice", ids.Value(i))
				}
				out[ids.Value(i)] = lineageRow{rid.Value(i), lus.Value(i), data.Value(i)}
			}
			b.Release()
		}
	}
	return out
}

// TestCopyOnWriteKeepsRowLineage checks that a copy-on-write rewrite of a
// v3 table carries over the _row_id and _last_updated_sequence_number of
// the rows it keeps, and that the rows it adds (an update) get a fresh id
// and the commit's sequence number, partitioned or not; and that row ids
// stay unique across the table.
func TestCopyOnWriteKeepsRowLineage(t *testing.T) {
	for _, part := range []string{"", "bucket(2, id)"} {
		t.Run(fmt.Sprintf("partitioned=%t", part != ""), func(t *testing.T) {
			e := newEnv(t)
			tbl := e.create("t", "id long not null, data string", part, iceberg.Properties{"format-version": "3"})
			as := e.arrowSchema(tbl)
			var data [][]any
			for i := range 20 {
				data = append(data, []any{i, fmt.Sprintf("v%d", i)})
			}
			rec := arrowtest.Record(as, data)
			defer rec.Release()
			tbl = e.apply(tbl, write.Request{Inserts: arrowtest.Seq(rec), Mode: write.CopyOnWrite})
			before := e.lineage(tbl)
			appendSeq := tbl.CurrentSnapshot().SequenceNumber
			// Delete id 3, then update ids 5 and 6 (data = 'z').
			tbl = e.apply(tbl, write.Request{Mode: write.CopyOnWrite, Visitor: &write.Visitor{MatchColumns: []string{"id"}, Match: matchID(func(v int64) bool { return v == 3 })}})
			nextBefore := tbl.Metadata().NextRowID()
			tbl = e.apply(tbl, write.Request{Mode: write.CopyOnWrite, Visitor: &write.Visitor{
				MatchColumns: []string{"id"},
				Match:        matchID(func(v int64) bool { return v == 5 || v == 6 }),
				Rewrite: func(_ context.Context, _ iceberg.DataFile, b scan.Batch, touched []bool) ([]bool, arrow.RecordBatch, error) {
					keep := make([]bool, len(touched))
					var add [][]any
					ids := b.Rec.Column(0).(*array.Int64)
					for i, tch := range touched {
						keep[i] = !tch
						if tch {
							add = append(add, []any{ids.Value(i), "z"})
						}
					}
					return keep, arrowtest.Record(b.Rec.Schema(), add), nil
				},
			}})
			updateSeq := tbl.CurrentSnapshot().SequenceNumber
			after := e.lineage(tbl)
			if len(after) != 19 {
				t.Fatalf("%d live rows, want 19", len(after))
			}
			seen := map[int64]int64{}
			for id, l := range after {
				if other, dup := seen[l.rowID]; dup {
					t.Errorf("_row_id %d is the id of rows %d and %d", l.rowID, other, id)
				}
				seen[l.rowID] = id
				switch {
				case id == 5 || id == 6:
					if l.data != "z" || l.seq != updateSeq || l.rowID < nextBefore {
						t.Errorf("updated row %d: %+v; want data z, sequence number %d and a new _row_id >= %d", id, l, updateSeq, nextBefore)
					}
				default:
					want := before[id]
					if l != want || l.seq != appendSeq {
						t.Errorf("row %d kept by two rewrites: lineage %+v, want %+v (sequence number %d)", id, l, want, appendSeq)
					}
				}
			}
		})
	}
}
