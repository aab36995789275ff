package changelog

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/rows"
)

// pairer cancels carry-overs while a snapshot's raw changes are read: the
// rows of the files it removed (deletes) and of the files it added
// (inserts) are read side by side, and a row that meets an identical row
// of the other side among the rows read so far is cancelled with it
// before it is ever grouped. Rows that find no partner within a window of
// recent rows go on, unchanged, to the exact grouping path.
//
// Cancelling identical DELETE/INSERT pairs early does not change the
// changelog: carry-over removal is a multiset difference per distinct row,
// and taking one identical pair away keeps every difference; the rows
// that survive are indistinguishable from those that would have (same
// values, change type, ordinal and snapshot). It pays off for
// copy-on-write rewrites, whose new files hold the old files' surviving
// rows in the same order, so that almost every row finds its partner a
// few rows away and millions of carry-overs never reach the partitioner.
//
// The sides are read in step. First the aligned path: the next row of
// each side is compared with the next row of the other, column by column
// over a run of rows (rows.RunComparer), and an equal run cancels without
// its rows ever being hashed or indexed. Rows where the sides do not line
// up go one at a time through the hash path (resync chooses the side): the
// row is looked up among the unmatched rows of the other side, and
// cancels with one found equal, or else joins its own side's index. The two indexes never hold equal rows (a row joins one
// only when the other has no equal row), so without evictions no row is
// left uncancelled that had a partner.
//
// The window holds whole batches: a batch stays while any of its rows is
// unmatched, and when the retained batches pass the budget the oldest is
// evicted, its unmatched rows handed to emit. Rows are indexed by a
// 64-bit hash of their values (rows.HashKeysRange, only of the rows that
// need it) and a hash match is confirmed value by value (with the same
// comparer), so a hash collision costs a comparison, never a wrong
// cancellation.
type pairer struct {
	ctx     context.Context
	cols    []int
	budget  int64
	emit    func(side int, rec arrow.RecordBatch) error // takes the batch
	sides   [2]pairSide                                 // 0: deletes, 1: inserts
	held    int64                                       // bytes of the retained batches
	peak    int64                                       // the most held after a batch was queued (tests)
	seq     int64
	cmp     *rows.RunComparer // made from the first batch's schema
	runLen  int               // rows the aligned path compares at once
	aligned bool              // the aligned path is on (useAligned)
	runRows int64             // rows the aligned path cancelled, per side
	behind  int               // the side resync catches up, or -1
	// hash is rows.HashKeysRange; tests make it collide.
	hash func(rec arrow.RecordBatch, cols []int, lo, hi int, out []uint64) []uint64
}

type pairSide struct {
	// index lists the unmatched rows by hash: head maps a hash to its
	// first node, nodes chain the rest. Freed nodes are reused, so the
	// index allocates nothing per row once it has grown.
	head   *hashIndex
	nodes  []pairNode
	free   int32        // first free node, or -1
	queue  []*pairBatch // batches done with unmatched rows, oldest first
	cur    *pairBatch   // the batch being matched, or nil
	curRow int          // its next row to match
	rows   int64        // rows matched so far
}

type pairNode struct {
	ref  pairRef
	next int32 // next node with the same hash, or -1
}

// push adds an unmatched row to the index.
func (s *pairSide) push(h uint64, ref pairRef) {
	next := int32(-1)
	if n, ok := s.head.get(h); ok {
		next = n
	}
	n := s.free
	if n >= 0 {
		s.free = s.nodes[n].next
		s.nodes[n] = pairNode{ref, next}
	} else {
		n = int32(len(s.nodes))
		s.nodes = append(s.nodes, pairNode{ref, next})
	}
	s.head.set(h, n)
}

// unlink removes node n, whose predecessor in its hash chain is prev (-1
// for the head), from the index.
func (s *pairSide) unlink(h uint64, prev, n int32) {
	next := s.nodes[n].next
	switch {
	case prev >= 0:
		s.nodes[prev].next = next
	case next >= 0:
		s.head.set(h, next)
	default:
		s.head.del(h)
	}
	s.nodes[n] = pairNode{next: s.free}
	s.free = n
}

type pairBatch struct {
	rec    arrow.RecordBatch
	seq    int64
	hashes []uint64 // of the rows that went through the hash path
	alive  []bool   // matched so far and unmatched
	nAlive int
	size   int64
	done   bool // every row has been matched against the other side
}

type pairRef struct {
	b *pairBatch
	i int32
}

func newPairer(ctx context.Context, cols []int, budget int64, emit func(side int, rec arrow.RecordBatch) error) *pairer {
	p := &pairer{ctx: ctx, cols: cols, budget: budget, emit: emit, hash: rows.HashKeysRange, runLen: minRun, aligned: useAligned, behind: -1}
	for s := range p.sides {
		p.sides[s].head = newHashIndex()
		p.sides[s].free = -1
	}
	return p
}

// useAligned turns the pairer's aligned path on; off, every row goes
// through the hash path, as before it existed. Tests turn it off to
// compare both.
var useAligned = true

// alignedRows counts the rows (per side) pairers cancelled on the aligned
// path (for tests).
var alignedRows atomic.Int64

// pairChunk is how many rows of one side go through the hash path at
// once when the other side has ended.
const pairChunk = 1024

// minRun and maxRun bound how many rows the aligned path compares at
// once: it starts small after a mismatch (the rows compared past a
// mismatch are compared again) and doubles while whole runs are equal.
const (
	minRun = 16
	maxRun = 1024
)

// run reads dels and ins in step, cancelling aligned equal runs and
// passing the rows that do not line up through the hash path, and hands
// every row that is not cancelled to emit.
func (p *pairer) run(dels, ins iter.Seq2[arrow.RecordBatch, error]) error {
	next := [2]func() (arrow.RecordBatch, error, bool){}
	var stop [2]func()
	next[0], stop[0] = iter.Pull2(dels)
	defer stop[0]()
	next[1], stop[1] = iter.Pull2(ins)
	defer stop[1]()
	done := [2]bool{}
	for {
		for s := range p.sides {
			side := &p.sides[s]
			for side.cur == nil && !done[s] {
				rec, err, ok := next[s]()
				if !ok {
					done[s] = true
					break
				}
				if err != nil {
					p.release()
					return err
				}
				if rec.NumRows() == 0 {
					rec.Release()
					continue
				}
				if p.cmp == nil {
					p.cmp = rows.NewRunComparer(rec.Schema(), p.cols)
				}
				side.cur = &pairBatch{rec: rec, alive: make([]bool, rec.NumRows()), size: rows.RecordSize(rec)}
				side.curRow = 0
				p.held += side.cur.size
			}
		}
		d, in := &p.sides[0], &p.sides[1]
		var err error
		switch {
		case d.cur == nil && in.cur == nil:
			alignedRows.Add(p.runRows)
			return p.flush()
		case d.cur == nil:
			_, err = p.hashRows(1, pairChunk)
		case in.cur == nil:
			_, err = p.hashRows(0, pairChunk)
		case !p.aligned:
			// The hash path only (tests compare it with the aligned path).
			s := 0
			if d.rows > in.rows {
				s = 1
			}
			_, err = p.hashRows(s, pairChunk)
		default:
			n := min(int(d.cur.rec.NumRows())-d.curRow, int(in.cur.rec.NumRows())-in.curRow, p.runLen)
			k := p.cmp.Run(d.cur.rec, d.curRow, in.cur.rec, in.curRow, n)
			if k == n {
				p.runLen = min(2*p.runLen, maxRun)
			} else {
				p.runLen = minRun
			}
			if k > 0 {
				p.runRows += int64(k)
				err = p.advance(0, k)
				if err == nil {
					err = p.advance(1, k)
				}
				break
			}
			err = p.resync()
		}
		if err != nil {
			p.release()
			return err
		}
	}
}

// resync passes the rows at which the sides do not line up through the
// hash path, choosing the side that lets them line up again soonest: the
// side with a row the other lacks when the next rows say so (one row
// deleted, inserted or duplicated), else the side that is behind (whose
// rows find their partners among the other side's unmatched rows: the
// other side has read past them, e.g. after a block of new rows), else
// both (an updated row).
func (p *pairer) resync() error {
	d, in := p.sides[0].cur, p.sides[1].cur
	i, j := p.sides[0].curRow, p.sides[1].curRow
	switch {
	case p.behind >= 0:
		return p.hashOne(p.behind)
	case j+1 < len(in.alive) && p.cmp.Equal(d.rec, i, in.rec, j+1):
		return p.hashOne(1)
	case i+1 < len(d.alive) && p.cmp.Equal(d.rec, i+1, in.rec, j):
		return p.hashOne(0)
	}
	if err := p.hashOne(0); err != nil || p.behind == 0 {
		return err
	}
	return p.hashOne(1)
}

// hashOne passes the next row of side s through the hash path and notes
// whether side s is behind: its row found a partner on the other side.
func (p *pairer) hashOne(s int) error {
	hits, err := p.hashRows(s, 1)
	switch {
	case hits > 0:
		p.behind = s
	case p.behind == s:
		p.behind = -1
	}
	return err
}

// hashRows passes up to m rows of side s's current batch through the
// hash path: each cancels with an equal unmatched row of the other side,
// or joins side s's index. It returns how many cancelled.
func (p *pairer) hashRows(s, m int) (int, error) {
	me, other := &p.sides[s], &p.sides[1-s]
	b := me.cur
	n := int(b.rec.NumRows())
	lo := me.curRow
	hi := min(lo+m, n)
	if b.hashes == nil {
		b.hashes = make([]uint64, n)
	}
	p.hash(b.rec, p.cols, lo, hi, b.hashes[lo:hi])
	hits := 0
	for i := lo; i < hi; i++ {
		h := b.hashes[i]
		if p.cancel(other, h, b.rec, i) {
			hits++
			continue
		}
		b.alive[i] = true
		b.nAlive++
		me.push(h, pairRef{b, int32(i)})
	}
	return hits, p.advance(s, hi-lo)
}

// advance moves side s's current batch on by k rows that are dealt with
// (cancelled or indexed). A batch whose rows are all dealt with joins the
// queue, or is freed when none of them is unmatched.
func (p *pairer) advance(s, k int) error {
	me := &p.sides[s]
	b := me.cur
	me.rows += int64(k)
	me.curRow += k
	if me.curRow < int(b.rec.NumRows()) {
		return nil
	}
	me.cur = nil
	b.done = true
	if b.nAlive == 0 {
		p.free(b)
		return nil
	}
	if b.nAlive*compactFraction <= len(b.alive) {
		if err := p.compact(s, b); err != nil {
			return err
		}
	}
	p.seq++
	b.seq = p.seq
	me.queue = append(me.queue, b)
	p.peak = max(p.peak, p.held)
	for p.held > p.budget {
		evicted, err := p.evictOldest()
		if err != nil {
			return err
		}
		if !evicted {
			break // only the batches being matched are left
		}
	}
	// Drop fully matched batches from the front of the queues, so that a
	// long rewrite does not keep a record per batch it has read.
	for s := range p.sides {
		q := p.sides[s].queue
		for len(q) > 0 && q[0].rec == nil {
			q[0] = nil
			q = q[1:]
		}
		p.sides[s].queue = q
	}
	return nil
}

// compactFraction: a batch done with at most 1/compactFraction of its rows
// unmatched is compacted before it is queued (see compact).
const compactFraction = 4

// compact replaces the record of batch b of side s, done and queued next,
// by its unmatched rows only, so that the window holds those rows rather
// than the whole decoded batch. A copy-on-write update of scattered rows
// leaves a few unmatched rows (the updated ones) in every batch: without
// this the window filled with whole batches up to its budget, nearly all
// of their rows cancelled. The rows, their order and their hashes stay
// the same; only their indexes in b change, and with them the refs of
// the index nodes that point at them.
func (p *pairer) compact(s int, b *pairBatch) error {
	sel, err := rows.Select(p.ctx, b.rec, b.alive)
	if err != nil {
		return err
	}
	side := &p.sides[s]
	hashes := make([]uint64, 0, b.nAlive)
	for i, alive := range b.alive {
		if !alive {
			continue
		}
		h := b.hashes[i]
		n, ok := side.head.get(h)
		for ok && n >= 0 && (side.nodes[n].ref.b != b || side.nodes[n].ref.i != int32(i)) {
			n = side.nodes[n].next
		}
		if !ok || n < 0 {
			sel.Release()
			return fmt.Errorf("changelog: pairing: unmatched row %d of a batch is missing from the index", i)
		}
		side.nodes[n].ref.i = int32(len(hashes))
		hashes = append(hashes, h)
	}
	b.rec.Release()
	b.rec = sel
	b.hashes = hashes
	b.alive = make([]bool, len(hashes))
	for i := range b.alive {
		b.alive[i] = true
	}
	p.held -= b.size
	b.size = rows.RecordSize(sel)
	p.held += b.size
	return nil
}

// free releases a batch all of whose rows found partners.
func (p *pairer) free(b *pairBatch) {
	b.rec.Release()
	b.rec, b.hashes, b.alive = nil, nil, nil
	p.held -= b.size
}

// cancel looks for an unmatched row of side other equal to row i of rec,
// whose hash is h, and when it finds one takes it out of the window.
func (p *pairer) cancel(other *pairSide, h uint64, rec arrow.RecordBatch, i int) bool {
	n, ok := other.head.get(h)
	if !ok {
		return false
	}
	for prev := int32(-1); n >= 0; prev, n = n, other.nodes[n].next {
		ref := other.nodes[n].ref
		if !p.cmp.Equal(rec, i, ref.b.rec, int(ref.i)) {
			continue
		}
		other.unlink(h, prev, n)
		b := ref.b
		b.alive[ref.i] = false
		if b.nAlive--; b.nAlive == 0 && b.done {
			// Every row of the batch found its partner: free it now; the
			// queue drops it when it reaches the front. (A batch still
			// being matched is freed when its last chunk is done.)
			p.free(b)
		}
		return true
	}
	return false
}

// evictOldest hands the unmatched rows of the oldest queued batch (of
// either side) to emit. It reports false when no batch is queued.
func (p *pairer) evictOldest() (bool, error) {
	for {
		s := -1
		for i := range p.sides {
			q := p.sides[i].queue
			if len(q) > 0 && (s < 0 || q[0].seq < p.sides[s].queue[0].seq) {
				s = i
			}
		}
		if s < 0 {
			return false, nil
		}
		side := &p.sides[s]
		b := side.queue[0]
		side.queue[0] = nil
		side.queue = side.queue[1:]
		if b.rec == nil {
			continue // fully matched, already freed
		}
		return true, p.evict(s, b)
	}
}

func (p *pairer) evict(s int, b *pairBatch) error {
	side := &p.sides[s]
	for i, alive := range b.alive {
		if !alive {
			continue
		}
		h := b.hashes[i]
		n, ok := side.head.get(h)
		if !ok {
			continue
		}
		prev := int32(-1)
		for n >= 0 && (side.nodes[n].ref.b != b || side.nodes[n].ref.i != int32(i)) {
			prev, n = n, side.nodes[n].next
		}
		if n >= 0 {
			side.unlink(h, prev, n)
		}
	}
	rec := b.rec
	b.rec = nil
	p.held -= b.size
	sel, err := rows.Select(p.ctx, rec, b.alive)
	rec.Release()
	if err != nil {
		return err
	}
	return p.emit(s, sel)
}

// flush evicts every retained batch, oldest first.
func (p *pairer) flush() error {
	for {
		evicted, err := p.evictOldest()
		if err != nil {
			p.release()
			return err
		}
		if !evicted {
			return nil
		}
	}
}

// release drops the retained batches after an error.
func (p *pairer) release() {
	for s := range p.sides {
		batches := p.sides[s].queue
		if cur := p.sides[s].cur; cur != nil {
			batches = append(batches, cur)
		}
		for _, b := range batches {
			if b.rec != nil {
				b.rec.Release()
				b.rec = nil
			}
		}
		p.sides[s].queue = nil
		p.sides[s].cur = nil
		p.sides[s].head = newHashIndex()
		p.sides[s].nodes = nil
		p.sides[s].free = -1
	}
	p.held = 0
}
