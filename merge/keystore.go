package merge

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/bits"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/rows"
)

// errStop ends a callback loop early.
var errStop = errors.New("stop")

// keyMatcher finds the table rows whose key has an action.
type keyMatcher interface {
	// mark sets out[i] for each row i of keys (the key columns in key
	// order) whose key has an action, and notes the key as found. It may
	// be called concurrently.
	mark(keys arrow.RecordBatch, out []bool)
	// found is the number of distinct keys mark found.
	found() int64
	release()
}

// actionKeys are the keys of a change set that have an action, for
// finding their rows in the table: one matcher when they fit the budget,
// else several, each to be run over the table in turn.
type actionKeys interface {
	// filter is a conservative filter on the keys, for pruning files.
	filter(sc *iceberg.Schema) iceberg.BooleanExpression
	// matcher is the matcher of every key, or nil when the keys are in
	// several groups.
	matcher() keyMatcher
	// groups yields a matcher per group of the keys, one at a time, each
	// released once the next is asked for: the table is read once per
	// group.
	groups(ctx context.Context) iter.Seq2[keyMatcher, error]
	// rows yields the keys, the key columns in key order. The caller
	// releases each batch.
	rows(ctx context.Context) iter.Seq2[arrow.RecordBatch, error]
	count() int64
	release()
}

// mark implements keyMatcher for the actions of a change set held in
// memory.
func (s *actionSet) mark(keys arrow.RecordBatch, out []bool) {
	slots, _ := s.lookup(keys, nil, nil)
	for i, slot := range slots {
		if slot >= 0 {
			out[i] = true
			s.matched[slot].Store(true)
		}
	}
}

func (s *actionSet) found() int64 { return s.countMatched() }

// memKeys are the action keys of a change set held in memory whole: its
// actionSet indexes the change batches themselves. A single integer-like
// key is matched against a bitmap of the keys' values instead, a bit test
// per table row.
type memKeys struct {
	cs     *changeSet
	recs   []arrow.RecordBatch
	acts   *actionSet
	budget int64
	stats  *keyStats
	one    keyMatcher
}

// keyStats sums up the action keys, once.
func (m *memKeys) keyStats() *keyStats {
	if m.stats == nil {
		types := make([]arrow.DataType, len(m.cs.keyCols))
		for k, c := range m.cs.keyCols {
			types[k] = m.cs.schema.Field(c).Type
		}
		m.stats = newKeyStats(types, m.budget/4)
		for a := range m.acts.all {
			rec := m.recs[a.b]
			for k, c := range m.cs.keyCols {
				m.stats.cols[k].add(rec.Column(c), a.i)
			}
		}
	}
	return m.stats
}

func (m *memKeys) filter(sc *iceberg.Schema) iceberg.BooleanExpression {
	return m.keyStats().filter(sc, m.cs.keyNames)
}

func (m *memKeys) matcher() keyMatcher {
	if m.one == nil {
		m.one = m.acts
		if len(m.cs.keyCols) == 1 {
			if c := m.keyStats().cols[0]; c.like != nil && c.distinct() >= 0 {
				m.one = newIntMatcher(c, m.budget)
			}
		}
	}
	return m.one
}

func (m *memKeys) groups(context.Context) iter.Seq2[keyMatcher, error] {
	return func(yield func(keyMatcher, error) bool) { yield(m.matcher(), nil) }
}

func (m *memKeys) count() int64 { return int64(m.acts.n) }

func (m *memKeys) rows(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		byBatch := make([][]int64, len(m.recs))
		for a := range m.acts.all {
			byBatch[a.b] = append(byBatch[a.b], int64(a.i))
		}
		for b, idx := range byBatch {
			if len(idx) == 0 {
				continue
			}
			k := keyColumns(m.recs[b], m.cs.keyCols)
			t, err := rows.Take(ctx, k, idx)
			k.Release()
			if !yield(t, err) || err != nil {
				return
			}
		}
	}
}

func (m *memKeys) release() {
	if m.one != nil && m.one != keyMatcher(m.acts) {
		m.one.release()
	}
	m.acts.release()
	releaseAll(m.recs)
}

// keyStore gathers the action keys of a spilled change set, partition by
// partition as it is reduced: for one integer-like key column as a bitmap
// of its values (while the bitmap fits the budget), else as rows of the
// key columns in groups that each fit the budget with their index, all
// but the last spilled.
type keyStore struct {
	schema *arrow.Schema // the key columns, in key order
	budget int64
	dir    string
	names  []string
	stats  *keyStats
	ints   *colStats // one integer-like key: stats.cols[0], its bitmap the keys
	n      int64
	cur    []arrow.RecordBatch // the group being filled
	curMem int64
	spills []*rows.SpillFile // groups written out
	one    keyMatcher        // matcher(), made once
}

// indexBytesPerKey is what a keyIndex costs per key beyond the key's
// values: its table (at most half full), Bloom filter and row reference,
// and the found flag.
const indexBytesPerKey = 8*4 + 2 + 8 + 1

func newKeyStore(schema *arrow.Schema, names []string, budget int64, dir string) *keyStore {
	types := make([]arrow.DataType, schema.NumFields())
	for i, f := range schema.Fields() {
		types[i] = f.Type
	}
	ks := &keyStore{schema: schema, budget: budget, dir: dir, names: names, stats: newKeyStats(types, budget/4)}
	if len(types) == 1 && ks.stats.cols[0].like != nil {
		// The bitmap is the keys: keyStore, not colStats, gives it up.
		ks.ints = ks.stats.cols[0]
		ks.ints.limit = 1 << 62
	}
	return ks
}

// add adds the keys of rec (key columns in key order); the caller keeps
// its reference.
func (ks *keyStore) add(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	for k, c := range ks.stats.cols {
		col := rec.Column(k)
		for i := range n {
			c.add(col, i)
		}
	}
	ks.n += int64(n)
	if ks.ints != nil {
		if ks.ints.flush(); int64(ks.ints.ints.GetSizeInBytes()) <= ks.budget/2 {
			return nil
		}
		// Keys so scattered that their bitmap outgrows the budget: they
		// become rows in groups, and the filter keeps their bounds only.
		c := ks.ints
		ks.ints = nil
		for rec, err := range ks.intRows() {
			if err == nil {
				err = ks.addRows(rec)
				rec.Release()
			}
			if err != nil {
				return err
			}
		}
		c.ints, c.buf = nil, nil
		return nil
	}
	return ks.addRows(rec)
}

// addRows adds key rows to the current group.
func (ks *keyStore) addRows(rec arrow.RecordBatch) error {
	n := rec.NumRows()
	rec.Retain()
	ks.cur = append(ks.cur, rec)
	ks.curMem += rows.RecordSize(rec) + n*indexBytesPerKey
	if ks.curMem > ks.budget {
		return ks.spillGroup()
	}
	return nil
}

func (ks *keyStore) spillGroup() error {
	f, err := rows.CreateSpillFile(ks.dir, ks.schema)
	if err != nil {
		return err
	}
	for _, r := range ks.cur {
		if err == nil {
			err = f.Write(r)
		}
		r.Release()
	}
	ks.cur, ks.curMem = nil, 0
	if err == nil {
		err = f.Finish()
	}
	ks.spills = append(ks.spills, f)
	return err
}

// groupCount is the number of groups the keys are matched in.
func (ks *keyStore) groupCount() int {
	if ks.ints != nil || len(ks.spills) == 0 {
		return 1
	}
	n := len(ks.spills)
	if len(ks.cur) > 0 {
		n++
	}
	return n
}

func (ks *keyStore) spilledBytes() int64 {
	var n int64
	for _, f := range ks.spills {
		n += f.Bytes()
	}
	return n
}

func (ks *keyStore) filter(sc *iceberg.Schema) iceberg.BooleanExpression {
	return ks.stats.filter(sc, ks.names)
}

func (ks *keyStore) matcher() keyMatcher {
	switch {
	case ks.one != nil:
	case ks.ints != nil:
		ks.one = newIntMatcher(ks.ints, ks.budget)
	case len(ks.spills) == 0:
		ks.one = newGroupMatcher(ks.cur)
	}
	return ks.one
}

func (ks *keyStore) count() int64 { return ks.n }

func (ks *keyStore) groups(ctx context.Context) iter.Seq2[keyMatcher, error] {
	return func(yield func(keyMatcher, error) bool) {
		if m := ks.matcher(); m != nil {
			yield(m, nil)
			return
		}
		for _, f := range ks.spills {
			recs, err := f.ReadAll()
			if err != nil {
				yield(nil, err)
				return
			}
			m := newGroupMatcher(recs)
			releaseAll(recs) // the matcher holds its own references
			ok := yield(m, nil)
			m.release()
			if !ok {
				return
			}
		}
		if len(ks.cur) > 0 {
			m := newGroupMatcher(ks.cur)
			yield(m, nil)
			m.release()
		}
	}
}

func (ks *keyStore) rows(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		if ks.ints != nil {
			for rec, err := range ks.intRows() {
				if !yield(rec, err) || err != nil {
					return
				}
			}
			return
		}
		for _, f := range ks.spills {
			stop := false
			err := f.Each(func(rec arrow.RecordBatch) error {
				rec.Retain()
				if !yield(rec, nil) {
					stop = true
					return errStop
				}
				return nil
			})
			if stop {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
		}
		for _, r := range ks.cur {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}

// intRows yields the keys of the integer bitmap as rows, in order.
func (ks *keyStore) intRows() iter.Seq2[arrow.RecordBatch, error] {
	c := ks.stats.cols[0]
	return func(yield func(arrow.RecordBatch, error) bool) {
		c.flush()
		const chunk = 64 << 10
		it := c.ints.Iterator()
		f := ks.schema.Field(0)
		for it.HasNext() {
			vals := make([]int64, 0, chunk)
			for len(vals) < chunk && it.HasNext() {
				vals = append(vals, bitsInt(it.Next()))
			}
			arr, err := intArray(f.Type, vals)
			if err != nil {
				yield(nil, err)
				return
			}
			rec := array.NewRecordBatch(ks.schema, []arrow.Array{arr}, int64(len(vals)))
			arr.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
}

func (ks *keyStore) release() {
	if ks.one != nil {
		ks.one.release()
		ks.one = nil
	}
	releaseAll(ks.cur)
	ks.cur = nil
	for _, f := range ks.spills {
		f.Remove()
	}
	ks.spills = nil
}

// intArray builds an array of type dt (an integer-like type) of vals.
func intArray(dt arrow.DataType, vals []int64) (arrow.Array, error) {
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	b.Reserve(len(vals))
	switch b := b.(type) {
	case *array.Int64Builder:
		b.AppendValues(vals, nil)
	case *array.Int32Builder:
		for _, v := range vals {
			b.UnsafeAppend(int32(v))
		}
	case *array.Date32Builder:
		for _, v := range vals {
			b.UnsafeAppend(arrow.Date32(v))
		}
	case *array.TimestampBuilder:
		for _, v := range vals {
			b.UnsafeAppend(arrow.Timestamp(v))
		}
	default:
		return nil, fmt.Errorf("key column of type %s is not integer-like", dt)
	}
	return b.NewArray(), nil
}

// groupMatcher matches against one group of key rows by a keyIndex.
type groupMatcher struct {
	idx     *keyIndex
	matched []atomic.Bool
}

func newGroupMatcher(recs []arrow.RecordBatch) *groupMatcher {
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	all := seqInts(0)
	if len(recs) > 0 {
		all = seqInts(int(recs[0].NumCols()))
	}
	idx := newKeyIndex(recs, all, n)
	var hashes []uint64
	for b, r := range recs {
		hashes = rows.HashKeys(r, all, hashes)
		for i, h := range hashes {
			idx.insert(h, b, i)
		}
	}
	return &groupMatcher{idx: idx, matched: make([]atomic.Bool, len(idx.rowOf))}
}

func (g *groupMatcher) mark(keys arrow.RecordBatch, out []bool) {
	hashes := rows.HashKeys(keys, g.idx.keyPos, nil)
	for i, h := range hashes {
		if slot := g.idx.find(h, keys, i); slot >= 0 {
			out[i] = true
			g.matched[slot].Store(true)
		}
	}
}

func (g *groupMatcher) found() int64 {
	var n int64
	for i := range g.matched {
		if g.matched[i].Load() {
			n++
		}
	}
	return n
}

func (g *groupMatcher) release() { g.idx.release() }

// intMatcher matches one integer-like key column against a set of values:
// a flat bitmap over their range when it is small enough, else the
// values' roaring bitmap.
type intMatcher struct {
	set *roaring64.Bitmap
	// flat: bit x-lo of words is set for each value x; found the same for
	// the values found.
	flat, foundBits []uint64
	lo, hi          int64
	mu              sync.Mutex
	foundSet        *roaring64.Bitmap
}

func newIntMatcher(c *colStats, budget int64) *intMatcher {
	c.distinct()
	m := &intMatcher{set: c.ints, lo: c.lo, hi: c.hi}
	if c.n == 0 {
		m.hi = m.lo - 1
		return m
	}
	// Two flat bitmaps of span bits take span/4 bytes: within half the
	// budget, and for keys no sparser than one in 256 values, they replace
	// the roaring bitmap's lookups by a bit test.
	if span := uint64(c.hi) - uint64(c.lo); span < uint64(budget)*2 && span/4 <= 64*uint64(c.n) {
		words := span/64 + 1
		m.flat, m.foundBits = make([]uint64, words), make([]uint64, words)
		it := c.ints.Iterator()
		for it.HasNext() {
			d := uint64(bitsInt(it.Next())) - uint64(c.lo)
			m.flat[d/64] |= 1 << (d % 64)
		}
		return m
	}
	m.foundSet = roaring64.New()
	return m
}

func (m *intMatcher) mark(keys arrow.RecordBatch, out []bool) {
	col := keys.Column(0)
	if a, ok := col.(*array.Int64); ok && m.flat != nil && a.NullN() == 0 {
		// The common case: a long key, a dense set.
		for i, x := range a.Int64Values()[:len(out)] {
			if x < m.lo || x > m.hi {
				continue
			}
			d := uint64(x) - uint64(m.lo)
			w, bit := d/64, uint64(1)<<(d%64)
			if m.flat[w]&bit != 0 {
				out[i] = true
				if atomic.LoadUint64(&m.foundBits[w])&bit == 0 {
					atomic.OrUint64(&m.foundBits[w], bit)
				}
			}
		}
		return
	}
	var local []uint64
	for i := range out {
		x, _ := intValue(col, i)
		if x < m.lo || x > m.hi || col.IsNull(i) {
			continue
		}
		if m.flat != nil {
			d := uint64(x) - uint64(m.lo)
			w, bit := d/64, uint64(1)<<(d%64)
			if m.flat[w]&bit != 0 {
				out[i] = true
				if atomic.LoadUint64(&m.foundBits[w])&bit == 0 {
					atomic.OrUint64(&m.foundBits[w], bit)
				}
			}
			continue
		}
		if m.set.Contains(intBits(x)) {
			out[i] = true
			local = append(local, intBits(x))
		}
	}
	if len(local) > 0 {
		m.mu.Lock()
		m.foundSet.AddMany(local)
		m.mu.Unlock()
	}
}

func (m *intMatcher) found() int64 {
	if m.flat != nil {
		n := 0
		for _, w := range m.foundBits {
			n += bits.OnesCount64(w)
		}
		return int64(n)
	}
	if m.foundSet == nil {
		return 0
	}
	return int64(m.foundSet.GetCardinality())
}

func (m *intMatcher) release() { m.flat, m.foundBits = nil, nil }
