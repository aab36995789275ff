package merge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/rows"
)

// Change types ranked in the order ties of one sequence value apply:
// UPDATE_BEFORE < DELETE < UPDATE_AFTER < INSERT.
const (
	kindUpdateBefore int8 = iota
	kindDelete
	kindUpdateAfter
	kindInsert
)

// kindNames are the change types by rank.
var kindNames = [...]string{kindUpdateBefore: UpdateBefore, kindDelete: Delete, kindUpdateAfter: UpdateAfter, kindInsert: Insert}

// parseKind returns the rank of a change type (case-insensitive), or -1.
func parseKind(s string) int8 {
	for r, k := range kindNames {
		if s == k {
			return int8(r)
		}
	}
	for r, k := range kindNames {
		if strings.EqualFold(s, k) {
			return int8(r)
		}
	}
	return -1
}

// action is the final action for one key.
type action struct {
	upsert bool
	none   bool // the key's changes do nothing (a lone before-image)
	b, i   int  // the row (INSERT/UPDATE_AFTER for upserts)
}

// keyState is what reducing keeps of one key's changes as they are met
// in arrival order: with a sequence column the change that wins so far;
// without, the first change and enough of the second for an error.
type keyState struct {
	seq   int64
	ord   int64 // the row of the first or winning change
	ord2  int64 // without a sequence column: the second change's
	b, i  int32
	n     int32 // changes met (without a sequence column: other than UPDATE_BEFORE)
	kind  int8
	kind2 int8
}

// reduce reduces the rows recs of a change set (every row of their keys,
// in arrival order) to one action per key. The caller releases the set;
// it references recs, which the caller keeps.
func (cs *changeSet) reduce(recs []arrow.RecordBatch) (*actionSet, error) {
	total := 0
	for _, rec := range recs {
		total += int(rec.NumRows())
	}
	st := make([]keyState, 0, total)
	// step adds change row i of batch b to the state of its key.
	step := func(s *keyState, b, i int, kinds []int8, ords, seqs []int64) {
		kind := kinds[i]
		if seqs != nil {
			// The last of equal (sequence, type) wins: a stable sort's last.
			if s.n == 0 || seqs[i] > s.seq || seqs[i] == s.seq && kind >= s.kind {
				s.seq, s.kind, s.ord, s.b, s.i = seqs[i], kind, ords[i], int32(b), int32(i)
			}
			s.n++
			return
		}
		if kind == kindUpdateBefore { // ignored: does nothing alone
			return
		}
		switch s.n {
		case 0:
			s.kind, s.ord, s.b, s.i = kind, ords[i], int32(b), int32(i)
		case 1:
			s.kind2, s.ord2 = kind, ords[i]
		}
		s.n++
	}
	var idx *keyIndex
	sorted := sortedIntKey(recs, cs.keyCols)
	if testHookReduce != nil {
		testHookReduce(sorted)
	}
	if sorted {
		// Keys in ascending order (a change set exported in key order):
		// the changes of a key are one run of rows, and a key is new
		// exactly when it differs from the row before. No key index is
		// built unless a lookup asks for one (actionSet.index).
		var last int64
		for b, rec := range recs {
			kinds, ords, seqs := cs.kinds(rec), cs.ords(rec), cs.seqs(rec)
			col := rec.Column(cs.keyCols[0])
			for i := range int(rec.NumRows()) {
				v, _ := intValue(col, i)
				if len(st) == 0 || v != last {
					st = append(st, keyState{})
					last = v
				}
				step(&st[len(st)-1], b, i, kinds, ords, seqs)
			}
		}
	} else {
		idx = newKeyIndex(recs, cs.keyCols, total)
		var hashes []uint64
		for b, rec := range recs {
			kinds, ords, seqs := cs.kinds(rec), cs.ords(rec), cs.seqs(rec)
			hashes = rows.HashKeys(rec, cs.keyCols, hashes)
			for i, h := range hashes {
				slot, added := idx.insert(h, b, i)
				if added {
					st = append(st, keyState{})
				}
				step(&st[slot], b, i, kinds, ords, seqs)
			}
		}
	}
	set := &actionSet{idx: idx, recs: recs, cols: cs.keyCols, act: make([]action, len(st))}
	for slot := range st {
		s := &st[slot]
		var a action
		switch {
		case cs.seqCol >= 0:
			a = action{upsert: s.kind >= kindUpdateAfter, b: int(s.b), i: int(s.i)}
		case s.n > 1:
			set.release()
			rec := recs[s.b]
			return nil, fmt.Errorf("%w: %d changes for the key (%s) (rows %d and %d: %s and %s); apply takes at most one action per key: collapse them first (--sequence-column orders them)",
				ErrCardinality, s.n, rows.FormatKey(rec, cs.keyCols, int(s.i)), s.ord, s.ord2, kindNames[s.kind], kindNames[s.kind2])
		case s.n == 0:
			a = action{none: true} // only before-images: nothing to do
		default:
			a = action{upsert: s.kind != kindDelete, b: int(s.b), i: int(s.i)}
		}
		set.act[slot] = a
		if !a.none {
			set.n++
			if a.upsert {
				set.upserts++
			} else {
				set.deletes++
			}
		}
	}
	set.matched = make([]atomic.Bool, len(st))
	if err := cs.strict.add(recs, set); err != nil {
		set.release()
		return nil, err
	}
	return set, nil
}

// combine reduces the rows of one partition of a change set with a
// sequence column to the winning change of each key, before they spill:
// rows.PartitionOptions.Combine.
func (cs *changeSet) combine(ctx context.Context, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	defer releaseAll(recs)
	acts, err := cs.reduce(recs)
	if err != nil {
		return nil, err
	}
	defer acts.release()
	byBatch := make([][]int64, len(recs))
	for _, a := range acts.act {
		byBatch[a.b] = append(byBatch[a.b], int64(a.i))
	}
	var out []arrow.RecordBatch
	for b, ids := range byBatch {
		if len(ids) == 0 {
			continue
		}
		slices.Sort(ids)
		t, err := rows.Take(ctx, recs[b], ids)
		if err != nil {
			releaseAll(out)
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// testHookReduce, set by tests only, is told whether reduce found the keys
// sorted.
var testHookReduce func(sorted bool)

// sortedIntKey reports whether recs have one integer-like key column (at
// cols) whose values never decrease from row to row, across the batches
// in order.
func sortedIntKey(recs []arrow.RecordBatch, cols []int) bool {
	if len(cols) != 1 {
		return false
	}
	first := true
	var last int64
	for _, rec := range recs {
		col := rec.Column(cols[0])
		if col.NullN() > 0 || !isIntArray(col) {
			return false
		}
		switch a := col.(type) {
		case *array.Int64:
			vs := a.Int64Values()
			if len(vs) == 0 {
				continue
			}
			if !first && vs[0] < last || !slices.IsSorted(vs) {
				return false
			}
			last, first = vs[len(vs)-1], false
			continue
		}
		for i := range col.Len() {
			v, _ := intValue(col, i)
			if !first && v < last {
				return false
			}
			last, first = v, false
		}
	}
	return true
}

func seqValue(a arrow.Array, i int) int64 {
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i)
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Timestamp:
		return int64(c.Value(i))
	case *array.Date32:
		return int64(c.Value(i))
	}
	return 0
}
