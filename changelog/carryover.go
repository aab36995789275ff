package changelog

import (
	"context"
	"iter"

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
// The sides are matched a chunk of rows at a time, alternately. The window
// holds whole batches: a batch stays while any of its rows is unmatched,
// and when the retained batches pass the budget the oldest is evicted, its
// unmatched rows handed to emit. Rows are matched by a 64-bit
// hash of their values (rows.HashKeys) and then compared value by value
// (rows.KeysEqual), so a hash collision costs a comparison, never a wrong
// cancellation.
type pairer struct {
	ctx    context.Context
	cols   []int
	budget int64
	emit   func(arrow.RecordBatch) error // takes the batch
	sides  [2]pairSide                   // 0: deletes, 1: inserts
	held   int64                         // bytes of the retained batches
	seq    int64
	hash   func(rec arrow.RecordBatch, cols []int, out []uint64) []uint64 // rows.HashKeys; tests make it collide
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
	hashes []uint64
	alive  []bool // matched so far and unmatched
	nAlive int
	size   int64
	done   bool // every row has been matched against the other side
}

type pairRef struct {
	b *pairBatch
	i int32
}

func newPairer(ctx context.Context, cols []int, budget int64, emit func(arrow.RecordBatch) error) *pairer {
	p := &pairer{ctx: ctx, cols: cols, budget: budget, emit: emit, hash: rows.HashKeys}
	for s := range p.sides {
		p.sides[s].head = newHashIndex()
		p.sides[s].free = -1
	}
	return p
}

// pairChunk is how many rows of one side are matched before the other
// side's turn: small, so that on an aligned rewrite the unmatched rows in
// the index stay few (and the index in cache) however large the batches.
const pairChunk = 1024

// run reads dels and ins, matching pairChunk rows at a time of whichever
// side has matched fewer rows so that both advance together, and hands
// every row that is not cancelled to emit.
func (p *pairer) run(dels, ins iter.Seq2[arrow.RecordBatch, error]) error {
	next := [2]func() (arrow.RecordBatch, error, bool){}
	var stop [2]func()
	next[0], stop[0] = iter.Pull2(dels)
	defer stop[0]()
	next[1], stop[1] = iter.Pull2(ins)
	defer stop[1]()
	done := [2]bool{}
	for !done[0] || !done[1] {
		s := 1
		if !done[0] && (done[1] || p.sides[0].rows <= p.sides[1].rows) {
			s = 0
		}
		side := &p.sides[s]
		if side.cur == nil {
			rec, err, ok := next[s]()
			if !ok {
				done[s] = true
				continue
			}
			if err != nil {
				p.release()
				return err
			}
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			side.cur = &pairBatch{rec: rec, hashes: p.hash(rec, p.cols, nil), alive: make([]bool, rec.NumRows()), size: rows.RecordSize(rec)}
			side.curRow = 0
			p.held += side.cur.size
		}
		if err := p.step(s); err != nil {
			p.release()
			return err
		}
	}
	return p.flush()
}

// step matches the next pairChunk rows of side s's current batch against
// the unmatched rows of the other side, indexing those that find no
// partner. A batch whose rows are all matched joins the queue.
func (p *pairer) step(s int) error {
	me, other := &p.sides[s], &p.sides[1-s]
	b := me.cur
	n := len(b.hashes)
	end := min(me.curRow+pairChunk, n)
	for i := me.curRow; i < end; i++ {
		h := b.hashes[i]
		if p.cancel(other, h, b.rec, i) {
			continue
		}
		b.alive[i] = true
		b.nAlive++
		me.push(h, pairRef{b, int32(i)})
	}
	me.rows += int64(end - me.curRow)
	me.curRow = end
	if end < n {
		return nil
	}
	me.cur = nil
	b.done = true
	if b.nAlive == 0 {
		p.free(b)
		return nil
	}
	p.seq++
	b.seq = p.seq
	me.queue = append(me.queue, b)
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
		if !rows.KeysEqual(rec, i, ref.b.rec, int(ref.i), p.cols) {
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
		return true, p.evict(side, b)
	}
}

func (p *pairer) evict(side *pairSide, b *pairBatch) error {
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
	return p.emit(sel)
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
