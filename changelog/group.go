package changelog

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/rows"
)

// rowGroups assigns the rows of a partition to groups of equal values in
// some columns (NULL equal to NULL, as rows.AppendKey encodes them),
// without keeping a copy of each row's key: rows are bucketed by a 64-bit
// hash of their key (rows.HashKeys), and a row joins a group only after
// its values have been compared with those of the group's first row
// (rows.KeysEqual). Two rows share a group exactly when their keys are
// equal; a hash collision costs a comparison, never a wrong answer.
//
// Memory is a few dozen bytes per distinct key, against the key bytes plus
// string and map overhead that a map[string] of keys costs, which is what
// lets a copy-on-write snapshot of millions of carry-over rows be grouped
// within the changelog's memory budget.
type rowGroups struct {
	recs   []arrow.RecordBatch
	cols   []int
	hashes [][]uint64                                                     // batch -> row hashes, computed on first use
	head   map[uint64]int32                                               // key hash -> newest group with that hash
	next   []int32                                                        // group -> older group with the same hash, or -1
	rep    []rowPos                                                       // group -> its first row
	hash   func(rec arrow.RecordBatch, cols []int, out []uint64) []uint64 // rows.HashKeys; tests make it collide
}

// rowPos is a row of a partition: batch b, row i.
type rowPos struct{ b, i int32 }

func newRowGroups(recs []arrow.RecordBatch, cols []int, sizeHint int) *rowGroups {
	return &rowGroups{recs: recs, cols: cols, hashes: make([][]uint64, len(recs)),
		head: make(map[uint64]int32, sizeHint), hash: rows.HashKeys}
}

// add returns the group of row i of batch b, creating a group when no
// earlier row has the same key.
func (g *rowGroups) add(b, i int) int32 {
	if g.hashes[b] == nil {
		g.hashes[b] = g.hash(g.recs[b], g.cols, nil)
	}
	h := g.hashes[b][i]
	first, ok := g.head[h]
	if ok {
		for c := first; c >= 0; c = g.next[c] {
			r := g.rep[c]
			if rows.KeysEqual(g.recs[b], i, g.recs[r.b], int(r.i), g.cols) {
				return c
			}
		}
	} else {
		first = -1
	}
	id := int32(len(g.rep))
	g.rep = append(g.rep, rowPos{int32(b), int32(i)})
	g.next = append(g.next, first)
	g.head[h] = id
	return id
}

// len is the number of groups.
func (g *rowGroups) len() int { return len(g.rep) }
