package merge

import (
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/rows"
)

// keyIndex gives each distinct key of the change rows a slot. A key is
// found by its 64-bit hash (rows.HashKeys, computed column by column) and
// confirmed value by value (rows.KeysEqual), never by hash alone; a
// million keys cost an open-addressing table of integers, not a map of a
// million strings.
type keyIndex struct {
	keys []arrow.RecordBatch // the change batches' key columns, in key order
	// table holds, at each key's hash position (linear probing, at most
	// half full), the upper 32 bits of its hash and slot+1 in the lower 32
	// bits; 0 is empty. The hash bits in the entry turn away most other
	// keys without touching the key's row.
	table []uint64
	mask  uint64 // len(table)-1
	// bits is a one-hash Bloom filter of the keys' hashes, 16 bits per
	// key: most table rows looked up are not changed, and the filter (a
	// few MiB) turns most of them away without probing the table.
	bits    []uint64
	bitMask uint64   // bit index mask of bits
	rowOf   []rowRef // slot -> the change row that holds its key
	keyPos  []int    // 0..len(key columns)-1
}

type rowRef struct{ b, i int32 }

// newKeyIndex indexes keys of the change batches recs (key columns cols,
// in key order), sized for n keys.
func newKeyIndex(recs []arrow.RecordBatch, cols []int, n int) *keyIndex {
	x := &keyIndex{rowOf: make([]rowRef, 0, n), keyPos: seqInts(len(cols))}
	size := uint64(1) << 4
	for size < 2*uint64(n) {
		size <<= 1
	}
	x.table, x.mask = make([]uint64, size), size-1
	nbits := uint64(1) << 10
	for nbits < 16*uint64(n) {
		nbits <<= 1
	}
	x.bits, x.bitMask = make([]uint64, nbits/64), nbits-1
	for _, r := range recs {
		x.keys = append(x.keys, keyColumns(r, cols))
	}
	return x
}

func (x *keyIndex) release() {
	for _, k := range x.keys {
		k.Release()
	}
}

// keyColumns is a zero-copy record of the columns cols of rec, in that
// order.
func keyColumns(rec arrow.RecordBatch, cols []int) arrow.RecordBatch {
	fields := make([]arrow.Field, len(cols))
	arrs := make([]arrow.Array, len(cols))
	for k, c := range cols {
		fields[k] = rec.Schema().Field(c)
		arrs[k] = rec.Column(c)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
}

// probe returns the table position of the key in row i of rec (columns
// 0..k-1 the key columns in key order) with hash h: the position holding
// its slot, or the empty position where it would go.
func (x *keyIndex) probe(h uint64, rec arrow.RecordBatch, i int) uint64 {
	tag := h >> 32
	pos := h & x.mask
	for {
		e := x.table[pos]
		if e == 0 {
			return pos
		}
		if e>>32 == tag {
			r := x.rowOf[uint32(e)-1]
			if rows.KeysEqual(x.keys[r.b], int(r.i), rec, i, x.keyPos) {
				return pos
			}
		}
		pos = (pos + 1) & x.mask
	}
}

// find returns the slot of the key in row i of rec, whose columns 0..k-1
// are the key columns in key order, given the row's hash h (rows.HashKeys
// over those columns); -1 when no change row has that key.
func (x *keyIndex) find(h uint64, rec arrow.RecordBatch, i int) int32 {
	if bit := (h >> 20) & x.bitMask; x.bits[bit/64]&(1<<(bit%64)) == 0 {
		return -1
	}
	return int32(uint32(x.table[x.probe(h, rec, i)])) - 1
}

// insert returns the slot of the key of change row i of batch b, with hash
// h, adding a slot when the key is new. The index holds at most the n keys
// it was sized for.
func (x *keyIndex) insert(h uint64, b, i int) (slot int32, added bool) {
	pos := x.probe(h, x.keys[b], i)
	if e := x.table[pos]; e != 0 {
		return int32(uint32(e)) - 1, false
	}
	slot = int32(len(x.rowOf))
	x.rowOf = append(x.rowOf, rowRef{b: int32(b), i: int32(i)})
	x.table[pos] = h>>32<<32 | uint64(slot+1)
	bit := (h >> 20) & x.bitMask
	x.bits[bit/64] |= 1 << (bit % 64)
	return slot, true
}

// actionSet is the final action of every key of a change set, by slot of
// its key index.
type actionSet struct {
	// idx indexes the keys by slot. A change set whose keys arrive sorted
	// is reduced without it (sortedIntKey), and it is built on first use,
	// from recs and cols; once guards that.
	idx  *keyIndex
	once sync.Once
	recs []arrow.RecordBatch
	cols []int
	act  []action // by slot; none for a key without an action
	n    int      // keys with an action
	// upserts and deletes count the actions of each kind.
	upserts, deletes int64
	// matched marks the keys found in the table (position and
	// copy-on-write modes); set concurrently by Match.
	matched []atomic.Bool
}

func (s *actionSet) release() {
	if s.idx != nil {
		s.idx.release()
	}
}

// index returns the key index of the set, building it the first time for
// a set reduced without one: the keys of slot 0, 1, ... are the first rows
// of the sorted runs of equal keys, in arrival order.
func (s *actionSet) index() *keyIndex {
	s.once.Do(func() {
		if s.idx != nil {
			return
		}
		x := newKeyIndex(s.recs, s.cols, len(s.act))
		var hashes []uint64
		for b, rec := range s.recs {
			hashes = rows.HashKeys(rec, s.cols, hashes)
			for i, h := range hashes {
				x.insert(h, b, i) // a row of a run already added finds its slot
			}
		}
		s.idx = x
	})
	return s.idx
}

// all yields the actions (not the keys without one), in the order their
// keys first appeared.
func (s *actionSet) all(yield func(action) bool) {
	for _, a := range s.act {
		if !a.none && !yield(a) {
			return
		}
	}
}

// lookup returns the slot of the action for each row of rec, whose columns
// 0..k-1 are the key columns in key order, or -1 when the row's key has no
// action. out is reused when it has room; hashes is scratch space.
func (s *actionSet) lookup(rec arrow.RecordBatch, out []int32, hashes []uint64) ([]int32, []uint64) {
	idx := s.index()
	hashes = rows.HashKeys(rec, idx.keyPos, hashes)
	n := len(hashes)
	if cap(out) < n {
		out = make([]int32, n)
	}
	out = out[:n]
	for i, h := range hashes {
		slot := idx.find(h, rec, i)
		if slot >= 0 && s.act[slot].none {
			slot = -1
		}
		out[i] = slot
	}
	return out, hashes
}

// countMatched is the number of keys Match found in the table.
func (s *actionSet) countMatched() int64 {
	var n int64
	for i := range s.matched {
		if s.matched[i].Load() {
			n++
		}
	}
	return n
}
