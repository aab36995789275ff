package scan

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/rows"
)

// Live streams the rows of data file df that the delete files d leave
// live, projected onto cols (nil = all columns), each batch with the file
// positions of its rows. It returns the Arrow schema of the batches.
func (r *Reader) Live(ctx context.Context, df iceberg.DataFile, d Deletes, cols []string) (*arrow.Schema, iter.Seq2[Batch, error], error) {
	return r.live(ctx, df, d, cols, nil, nil)
}

// LiveWhere is Live, except that it may leave out rows for which filter
// (unbound, by column name) cannot hold: the row groups of df whose
// column statistics rule it out are not read (see direct). The rows it
// gives are a subset of Live's with the same positions, and hold every
// live row for which filter holds. A filter that does not bind to the
// table's schema leaves nothing out.
func (r *Reader) LiveWhere(ctx context.Context, df iceberg.DataFile, d Deletes, cols []string, filter iceberg.BooleanExpression) (*arrow.Schema, iter.Seq2[Batch, error], error) {
	var where iceberg.BooleanExpression
	if filter != nil {
		if b, err := iceberg.BindExpr(r.schema, filter, true); err == nil {
			where = b
		}
	}
	return r.live(ctx, df, d, cols, nil, where)
}

func (r *Reader) live(ctx context.Context, df iceberg.DataFile, d Deletes, cols []string, lin *Lineage, where iceberg.BooleanExpression) (*arrow.Schema, iter.Seq2[Batch, error], error) {
	ds, err := r.LoadDeletes(ctx, df, d)
	if err != nil {
		return nil, nil, err
	}
	fr, err := r.open(ctx, df, cols, lin, where, ds)
	if err != nil {
		return nil, nil, err
	}
	seq := func(yield func(Batch, error) bool) {
		var buf []byte
		for b, err := range fr.Rows {
			if err != nil {
				yield(Batch{}, err)
				return
			}
			out, err := keepLive(ctx, fr, b, ds, &buf)
			b.Release()
			if err != nil {
				yield(Batch{}, err)
				return
			}
			if out.Rec.NumRows() == 0 {
				out.Release()
				continue
			}
			if !yield(out, nil) {
				return
			}
		}
	}
	return fr.OutSchema(), seq, nil
}

func keepLive(ctx context.Context, fr *FileRows, b Batch, ds *DeleteSet, buf *[]byte) (Batch, error) {
	trimmed := fr.Trim(b.Rec)
	if ds.Empty() {
		return Batch{Rec: trimmed, Pos: b.Pos}, nil
	}
	defer trimmed.Release()
	n := len(b.Pos)
	if len(ds.eq) == 0 && n > 0 && b.Pos[n-1]-b.Pos[0] == int64(n-1) {
		return keepRange(ctx, trimmed, b.Pos, ds)
	}
	keep := make([]bool, n)
	for i := 0; i < n; i++ {
		var del bool
		del, *buf = ds.Deleted(b.Rec, fr.ColOf, i, b.Pos[i], *buf)
		keep[i] = !del
	}
	pos := make([]int64, 0, n)
	for i, k := range keep {
		if k {
			pos = append(pos, b.Pos[i])
		}
	}
	rec, err := rows.Select(ctx, trimmed, keep)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Rec: rec, Pos: pos}, nil
}

// keepRange filters a batch of consecutive positions with position
// deletes only.
//
// NB: a batch of Open holds consecutive positions, so it is enough to walk
// the deleted positions that fall in its range (about 1% of rows
// typically) instead of asking the bitmap about every row, and to build
// the filter's mask as bits directly.
func keepRange(ctx context.Context, rec arrow.RecordBatch, positions []int64, ds *DeleteSet) (Batch, error) {
	n := len(positions)
	first := uint64(positions[0])
	it := ds.Positions.Iterator()
	it.AdvanceIfNeeded(first)
	var mask []byte
	pos := positions
	for it.HasNext() {
		p := it.PeekNext() - first
		if p >= uint64(n) {
			break
		}
		if mask == nil {
			mask = make([]byte, bitutil.BytesForBits(int64(n)))
			for i := range mask {
				mask[i] = 0xff
			}
			pos = make([]int64, 0, n)
		}
		bitutil.ClearBit(mask, int(p))
		it.Next()
	}
	if mask == nil {
		rec.Retain()
		return Batch{Rec: rec, Pos: positions}, nil
	}
	for i, p := range positions {
		if bitutil.BitIsSet(mask, i) {
			pos = append(pos, p)
		}
	}
	keep := array.NewBoolean(n, memory.NewBufferBytes(mask), nil, 0)
	defer keep.Release()
	out, err := compute.FilterRecordBatch(ctx, rec, keep, compute.DefaultFilterOptions())
	if err != nil {
		return Batch{}, fmt.Errorf("select live rows: %w", err)
	}
	return Batch{Rec: out, Pos: pos}, nil
}
