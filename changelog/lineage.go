package changelog

import (
	"context"
	"iter"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// useLineage turns the row-lineage path of rewrites on (tests turn it off
// to compare it with the path that compares values).
var useLineage = true

// lineageRewrites counts the rewrites lineageRewrite computed (for tests).
var lineageRewrites atomic.Int64

// lineageRewrite computes the raw changes of a rewrite (a snapshot that
// removes and adds data files) of a v3 table from row lineage instead of
// comparing the rows of the old and new files value by value.
//
// A row of an added file whose _last_updated_sequence_number is older than
// the snapshot and whose _row_id is the id of a live row of a removed file
// is that row, copied unchanged: the spec has a writer that copies a row
// keep both, and one that changes a row give it a NULL (the new) sequence
// number. Such pairs are carry-overs and cancel. Every other row is a
// change: the rows of removed files whose id no copied row has are
// DELETEs, the other rows of added files INSERTs. They go to emit as the
// pairer's unmatched rows would (and on to the same grouping, which
// still cancels identical DELETE/INSERT pairs lineage cannot tell apart,
// as an update that sets a column to its old value).
//
// The first pass reads only the two lineage columns (for files that do not
// store them, iceberg-go derives them from the manifest entry without
// decoding any column); the second decodes whole rows only of the files
// that hold a change, the old and the new files in parallel. A file whose
// rows all carried over, as in a compaction, is never decoded.
//
// It reports false, having emitted nothing, when lineage cannot decide:
// a file without first_row_id, a NULL or negative id, or an id that is not
// unique among the old rows or among the copied new rows (a writer that
// does not keep the spec). The caller then compares values.
func (src *source) lineageRewrite(ctx context.Context, s *table.Snapshot, files *snapshotFiles, parent func() (*scan.State, error),
	beforeDeletes, afterDeletes func(*scan.Entry) scan.Deletes, ordinal int, emit func(arrow.RecordBatch) error) (bool, error) {
	meta := src.c.tbl.Metadata()
	if !useLineage || meta.Version() < 3 {
		return false, nil
	}
	r := src.c.reader
	removedLin := make([]scan.Lineage, len(files.removedData))
	for i, e := range files.removedData {
		lin, ok := scan.LineageOf(meta, e.File, &e.DataSeq)
		if !ok {
			// A removed entry may not repeat the first_row_id the file
			// inherited: take it from the state before the snapshot.
			st, err := parent()
			if err != nil || st == nil {
				return false, err
			}
			pe, found := st.DataFile(e.Path())
			if !found {
				return false, nil
			}
			if lin, ok = scan.LineageOf(meta, pe.File, &pe.DataSeq); !ok {
				return false, nil
			}
		}
		removedLin[i] = lin
	}
	addedLin := make([]scan.Lineage, len(files.addedData))
	for i, e := range files.addedData {
		lin, ok := scan.LineageOf(meta, e.File, &e.DataSeq)
		if !ok {
			return false, nil
		}
		addedLin[i] = lin
	}
	// Pass 1: the ids of the old rows, then which new rows are copies.
	old := newIDSet()
	oldOf := make([]*idSet, len(files.removedData))
	for i, e := range files.removedData {
		oldOf[i] = newIDSet()
		ok, err := forLineage(ctx, r, e, removedLin[i], beforeDeletes(e), func(ids, _, _ []int64) bool {
			for j := 0; j < len(ids); {
				k := runEnd(ids, j)
				a, b := ids[j], ids[k-1]
				if a < 0 || old.countIn(a, b) != 0 {
					return false // not an id, or not unique
				}
				old.addRange(a, b)
				oldOf[i].addRange(a, b)
				j = k
			}
			return true
		})
		if err != nil || !ok {
			return false, lineageErr(ctx, err)
		}
	}
	copied := newIDSet()
	changed := make([]*roaring64.Bitmap, len(files.addedData)) // positions of new rows that are changes
	for i, e := range files.addedData {
		changed[i] = roaring64.New()
		ok, err := forLineage(ctx, r, e, addedLin[i], afterDeletes(e), func(ids, seqs, pos []int64) bool {
			for j := 0; j < len(ids); {
				k := runEnd(ids, j)
				a, b := ids[j], ids[k-1]
				if a < 0 {
					return false
				}
				// Runs of consecutive ids (a copy keeps the old order) are
				// looked up at once when they are wholly old rows.
				whole := old.countIn(a, b) == uint64(k-j)
				for ; j < k; j++ {
					id := ids[j]
					if seqs[j] >= s.SequenceNumber || !(whole || old.contains(id)) {
						changed[i].Add(uint64(pos[j]))
						continue
					}
					if whole && j+1 < k && seqs[j+1] < s.SequenceNumber {
						// Take the rest of the run whose rows are copies.
						m := j + 1
						for m < k && seqs[m] < s.SequenceNumber {
							m++
						}
						if copied.countIn(id, ids[m-1]) != 0 {
							return false // copied twice
						}
						copied.addRange(id, ids[m-1])
						j = m - 1
						continue
					}
					if !copied.checkedAdd(id) {
						return false
					}
				}
			}
			return true
		})
		if err != nil || !ok {
			return false, lineageErr(ctx, err)
		}
	}
	// Pass 2: whole rows of the changes only.
	deletes := func(yield func(arrow.RecordBatch, error) bool) {
		open := func(i int, e *scan.Entry) (iter.Seq2[scan.Batch, error], error) {
			if oldOf[i].andCardinality(copied) == oldOf[i].cardinality() {
				return nil, nil // every row carried over
			}
			_, seq, err := r.LiveLineage(ctx, e.File, removedLin[i], beforeDeletes(e), nil)
			return seq, err
		}
		n := src.c.dataSch.NumFields()
		for b, err := range liveBatches(files.removedData, open) {
			if err != nil {
				yield(nil, err)
				return
			}
			ids := b.Rec.Column(n).(*array.Int64).Int64Values()
			keep := make([]bool, len(ids))
			for j := 0; j < len(ids); {
				k := runEnd(ids, j)
				switch c := copied.countIn(ids[j], ids[k-1]); c {
				case uint64(k - j): // all copied
				case 0:
					for m := j; m < k; m++ {
						keep[m] = true
					}
				default:
					for m := j; m < k; m++ {
						keep[m] = !copied.contains(ids[m])
					}
				}
				j = k
			}
			data := rows.Project(b.Rec, src.c.dataSch, src.c.dataCols)
			b.Release()
			if !yieldSelected(ctx, data, keep, Delete, ordinal, s.SnapshotID, src.c.meta, yield) {
				return
			}
		}
	}
	inserts := func(yield func(arrow.RecordBatch, error) bool) {
		open := func(i int, e *scan.Entry) (iter.Seq2[scan.Batch, error], error) {
			if changed[i].IsEmpty() {
				return nil, nil
			}
			_, seq, err := r.Live(ctx, e.File, afterDeletes(e), nil)
			return seq, err
		}
		for b, err := range liveBatches(files.addedData, open) {
			if err != nil {
				yield(nil, err)
				return
			}
			keep := make([]bool, len(b.Pos))
			for j, p := range b.Pos {
				keep[j] = changed[b.file].Contains(uint64(p))
			}
			if !yieldSelected(ctx, b.Rec, keep, Insert, ordinal, s.SnapshotID, src.c.meta, yield) {
				return
			}
		}
	}
	lineageRewrites.Add(1)
	return true, interleave(prefetch(ctx, deletes), prefetch(ctx, inserts), emit)
}

// lineageErr is the error of a failed lineage read: none (the caller
// compares values instead, and reports what is wrong with the file when
// its read fails too) unless the read was cancelled.
func lineageErr(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// forLineage calls f with the _row_id, _last_updated_sequence_number and
// position of the live rows of e, a batch at a time, reading only those
// columns (none from a file that does not store them). It reports false
// when f does, or when a value is NULL.
func forLineage(ctx context.Context, r *scan.Reader, e *scan.Entry, lin scan.Lineage, d scan.Deletes, f func(ids, seqs, pos []int64) bool) (bool, error) {
	_, seq, err := r.LiveLineage(ctx, e.File, lin, d, []string{})
	if err != nil {
		return false, err
	}
	for b, err := range seq {
		if err != nil {
			return false, err
		}
		ids := b.Rec.Column(0).(*array.Int64)
		seqs := b.Rec.Column(1).(*array.Int64)
		ok := ids.NullN() == 0 && seqs.NullN() == 0 && f(ids.Int64Values(), seqs.Int64Values(), b.Pos)
		b.Release()
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// yieldSelected yields the rows of data that keep selects, as raw changes
// of kind. It takes data and reports whether to go on.
func yieldSelected(ctx context.Context, data arrow.RecordBatch, keep []bool, kind string, ordinal int, snapshotID int64, meta *metaColumns,
	yield func(arrow.RecordBatch, error) bool) bool {
	sel, err := rows.Select(ctx, data, keep)
	data.Release()
	if err != nil {
		yield(nil, err)
		return false
	}
	if sel.NumRows() == 0 {
		sel.Release()
		return true
	}
	out, err := meta.withMeta(sel, kind, ordinal, snapshotID)
	sel.Release()
	if err != nil {
		yield(nil, err)
		return false
	}
	return yield(out, nil)
}

// interleave hands the batches of a and b to emit alternately, then the
// rest of the longer one: a fixed order, whatever the speed of either.
func interleave(a, b iter.Seq2[arrow.RecordBatch, error], emit func(arrow.RecordBatch) error) error {
	var next [2]func() (arrow.RecordBatch, error, bool)
	var stop [2]func()
	next[0], stop[0] = iter.Pull2(a)
	defer stop[0]()
	next[1], stop[1] = iter.Pull2(b)
	defer stop[1]()
	done := [2]bool{}
	for s := 0; !done[0] || !done[1]; s = 1 - s {
		if done[s] {
			continue
		}
		rec, err, ok := next[s]()
		if !ok {
			done[s] = true
			continue
		}
		if err != nil {
			return err
		}
		if err := emit(rec); err != nil {
			return err
		}
	}
	return nil
}

// runEnd returns the end of the run of consecutive ids that starts at j:
// the first k > j with ids[k] != ids[k-1]+1, or len(ids).
func runEnd(ids []int64, j int) int {
	k := j + 1
	for k < len(ids) && ids[k] == ids[k-1]+1 {
		k++
	}
	return k
}
