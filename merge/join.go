package merge

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// fileState is what the join found in one data file (with one set of
// delete files), kept across commit attempts like write.Reuse keeps the
// file's written work: the source rows its rows matched, which touched
// rows matched which source row, and what the rewrite did.
type fileState struct {
	attempt int
	sources *roaring.Bitmap // source rows matched by this file's rows
	// resPos and resSrc: the touched matched rows (positions, ascending)
	// and their source rows in the joiner's rows in memory.
	resPos []int64
	resSrc []int32
	// preJoined and preTouched are the positions of the rows that source
	// rows of the spilled runs matched, and of those a WHEN MATCHED
	// clause touches; preRefs the batches of pairs files that hold the
	// latter's source rows (see prepass).
	preJoined, preTouched *roaring64.Bitmap
	preRefs               []pairRef
	pairs                 *pairRows // preRefs read back, during the rewrite
	// touched counts the rows Match touched, rewritten those Rewrite has
	// seen: when all are seen, the rows held for the rewrite go.
	touched, rewritten int64
	updated, deleted   int64
}

// joiner runs the join of one MERGE: the source rows (in memory with a
// hash index on the join keys, or in runs on disk, each joined with the
// target in turn) and the per-file results of every attempt.
type joiner struct {
	src   *sourceRows
	mem   arrow.RecordBatch // the source rows in memory (empty when they spilled)
	mu    sync.Mutex
	files map[string]*fileState // by data file path and delete files
	// stats are the source's join key statistics for the plan first
	// bound (statsPlan), reused by attempts that bind alike.
	stats     *sourceStats
	dir       string
	pairFiles []*rows.BatchFile
}

func (j *joiner) release() {
	for _, f := range j.pairFiles {
		f.Remove()
	}
	j.pairFiles = nil
}

// attempt is the join state of one commit attempt: the statement bound to
// the table as loaded for this attempt, and where its candidate files are.
type attempt struct {
	j     *joiner
	p     *plan
	no    int
	index *joinIndex        // over j.mem
	keyOf map[string]string // data file path -> file state key (path and delete files)
}

func workKey(t scan.Task) string { return t.File.FilePath() + "|" + t.Deletes.Key() }

// castTo converts arr to dt (nil: no conversion). The caller releases the
// result.
func castTo(ctx context.Context, arr arrow.Array, dt arrow.DataType) (arrow.Array, error) {
	if dt == nil || arrow.TypeEqual(arr.DataType(), dt) {
		arr.Retain()
		return arr, nil
	}
	return compute.CastArray(ctx, arr, compute.SafeCastOptions(dt))
}

// keyArrays returns the join key columns of rec (cols gives each key's
// column in rec) converted to the keys' hash types.
func keyArrays(ctx context.Context, p *plan, rec arrow.RecordBatch, cols []int) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(cols))
	for k, c := range cols {
		a, err := castTo(ctx, rec.Column(c), p.keys[k].hash)
		if err != nil {
			releaseAll(out[:k])
			return nil, fmt.Errorf("convert join key %s to %s: %w", rec.Schema().Field(c).Name, p.keys[k].hash, err)
		}
		out[k] = a
	}
	return out, nil
}

func releaseAll[T interface{ Release() }](xs []T) {
	for _, x := range xs {
		x.Release()
	}
}

// takeCols returns the columns of rec at rows idx.
func takeCols(ctx context.Context, rec arrow.RecordBatch, idx []int64) ([]arrow.Array, error) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(idx, nil)
	ia := b.NewInt64Array()
	defer ia.Release()
	out := make([]arrow.Array, rec.NumCols())
	for i := range out {
		c, err := compute.TakeArray(ctx, rec.Column(i), ia)
		if err != nil {
			releaseAll(out[:i])
			return nil, fmt.Errorf("take rows: %w", err)
		}
		out[i] = c
	}
	return out, nil
}

// joined builds a record of schema from rows tIdx of t followed, when s is
// not nil, by rows sIdx of s.
func joined(ctx context.Context, schema *arrow.Schema, t arrow.RecordBatch, tIdx []int64, s arrow.RecordBatch, sIdx []int64) (arrow.RecordBatch, error) {
	cols, err := takeCols(ctx, t, tIdx)
	if err != nil {
		return nil, err
	}
	if s != nil {
		sc, err := takeCols(ctx, s, sIdx)
		if err != nil {
			releaseAll(cols)
			return nil, err
		}
		cols = append(cols, sc...)
	}
	defer releaseAll(cols)
	return array.NewRecordBatch(schema, cols, int64(len(tIdx))), nil
}

// choose returns, per row of rec, the first clause whose condition
// (conds[k], nil meaning TRUE) is TRUE for it, or -1. As in Spark, a
// condition is only evaluated on the rows no earlier clause took.
// where describes row x of rec for evaluation errors.
func choose(ctx context.Context, rec arrow.RecordBatch, clauses []*clause, full bool, where func(x int) string) ([]int32, error) {
	n := int(rec.NumRows())
	out := make([]int32, n)
	for i := range out {
		out[i] = -1
	}
	open := n
	for k, c := range clauses {
		if open == 0 {
			break
		}
		cond := c.cond
		if full {
			cond = c.condFull
		}
		if cond == nil {
			for i := range out {
				if out[i] < 0 {
					out[i] = int32(k)
				}
			}
			break
		}
		sub := rec
		var idx []int64
		if open < n {
			for i, o := range out {
				if o < 0 {
					idx = append(idx, int64(i))
				}
			}
			var err error
			if sub, err = joined(ctx, rec.Schema(), rec, idx, nil, nil); err != nil {
				return nil, err
			}
		}
		mask, err := cond.Mask(ctx, sub)
		if sub != rec {
			sub.Release()
		}
		if err != nil {
			var ee *expr.EvalError
			if errors.As(err, &ee) && ee.Row < len(out) {
				x := ee.Row
				if idx != nil {
					x = int(idx[x])
				}
				return nil, fmt.Errorf("%s condition, for %s: %w", c.at(), where(x), err)
			}
			return nil, fmt.Errorf("%s condition: %w", c.at(), err)
		}
		for j := 0; j < mask.Len(); j++ {
			if !mask.Value(j) {
				continue
			}
			i := j
			if idx != nil {
				i = int(idx[j])
			}
			out[i] = int32(k)
			open--
		}
		mask.Release()
	}
	return out, nil
}

// state returns the state of the data file at path for this attempt,
// fresh unless an earlier attempt computed it for the same delete files
// (then write.Reuse skips the file and the state stays valid).
func (a *attempt) state(path string) (*fileState, error) {
	key, ok := a.keyOf[path]
	if !ok {
		return nil, fmt.Errorf("data file %s is not among the planned candidate files", path)
	}
	return a.stateOf(key), nil
}

func (a *attempt) stateOf(key string) *fileState {
	a.j.mu.Lock()
	defer a.j.mu.Unlock()
	st := a.j.files[key]
	if st == nil || st.attempt != a.no {
		st = &fileState{attempt: a.no, sources: roaring.New()}
		a.j.files[key] = st
	}
	return st
}

// joinGroup joins b, the match columns of live rows of a data file, with
// the source rows src (ids base onwards) indexed by x. It records the
// source rows matched in st, checks Spark's cardinality rule (also
// against the rows earlier runs matched: run is the index of src among
// the spilled runs, -1 for the rows in memory), and returns per row of b
// the row of src it matched first, or -1 (also for rows an earlier run
// matched), and the WHEN MATCHED clause it takes, or -1.
func (a *attempt) joinGroup(ctx context.Context, st *fileState, b scan.Batch, src arrow.RecordBatch, x *joinIndex, base int64, run int) (first, choice []int32, err error) {
	p := a.p
	rec := b.Rec
	n := int(rec.NumRows())
	first = make([]int32, n)
	choice = make([]int32, n)
	for i := range first {
		first[i], choice[i] = -1, -1
	}
	keys, err := keyArrays(ctx, p, rec, p.keyInMatch)
	if err != nil {
		return nil, nil, err
	}
	tIdx, sIdx := x.probe(keys, n)
	releaseAll(keys)
	if p.residual != nil && len(tIdx) > 0 {
		j, err := joined(ctx, p.matchSchema, rec, tIdx, src, sIdx)
		if err != nil {
			return nil, nil, err
		}
		mask, err := p.residual.Mask(ctx, j)
		j.Release()
		if err != nil {
			return nil, nil, fmt.Errorf("ON condition: %w", err)
		}
		k := 0
		for x := range tIdx {
			if mask.Value(x) {
				tIdx[k], sIdx[k] = tIdx[x], sIdx[x]
				k++
			}
		}
		mask.Release()
		tIdx, sIdx = tIdx[:k], sIdx[:k]
	}
	for x, i := range tIdx {
		s := int32(sIdx[x])
		st.sources.Add(uint32(base + int64(s)))
		if first[i] >= 0 {
			if p.checkCard {
				return nil, nil, a.cardinalityError(b, int(i), base+int64(first[i]), base+int64(s))
			}
			continue
		}
		if st.preJoined != nil && st.preJoined.Contains(uint64(b.Pos[i])) {
			// An earlier run matched the row: its clause is chosen.
			if p.checkCard {
				return nil, nil, a.crossCardinality(ctx, b, int(i), run, base+int64(s))
			}
			continue
		}
		first[i] = s
	}
	if len(p.matched) == 0 {
		return first, choice, nil
	}
	var mt, ms []int64
	for i, s := range first {
		if s >= 0 {
			mt = append(mt, int64(i))
			ms = append(ms, int64(s))
		}
	}
	if len(mt) == 0 {
		return first, choice, nil
	}
	picked := make([]int32, len(mt)) // an unconditional first clause takes every row
	if p.matched[0].cond != nil {
		j, err := joined(ctx, p.matchSchema, rec, mt, src, ms)
		if err != nil {
			return nil, nil, err
		}
		picked, err = choose(ctx, j, p.matched, false, func(x int) string { return rowAt(b, int(mt[x])) })
		j.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	for x, c := range picked {
		choice[mt[x]] = c
	}
	return first, choice, nil
}

// match is the write.Visitor's Match: b holds the match columns of live
// rows of data file f. It joins them with the source rows in memory,
// checks Spark's cardinality rule, records the matched source rows, and
// marks the rows a WHEN MATCHED or WHEN NOT MATCHED BY SOURCE clause
// deletes or updates, with those a spilled run's rows touch (prepass).
func (a *attempt) match(ctx context.Context, f iceberg.DataFile, b scan.Batch) ([]bool, error) {
	p := a.p
	st, err := a.state(f.FilePath())
	if err != nil {
		return nil, err
	}
	n := int(b.Rec.NumRows())
	first, choice, err := a.joinGroup(ctx, st, b, a.j.mem, a.index, 0, -1)
	if err != nil {
		return nil, err
	}
	touched := make([]bool, n)
	for i, c := range choice {
		if c >= 0 {
			touched[i] = true
			st.resPos = append(st.resPos, b.Pos[i])
			st.resSrc = append(st.resSrc, first[i])
		}
	}
	if st.preTouched != nil {
		for i, pos := range b.Pos {
			if st.preTouched.Contains(uint64(pos)) {
				touched[i] = true
			}
		}
	}
	if len(p.bySource) > 0 {
		var ut []int64
		for i, s := range first {
			if s < 0 && (st.preJoined == nil || !st.preJoined.Contains(uint64(b.Pos[i]))) {
				ut = append(ut, int64(i))
			}
		}
		if len(ut) > 0 {
			choice := make([]int32, len(ut))
			if p.bySource[0].cond != nil {
				j, err := joined(ctx, p.tMatch, b.Rec, ut, nil, nil)
				if err != nil {
					return nil, err
				}
				choice, err = choose(ctx, j, p.bySource, false, func(x int) string { return rowAt(b, int(ut[x])) })
				j.Release()
				if err != nil {
					return nil, err
				}
			}
			for x, c := range choice {
				if c >= 0 {
					touched[ut[x]] = true
				}
			}
		}
	}
	for _, t := range touched {
		if t {
			st.touched++
		}
	}
	return touched, nil
}

// cardinalityError reports a target row matched by two source rows, with
// Spark's error class and message (write.Prepare adds the file's path).
func (a *attempt) cardinalityError(b scan.Batch, i int, s1, s2 int64) error {
	p := a.p
	var key []string
	for k, kp := range p.keys {
		key = append(key, p.target.Field(kp.tCol).Name+"="+rows.FormatValue(b.Rec.Column(p.keyInMatch[k]), i))
	}
	rows := fmt.Sprintf("source rows %d and %d", s1, s2)
	if s1 < 0 {
		rows = fmt.Sprintf("source row %d and an earlier one", s2)
	}
	return fmt.Errorf("%w: the ON search condition of the MERGE statement matched a single row from the target table with multiple rows of the source table; this could result in the target row being operated on more than once with an update or delete operation and is not allowed: the target row (%s) at position %d matches %s (counting from 0)",
		ErrCardinality, strings.Join(key, ", "), b.Pos[i], rows)
}

// rewrite is the write.Visitor's Rewrite: b holds every column of live
// rows of data file f. Touched rows are deleted or replaced by their
// updated version, as the first clause whose condition holds says.
func (a *attempt) rewrite(ctx context.Context, f iceberg.DataFile, b scan.Batch, touched []bool) ([]bool, arrow.RecordBatch, error) {
	p := a.p
	st, err := a.state(f.FilePath())
	if err != nil {
		return nil, nil, err
	}
	keep := make([]bool, len(touched))
	var mt, ms, pt, ps, ut []int64
	for i, t := range touched {
		keep[i] = true
		if !t {
			continue
		}
		st.rewritten++
		pos := b.Pos[i]
		if k, ok := slices.BinarySearch(st.resPos, pos); ok {
			mt = append(mt, int64(i))
			ms = append(ms, int64(st.resSrc[k]))
			continue
		}
		if st.preTouched != nil && st.preTouched.Contains(uint64(pos)) {
			if st.pairs == nil {
				if st.pairs, err = readPairs(st.preRefs, a.j.src.schema); err != nil {
					return nil, nil, err
				}
			}
			r, ok := st.pairs.rowOf(pos)
			if !ok {
				return nil, nil, fmt.Errorf("the source row of the target row at position %d is missing from the spilled pairs", pos)
			}
			pt = append(pt, int64(i))
			ps = append(ps, int64(r))
			continue
		}
		ut = append(ut, int64(i))
	}
	if st.rewritten >= st.touched {
		// The last touched row: what was held for the rewrite goes.
		defer func() {
			st.resPos, st.resSrc = nil, nil
			if st.pairs != nil {
				st.pairs.release()
				st.pairs = nil
			}
		}()
	}
	out := b.Rec.Schema()
	var adds []arrow.RecordBatch
	defer func() { releaseAll(adds) }()
	apply := func(j arrow.RecordBatch, tRows []int64, clauses []*clause) error {
		choice, err := choose(ctx, j, clauses, true, func(x int) string { return rowAt(b, int(tRows[x])) })
		if err != nil {
			return err
		}
		for k, c := range clauses {
			var pick []int64
			for x, ch := range choice {
				if int(ch) == k {
					pick = append(pick, int64(x))
					keep[tRows[x]] = false
				}
			}
			if len(pick) == 0 {
				continue
			}
			if !c.isUpdate() {
				st.deleted += int64(len(pick))
				continue
			}
			st.updated += int64(len(pick))
			sub, err := joined(ctx, j.Schema(), j, pick, nil, nil)
			if err != nil {
				return err
			}
			rec, err := assign(ctx, c, sub, out, func(x int) string { return rowAt(b, int(tRows[pick[x]])) })
			sub.Release()
			if err != nil {
				return err
			}
			adds = append(adds, rec)
		}
		return nil
	}
	if len(mt) > 0 {
		j, err := joined(ctx, p.fullSchema, b.Rec, mt, a.j.mem, ms)
		if err != nil {
			return nil, nil, err
		}
		err = apply(j, mt, p.matched)
		j.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	if len(pt) > 0 {
		j, err := joined(ctx, p.fullSchema, b.Rec, pt, st.pairs.src, ps)
		if err != nil {
			return nil, nil, err
		}
		err = apply(j, pt, p.matched)
		j.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	if len(ut) > 0 {
		j, err := joined(ctx, p.tFull, b.Rec, ut, nil, nil)
		if err != nil {
			return nil, nil, err
		}
		err = apply(j, ut, p.bySource)
		j.Release()
		if err != nil {
			return nil, nil, err
		}
	}
	if len(adds) == 0 {
		return keep, nil, nil
	}
	add, err := rows.Concat(out, adds)
	return keep, add, err
}

// rowAt describes row i of a batch of a data file (write.Prepare names
// the file).
func rowAt(b scan.Batch, i int) string {
	return fmt.Sprintf("the target row at position %d", b.Pos[i])
}

func sourceRow(i int64) string { return fmt.Sprintf("source row %d (counting from 0)", i) }

// assign evaluates the values of an UPDATE or INSERT clause on rec (a
// joined record whose first columns are the target's, for UPDATE) into a
// record of schema out, checking NOT NULL columns. where describes row x
// of rec for errors.
func assign(ctx context.Context, c *clause, rec arrow.RecordBatch, out *arrow.Schema, where func(x int) string) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	cols := make([]arrow.Array, out.NumFields())
	defer func() {
		for _, col := range cols {
			if col != nil {
				col.Release()
			}
		}
	}()
	for i, f := range out.Fields() {
		var v arrow.Array
		switch {
		case c.values[i] != nil:
			var err error
			if v, err = c.values[i].Eval(ctx, rec); err != nil {
				var ee *expr.EvalError
				if errors.As(err, &ee) && ee.Row < n {
					return nil, fmt.Errorf("%s: value of column %s for %s: %w", c.at(), f.Name, where(ee.Row), err)
				}
				return nil, fmt.Errorf("%s: value of column %s: %w", c.at(), f.Name, err)
			}
		case c.isUpdate():
			v = rec.Column(i)
			v.Retain()
		default:
			v = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, n)
		}
		cols[i] = v
		if !f.Nullable && v.NullN() > 0 {
			x := 0
			for v.IsValid(x) {
				x++
			}
			verb := "UPDATE"
			if !c.isUpdate() {
				verb = "INSERT"
			}
			return nil, fmt.Errorf("%w: %s: %s would set column %s, which is NOT NULL, to NULL for %s",
				ErrNotNull, c.at(), verb, f.Name, where(x))
		}
	}
	return array.NewRecordBatch(out, cols, int64(n)), nil
}

// inserts yields the rows the WHEN NOT MATCHED clauses insert for the
// source rows not matched (ascending), in the table's Arrow schema,
// counting them in *n: the rows in memory, or each spilled run in turn.
func (a *attempt) inserts(ctx context.Context, matched *roaring.Bitmap, n *int64) iter.Seq2[arrow.RecordBatch, error] {
	const chunk = 64 << 10
	p := a.p
	return func(yield func(arrow.RecordBatch, error) bool) {
		for g, err := range a.j.src.groups(ctx) {
			if err != nil {
				yield(nil, err)
				return
			}
			src, base := g.rec, g.base
			var ids []int64
			for i := range src.NumRows() {
				if !matched.Contains(uint32(base + i)) {
					ids = append(ids, i)
				}
			}
			for start := 0; start < len(ids); start += chunk {
				part := ids[start:min(start+chunk, len(ids))]
				cols, err := takeCols(ctx, src, part)
				if err != nil {
					src.Release()
					yield(nil, err)
					return
				}
				sub := array.NewRecordBatch(p.sSchema, cols, int64(len(part)))
				releaseAll(cols)
				recs, err := a.insertChunk(ctx, sub, part, base)
				sub.Release()
				if err != nil {
					src.Release()
					yield(nil, err)
					return
				}
				for i, r := range recs {
					*n += r.NumRows()
					if !yield(r, nil) {
						releaseAll(recs[i+1:])
						src.Release()
						return
					}
				}
			}
			src.Release()
		}
	}
}

func (a *attempt) insertChunk(ctx context.Context, sub arrow.RecordBatch, ids []int64, base int64) ([]arrow.RecordBatch, error) {
	p := a.p
	choice, err := choose(ctx, sub, p.notMatched, true, func(x int) string { return sourceRow(base + ids[x]) })
	if err != nil {
		return nil, err
	}
	var out []arrow.RecordBatch
	for k, c := range p.notMatched {
		var pick []int64
		for x, ch := range choice {
			if int(ch) == k {
				pick = append(pick, int64(x))
			}
		}
		if len(pick) == 0 {
			continue
		}
		rowsOf, err := joined(ctx, sub.Schema(), sub, pick, nil, nil)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		rec, err := assign(ctx, c, rowsOf, p.target, func(x int) string { return sourceRow(base + ids[pick[x]]) })
		rowsOf.Release()
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}
