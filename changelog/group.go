package changelog

import (
	"bytes"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/zeebo/xxh3"

	"github.com/floedata/floe/rows"
)

// rowGroups assigns the rows of a partition to groups of equal values in
// some columns (NULL equal to NULL, as rows.AppendKey encodes them),
// without keeping a copy of each row's key: rows are bucketed by a 64-bit
// hash of their key, and a row joins a group only after its key has been
// compared, byte for byte, with the key of the group's first row. Two
// rows share a group exactly when their keys are equal; a hash collision
// costs a comparison, never a wrong answer.
//
// Memory is a few dozen bytes per distinct key, against the key bytes plus
// string and map overhead that a map[string] of keys costs, which is what
// lets a copy-on-write snapshot of millions of carry-over rows be grouped
// within the changelog's memory budget.
type rowGroups struct {
	recs []arrow.RecordBatch
	cols []int
	head map[uint64]int32 // key hash -> newest group with that hash
	next []int32          // group -> older group with the same hash, or -1
	rep  []rowPos         // group -> its first row
	hash func([]byte) uint64
	buf  []byte
	tmp  []byte
}

// rowPos is a row of a partition: batch b, row i.
type rowPos struct{ b, i int32 }

func newRowGroups(recs []arrow.RecordBatch, cols []int, sizeHint int) *rowGroups {
	return &rowGroups{recs: recs, cols: cols, head: make(map[uint64]int32, sizeHint), hash: xxh3.Hash}
}

// add returns the group of row i of batch b, creating a group when no
// earlier row has the same key.
func (g *rowGroups) add(b, i int) int32 {
	g.buf = rows.AppendKey(g.buf[:0], g.recs[b], g.cols, i)
	h := g.hash(g.buf)
	first, ok := g.head[h]
	if ok {
		for c := first; c >= 0; c = g.next[c] {
			r := g.rep[c]
			g.tmp = rows.AppendKey(g.tmp[:0], g.recs[r.b], g.cols, int(r.i))
			if bytes.Equal(g.tmp, g.buf) {
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
