package merge

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/rows"
)

// sourceRows are the rows of a MERGE source, numbered from 0 in the order
// read: in memory when they fit a quarter of the memory budget, else all
// of them in runs on disk, each run within a quarter of the budget, read
// back one at a time (a run is joined with its index, about half its
// size again, and its batch is built from the rows held before it is
// written, so each phase holds about half the budget).
type sourceRows struct {
	schema *arrow.Schema
	mem    arrow.RecordBatch // every row, when nothing spilled
	runs   []*sourceRun
	n      int64
}

// sourceRun is a run of source rows on disk: ids base..base+n-1, one
// batch.
type sourceRun struct {
	file    *rows.SpillFile
	base, n int64
}

func (s *sourceRows) spilled() bool { return len(s.runs) > 0 }

func (s *sourceRows) spilledBytes() int64 {
	var n int64
	for _, r := range s.runs {
		n += r.file.Bytes()
	}
	return n
}

func (s *sourceRows) release() {
	if s.mem != nil {
		s.mem.Release()
		s.mem = nil
	}
	for _, r := range s.runs {
		r.file.Remove()
	}
	s.runs = nil
}

// readSource reads every source row, checking the batches' schemas;
// past a quarter of the budget the rows go to runs on disk under dir. Each
// batch is also handed to seen (the source statistics of the first plan).
func readSource(source Source, budget int64, dir string, seen func(arrow.RecordBatch)) (*sourceRows, error) {
	s := &sourceRows{schema: source.Schema}
	runBytes := max(budget/4, 1)
	var held []arrow.RecordBatch
	var heldBytes int64
	defer func() { releaseAll(held) }()
	flush := func() error {
		rec, err := rows.Concat(source.Schema, held)
		releaseAll(held)
		held, heldBytes = nil, 0
		if err != nil {
			return err
		}
		defer rec.Release()
		f, err := rows.CreateSpillFile(dir, source.Schema)
		if err != nil {
			return err
		}
		run := &sourceRun{file: f, base: s.n - rec.NumRows(), n: rec.NumRows()}
		s.runs = append(s.runs, run)
		if err := f.Write(rec); err != nil {
			return err
		}
		return f.Finish()
	}
	for rec, err := range source.Rows {
		if err != nil {
			s.release()
			return nil, err
		}
		if !rec.Schema().Equal(source.Schema) {
			same := rec.Schema().NumFields() == source.Schema.NumFields()
			for i := 0; same && i < source.Schema.NumFields(); i++ {
				same = arrow.TypeEqual(rec.Schema().Field(i).Type, source.Schema.Field(i).Type)
			}
			if !same {
				rec.Release()
				s.release()
				return nil, fmt.Errorf("a batch has schema %s, the source's is %s", rec.Schema(), source.Schema)
			}
			r := array.NewRecordBatch(source.Schema, rec.Columns(), rec.NumRows())
			rec.Release()
			rec = r
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if seen != nil {
			seen(rec)
		}
		// A batch larger than a run is cut into slices that fit.
		size := rows.RecordSize(rec)
		parts := max(1, min(rec.NumRows(), 2*size/runBytes))
		step := (rec.NumRows() + parts - 1) / parts
		for lo := int64(0); lo < rec.NumRows(); lo += step {
			part := rec
			if parts > 1 {
				part = rec.NewSlice(lo, min(lo+step, rec.NumRows()))
			} else {
				rec.Retain()
			}
			held = append(held, part)
			heldBytes += size / parts
			s.n += part.NumRows()
			if heldBytes > runBytes {
				if err := flush(); err != nil {
					rec.Release()
					s.release()
					return nil, err
				}
			}
		}
		rec.Release()
	}
	if s.spilled() && len(held) > 0 {
		if err := flush(); err != nil {
			s.release()
			return nil, err
		}
	}
	if s.n >= 1<<31 {
		s.release()
		return nil, fmt.Errorf("the source has %d rows; MERGE takes at most %d", s.n, 1<<31-1)
	}
	if !s.spilled() {
		if len(held) == 0 {
			s.mem = emptyRecord(source.Schema)
			return s, nil
		}
		rec, err := rows.Concat(source.Schema, held)
		if err != nil {
			s.release()
			return nil, err
		}
		s.mem = rec
	}
	return s, nil
}

// load returns the rows of a run; the caller releases them.
func (r *sourceRun) load() (arrow.RecordBatch, error) {
	recs, err := r.file.ReadAll()
	if err != nil {
		return nil, err
	}
	defer releaseAll(recs)
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	return rows.Concat(recs[0].Schema(), recs)
}

// sourceGroup is a group of source rows: rows ids base.. onwards.
type sourceGroup struct {
	rec  arrow.RecordBatch
	base int64
}

// groups yields the source rows a group at a time: the rows in memory, or
// each run. The caller releases each record.
func (s *sourceRows) groups(ctx context.Context) iter.Seq2[sourceGroup, error] {
	return func(yield func(sourceGroup, error) bool) {
		if s.mem != nil {
			s.mem.Retain()
			yield(sourceGroup{rec: s.mem}, nil)
			return
		}
		for _, r := range s.runs {
			if ctx.Err() != nil {
				yield(sourceGroup{}, ctx.Err())
				return
			}
			rec, err := r.load()
			if !yield(sourceGroup{rec: rec, base: r.base}, err) || err != nil {
				return
			}
		}
	}
}

// joinIndex finds the source rows of a join key: a keyIndex over the
// source rows' key values (converted to the keys' hash types), each key's
// rows chained in ascending order. Rows with a NULL key are left out (a
// NULL never equals anything).
type joinIndex struct {
	idx   *keyIndex
	first []int32 // slot -> its first row
	next  []int32 // row -> the next row of its key, -1 at the end
	n     int     // rows indexed
	// One integer-like key: the least and greatest key, and when the keys
	// are dense enough a bitmap of them (bit x-lo), so that most target
	// rows are turned away by a comparison or a bit test, unhashed.
	ints   bool
	lo, hi int64
	bits   []uint64
}

// buildJoinIndex indexes the rows of src (source schema) by join key.
func buildJoinIndex(ctx context.Context, p *plan, src arrow.RecordBatch) (*joinIndex, error) {
	cols := make([]int, len(p.keys))
	for k, kp := range p.keys {
		cols[k] = kp.sCol
	}
	keys, err := keyArrays(ctx, p, src, cols)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	rec := joinKeyRecord(keys, src.NumRows())
	releaseAll(keys)
	defer rec.Release()
	n := int(src.NumRows())
	x := &joinIndex{idx: newKeyIndex([]arrow.RecordBatch{rec}, seqInts(len(cols)), n), next: make([]int32, n)}
	var tail []int32
	hashes := rows.HashKeys(rec, x.idx.keyPos, nil)
	for i, h := range hashes {
		x.next[i] = -1
		if nullIn(rec, x.idx.keyPos, i) {
			continue
		}
		slot, added := x.idx.insert(h, 0, i)
		if added {
			x.first = append(x.first, int32(i))
			tail = append(tail, int32(i))
		} else {
			x.next[tail[slot]] = int32(i)
			tail[slot] = int32(i)
		}
		x.n++
	}
	if len(cols) == 1 {
		x.intRange(rec.Column(0))
	}
	return x, nil
}

// intRange sets up the integer fast path of a single key column.
func (x *joinIndex) intRange(col arrow.Array) {
	if x.n == 0 {
		return
	}
	if !isIntArray(col) {
		return
	}
	first := true
	for i := range col.Len() {
		if col.IsNull(i) {
			continue
		}
		v, _ := intValue(col, i)
		if first || v < x.lo {
			x.lo = v
		}
		if first || v > x.hi {
			x.hi = v
		}
		first = false
	}
	x.ints = true
	if span := uint64(x.hi) - uint64(x.lo); span/8 <= 8*uint64(x.n) && span < 1<<32 {
		x.bits = make([]uint64, span/64+1)
		for i := range col.Len() {
			if !col.IsNull(i) {
				v, _ := intValue(col, i)
				d := uint64(v) - uint64(x.lo)
				x.bits[d/64] |= 1 << (d % 64)
			}
		}
	}
}

// keyRecord is a record of the key arrays (columns k0, k1, ...).
func joinKeyRecord(keys []arrow.Array, n int64) arrow.RecordBatch {
	fields := make([]arrow.Field, len(keys))
	for i, a := range keys {
		fields[i] = arrow.Field{Name: fmt.Sprintf("k%d", i), Type: a.DataType(), Nullable: true}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), keys, n)
}

func (x *joinIndex) release() { x.idx.release() }

// probe returns the pairs (target row, source row) of rows of keys (the
// target's join key arrays, converted like the source's) whose key
// equals a source row's: per target row in order, its source rows in
// ascending order.
func (x *joinIndex) probe(keys []arrow.Array, n int) (tIdx, sIdx []int64) {
	if x.n == 0 {
		return nil, nil
	}
	rec := joinKeyRecord(keys, int64(n))
	defer rec.Release()
	if x.ints {
		if col := keys[0]; isIntArray(col) {
			for i := range n {
				if col.IsNull(i) {
					continue
				}
				v, _ := intValue(col, i)
				if v < x.lo || v > x.hi {
					continue
				}
				if x.bits != nil {
					if d := uint64(v) - uint64(x.lo); x.bits[d/64]&(1<<(d%64)) == 0 {
						continue
					}
				}
				slot := x.idx.find(rows.HashInt(v), rec, i)
				if slot < 0 {
					continue
				}
				for s := x.first[slot]; s >= 0; s = x.next[s] {
					tIdx = append(tIdx, int64(i))
					sIdx = append(sIdx, int64(s))
				}
			}
			return tIdx, sIdx
		}
	}
	hashes := rows.HashKeys(rec, x.idx.keyPos, nil)
	for i, h := range hashes {
		if nullIn(rec, x.idx.keyPos, i) {
			continue
		}
		slot := x.idx.find(h, rec, i)
		if slot < 0 {
			continue
		}
		for s := x.first[slot]; s >= 0; s = x.next[s] {
			tIdx = append(tIdx, int64(i))
			sIdx = append(sIdx, int64(s))
		}
	}
	return tIdx, sIdx
}
