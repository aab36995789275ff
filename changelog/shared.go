package changelog

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/internal/scan"
)

// useShared turns on the shared decoding of a rewrite's kept columns;
// off, both files of a rewrite are decoded whole (tests compare both).
var useShared = true

// sharedColumns counts the columns of old files that rewrites took from
// the new files instead of decoding them (tests).
var sharedColumns atomic.Int64

// maxPairTries bounds the files a removed file is compared with when the
// manifests' column bounds cannot tell its rewrite.
const maxPairTries = 4

// filePair is a removed data file and the added file that rewrote it,
// whose columns same (positions in the schema) are stored in
// byte-identical chunks (scan.Reader.SameColumns): their values are the
// new file's, row for row, and only the columns diff of the old file are
// decoded.
type filePair struct {
	old, new *scan.Entry
	same     []bool   // by position in the schema
	diff     []string // the other columns' names, in schema order
}

// pairFiles finds, among the removed and added data files of a rewrite
// that no delete file touches, the pairs whose files keep columns
// byte-identical; the files left over are read as before. A copy-on-write
// rewrite that keeps row order (floe's UPDATE does) pairs every file it
// rewrote without deleting rows.
func (src *source) pairFiles(ctx context.Context, removed, added []*scan.Entry, beforeDeletes, afterDeletes func(*scan.Entry) scan.Deletes) (pairs []filePair, restRemoved, restAdded []*scan.Entry, err error) {
	r := src.c.reader
	fields := r.Schema().Fields()
	taken := make([]bool, len(added))
	for _, old := range removed {
		var pair *filePair
		if beforeDeletes(old).Empty() && localFile(old.Path()) {
			tries := 0
			for j, nw := range added {
				if taken[j] || nw.File.Count() != old.File.Count() || !afterDeletes(nw).Empty() || !localFile(nw.Path()) {
					continue
				}
				agree, known := boundsAgree(old, nw)
				if !agree || !known && tries >= maxPairTries {
					continue
				}
				tries++
				same, err := r.SameColumns(ctx, old.File, nw.File)
				if err != nil {
					return nil, nil, nil, err
				}
				if len(same) == 0 {
					continue
				}
				p := filePair{old: old, new: nw, same: make([]bool, len(fields))}
				for k, f := range fields {
					if p.same[k] = slices.Contains(same, f.Name); !p.same[k] {
						p.diff = append(p.diff, f.Name)
					}
				}
				taken[j], pair = true, &p
				break
			}
		}
		if pair != nil {
			pairs = append(pairs, *pair)
		} else {
			restRemoved = append(restRemoved, old)
		}
	}
	for j, nw := range added {
		if !taken[j] {
			restAdded = append(restAdded, nw)
		}
	}
	return pairs, restRemoved, restAdded, nil
}

// localFile reports whether path is on this machine's file system. Only
// there are rewrites compared: comparing reads the kept columns of both
// files once more, which costs little from the page cache and a second
// download of the new file from object storage.
func localFile(path string) bool {
	return strings.HasPrefix(path, "/") || strings.HasPrefix(path, "file:")
}

// boundsAgree reports whether the manifests' column bounds of a and b
// agree for some column (known: both have bounds): files that keep a
// column byte-identical have its bounds equal.
func boundsAgree(a, b *scan.Entry) (agree, known bool) {
	la, ua := a.File.LowerBoundValues(), a.File.UpperBoundValues()
	lb, ub := b.File.LowerBoundValues(), b.File.UpperBoundValues()
	if len(la) == 0 || len(lb) == 0 {
		return true, false
	}
	for id, lo := range la {
		if lo2, ok := lb[id]; ok && bytes.Equal(lo, lo2) && bytes.Equal(ua[id], ub[id]) {
			return true, true
		}
	}
	return false, true
}

// sharedRewrite reads the pairs of a rewrite once for both sides of the
// pairer: for each pair, the new file whole (its batches go to the
// inserts) and the old file's diff columns alone, the old rows made of
// those and of the new file's same columns (to the deletes). One
// goroutine decodes, a few batches ahead; each side takes its batches
// from a queue that the other side's reads fill, so neither blocks the
// other.
type sharedRewrite struct {
	ctx    context.Context
	cancel context.CancelFunc
	r      *scan.Reader
	pairs  []filePair
	ch     chan sideBatch
	once   sync.Once
	mu     sync.Mutex
	queue  [2][]arrow.RecordBatch
	err    error
	closed bool
}

type sideBatch struct {
	side int
	rec  arrow.RecordBatch
	err  error
}

func newSharedRewrite(ctx context.Context, r *scan.Reader, pairs []filePair) *sharedRewrite {
	ctx, cancel := context.WithCancel(ctx)
	return &sharedRewrite{ctx: ctx, cancel: cancel, r: r, pairs: pairs, ch: make(chan sideBatch, 2*prefetchBatches)}
}

// side is the stream of side s (0: the old files' rows, 1: the new
// files'). The consumer takes each batch.
func (sh *sharedRewrite) side(s int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for {
			rec, err, ok := sh.next(s)
			if !ok || !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

func (sh *sharedRewrite) next(s int) (arrow.RecordBatch, error, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.once.Do(func() { go sh.produce() })
	for {
		if q := sh.queue[s]; len(q) > 0 {
			rec := q[0]
			sh.queue[s] = q[1:]
			return rec, nil, true
		}
		if sh.err != nil {
			return nil, sh.err, true
		}
		if sh.closed {
			return nil, nil, false
		}
		select {
		case it, ok := <-sh.ch:
			switch {
			case !ok:
				sh.closed = true
			case it.err != nil:
				sh.err = it.err
			default:
				sh.queue[it.side] = append(sh.queue[it.side], it.rec)
			}
		case <-sh.ctx.Done():
			sh.err = sh.ctx.Err()
		}
	}
}

// close stops the reading and releases the batches no side took; it
// waits for the reading goroutine to end.
func (sh *sharedRewrite) close() {
	sh.cancel()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	started := true
	sh.once.Do(func() { started = false }) // not started: never now
	for _, q := range sh.queue {
		for _, rec := range q {
			rec.Release()
		}
	}
	sh.queue = [2][]arrow.RecordBatch{}
	if started && !sh.closed {
		for it := range sh.ch {
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}
	sh.closed = true
}

// send hands rec to side s; false when the consumer has stopped (rec is
// then released).
func (sh *sharedRewrite) send(s int, rec arrow.RecordBatch) bool {
	select {
	case sh.ch <- sideBatch{side: s, rec: rec}:
		return true
	case <-sh.ctx.Done():
		rec.Release()
		return false
	}
}

func (sh *sharedRewrite) produce() {
	defer close(sh.ch)
	defer safe.Recover(func(err error) { safe.Send(sh.ctx, sh.ch, sideBatch{err: err}) })
	for _, p := range sh.pairs {
		if err := sh.readPair(p); err != nil {
			safe.Send(sh.ctx, sh.ch, sideBatch{err: err})
			return
		}
		if sh.ctx.Err() != nil {
			return
		}
	}
}

// readPair reads pair p: the new file's batches go to side 1 as they are
// read, and each batch of the old file's diff columns goes to side 0
// with the same rows of the new file's same columns beside it.
func (sh *sharedRewrite) readPair(p filePair) error {
	sharedColumns.Add(int64(len(p.same) - len(p.diff)))
	_, newRows, err := sh.r.Live(sh.ctx, p.new.File, scan.Deletes{}, nil)
	if err != nil {
		return err
	}
	nextNew, stopNew := iter.Pull2(newRows)
	defer stopNew()
	if len(p.diff) == 0 {
		// Every column kept: the old rows are the new rows.
		for {
			b, err, ok := nextNew()
			if !ok {
				return nil
			}
			if err != nil {
				return err
			}
			b.Rec.Retain()
			if !sh.send(1, b.Rec) {
				b.Release()
				return nil
			}
			if !sh.send(0, b.Rec) {
				return nil
			}
		}
	}
	_, oldRows, err := sh.r.Live(sh.ctx, p.old.File, scan.Deletes{}, p.diff)
	if err != nil {
		return err
	}
	nextOld, stopOld := iter.Pull2(oldRows)
	defer stopOld()
	var pend []arrow.RecordBatch // new batches whose rows the old side has not all taken
	var off int64                // rows of pend[0] taken
	defer func() {
		for _, rec := range pend {
			rec.Release()
		}
	}()
	for {
		ob, err, ok := nextOld()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		n := ob.Rec.NumRows()
		have := -off
		for _, rec := range pend {
			have += rec.NumRows()
		}
		for have < n {
			nb, err, ok := nextNew()
			if err != nil {
				ob.Release()
				return err
			}
			if !ok {
				ob.Release()
				return fmt.Errorf("data files %s and %s hold the same number of rows by their metadata, not when read", p.old.Path(), p.new.Path())
			}
			nb.Rec.Retain()
			pend = append(pend, nb.Rec)
			have += nb.Rec.NumRows()
			if !sh.send(1, nb.Rec) {
				ob.Release()
				return nil
			}
		}
		rec, err := joinColumns(pend, off, n, ob.Rec, p.same)
		ob.Release()
		if err != nil {
			return err
		}
		// Drop the new batches the old side has taken.
		off += n
		for len(pend) > 0 && off >= pend[0].NumRows() {
			off -= pend[0].NumRows()
			pend[0].Release()
			pend = pend[1:]
		}
		if !sh.send(0, rec) {
			return nil
		}
	}
	if len(pend) > 0 {
		return fmt.Errorf("data files %s and %s hold the same number of rows by their metadata, not when read", p.old.Path(), p.new.Path())
	}
	nb, err, ok := nextNew()
	if err != nil {
		return err
	}
	if ok {
		nb.Release()
		return fmt.Errorf("data files %s and %s hold the same number of rows by their metadata, not when read", p.old.Path(), p.new.Path())
	}
	return nil
}

// joinColumns is a batch of the n rows of pend from row off of pend[0]
// on, its same columns taken from pend, the others from diff (in order).
func joinColumns(pend []arrow.RecordBatch, off, n int64, diff arrow.RecordBatch, same []bool) (arrow.RecordBatch, error) {
	sch := pend[0].Schema()
	cols := make([]arrow.Array, len(same))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	d := 0
	for k := range same {
		if !same[k] {
			cols[k] = diff.Column(d)
			cols[k].Retain()
			d++
			continue
		}
		var parts []arrow.Array
		start, left := off, n
		for _, rec := range pend {
			if left == 0 {
				break
			}
			if start >= rec.NumRows() {
				start -= rec.NumRows()
				continue
			}
			m := min(left, rec.NumRows()-start)
			parts = append(parts, array.NewSlice(rec.Column(k), start, start+m))
			start, left = 0, left-m
		}
		if len(parts) == 1 {
			cols[k] = parts[0]
			continue
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		for _, a := range parts {
			a.Release()
		}
		if err != nil {
			return nil, err
		}
		cols[k] = c
	}
	return array.NewRecordBatch(sch, cols, n), nil
}

// concatSeq is a, then b.
func concatSeq(a, b iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range a {
			if !yield(rec, err) || err != nil {
				return
			}
		}
		for rec, err := range b {
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}
