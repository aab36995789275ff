package rows

import (
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// DefaultMemoryBudget is the memory a Partitioner holds before it spills.
const DefaultMemoryBudget = 256 << 20

// fanout is the number of partitions of one level; partitionBits of the
// key hash choose among them, different bits at each level.
const (
	partitionBits = 6
	fanout        = 1 << partitionBits
	// maxLevel is the deepest repartitioning: past it the hash has no bits
	// left to split by.
	maxLevel = 64/partitionBits - 1
)

// PartitionOptions configure a Partitioner.
type PartitionOptions struct {
	// Budget is the memory of the rows the partitioner holds before it
	// spills, and the most a partition it hands back holds: a spilled
	// partition larger than the budget is partitioned again by other bits
	// of the key hash, as often as needed, before it is read back. Only
	// rows whose keys all have one hash (one key, as good as always) are
	// handed back larger. <= 0 means DefaultMemoryBudget.
	Budget int64
	// TempDir is where the spill folder is created ("" = os.TempDir()).
	TempDir string
	// Whole keeps the rows as they are added, unpartitioned, while they fit
	// the budget: if nothing spills, Partitions hands back every row as one
	// partition, in the order added, without a copy. Rows are partitioned
	// when they first spill.
	Whole bool
	// Combine, when set, is applied to the rows of one partition before
	// they are spilled, and may reduce them: it takes the records it is
	// given and returns the rows to spill in their place. It must keep the
	// rows of a key together and in order (it sees every row of a key that
	// the partition holds at that moment, not every row of the key).
	Combine func(ctx context.Context, recs []arrow.RecordBatch) ([]arrow.RecordBatch, error)
}

// Partitioner hash-partitions rows by a key and hands back each partition
// whole, so that rows with equal keys can be processed together. While its
// buffered rows stay under the memory budget nothing touches the disk; past
// it, partitions are spilled to Arrow IPC files in a temporary folder and
// read back one at a time, a partition larger than the budget being split
// again (recursively) first, so peak memory is about the budget. Rows keep
// the order they were added in within a partition. It is not safe for
// concurrent use.
type Partitioner struct {
	schema  *arrow.Schema
	keyCols []int
	o       PartitionOptions
	level   int // which bits of the hash pick the partition

	whole    []arrow.RecordBatch // Whole, before the first spill
	mem      [][]arrow.RecordBatch
	memBytes int64
	dir      string // spill folder, created on first spill
	parts    []*SpillFile
	stats    []partStats
	hashes   []uint64
	// spilled counts the bytes written to spill files, repartitioned the
	// partitions split again, by this partitioner and its children.
	spilled, repartitioned int64
}

// partStats describe the rows a partition received.
type partStats struct {
	rows      int64
	firstHash uint64
	mixed     bool // rows of more than one hash
}

func (s *partStats) add(h uint64) {
	if s.rows == 0 {
		s.firstHash = h
	} else if h != s.firstHash {
		s.mixed = true
	}
	s.rows++
}

// NewPartitioner returns a partitioner of rows of schema, keyed by the
// values of keyCols with AppendKey's equality (hashed with HashKeys),
// holding budget bytes before it spills (<= 0: DefaultMemoryBudget) into
// a folder under tmpDir ("" = os.TempDir()).
func NewPartitioner(schema *arrow.Schema, keyCols []int, budget int64, tmpDir string) *Partitioner {
	return NewPartitionerWith(schema, keyCols, PartitionOptions{Budget: budget, TempDir: tmpDir})
}

// NewPartitionerWith returns a partitioner of rows of schema keyed by
// keyCols, configured by o.
func NewPartitionerWith(schema *arrow.Schema, keyCols []int, o PartitionOptions) *Partitioner {
	if o.Budget <= 0 {
		o.Budget = DefaultMemoryBudget
	}
	return &Partitioner{schema: schema, keyCols: keyCols, o: o,
		mem: make([][]arrow.RecordBatch, fanout), stats: make([]partStats, fanout)}
}

// Spilled reports whether any rows went to disk.
func (p *Partitioner) Spilled() bool { return p.parts != nil }

// SpilledBytes is the number of bytes written to spill files so far,
// repartitioning included.
func (p *Partitioner) SpilledBytes() int64 { return p.spilled }

// Repartitioned is the number of spilled partitions that were over the
// budget and split again by other bits of the key hash.
func (p *Partitioner) Repartitioned() int64 { return p.repartitioned }

func (p *Partitioner) partOf(h uint64) int {
	return int(h>>(partitionBits*p.level)) & (fanout - 1)
}

// Add adds the rows of rec (the caller keeps its reference).
func (p *Partitioner) Add(ctx context.Context, rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if p.o.Whole && p.parts == nil {
		rec.Retain()
		p.whole = append(p.whole, rec)
		p.memBytes += RecordSize(rec)
		if p.memBytes <= p.o.Budget {
			return nil
		}
		held := p.whole
		p.whole = nil
		p.memBytes = 0
		for _, r := range held {
			err := p.route(ctx, r)
			r.Release()
			if err != nil {
				releaseAll(held)
				return err
			}
		}
		return p.spill(ctx)
	}
	if err := p.route(ctx, rec); err != nil {
		return err
	}
	if p.memBytes > p.o.Budget {
		return p.spill(ctx)
	}
	return nil
}

// route adds the rows of rec to the in-memory partitions.
func (p *Partitioner) route(ctx context.Context, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	p.hashes = HashKeys(rec, p.keyCols, p.hashes)
	partOf := make([]int32, n)
	counts := make([]int, fanout)
	for i, h := range p.hashes {
		part := p.partOf(h)
		partOf[i] = int32(part)
		counts[part]++
		p.stats[part].add(h)
	}
	if counts[partOf[0]] == n {
		rec.Retain()
		p.mem[partOf[0]] = append(p.mem[partOf[0]], rec)
		p.memBytes += RecordSize(rec)
		return nil
	}
	// NB: one Take puts the rows in partition order (stable, so rows keep
	// their order within a partition) and each partition gets a zero-copy
	// slice of it; a Take per partition would call the kernels fanout
	// times per column for a few rows each. The slices share the taken
	// buffers, which are counted once.
	starts := make([]int, fanout+1)
	for part, c := range counts {
		starts[part+1] = starts[part] + c
	}
	next := append([]int(nil), starts[:fanout]...)
	idx := make([]int64, n)
	for i, part := range partOf {
		idx[next[part]] = int64(i)
		next[part]++
	}
	taken, err := Take(ctx, rec, idx)
	if err != nil {
		return err
	}
	defer taken.Release()
	for part := 0; part < fanout; part++ {
		if counts[part] == 0 {
			continue
		}
		p.mem[part] = append(p.mem[part], taken.NewSlice(int64(starts[part]), int64(starts[part+1])))
	}
	p.memBytes += RecordSize(taken)
	return nil
}

// spill writes every in-memory partition to its file.
func (p *Partitioner) spill(ctx context.Context) error {
	if p.parts == nil {
		dir, err := os.MkdirTemp(p.o.TempDir, "floe-spill-")
		if err != nil {
			return fmt.Errorf("spill: %w", err)
		}
		p.dir = dir
		p.parts = make([]*SpillFile, fanout)
	}
	for part, recs := range p.mem {
		if len(recs) == 0 {
			continue
		}
		p.mem[part] = nil
		if p.o.Combine != nil {
			var err error
			if recs, err = p.o.Combine(ctx, recs); err != nil {
				return err
			}
		}
		if len(recs) > 1 {
			// NB: a partition's rows are slices of every batch added, a
			// few rows each: one batch of them makes fewer, larger IPC
			// messages, and larger batches when read back.
			one, err := Concat(p.schema, recs)
			releaseAll(recs)
			if err != nil {
				return err
			}
			recs = []arrow.RecordBatch{one}
		}
		sp := p.parts[part]
		if sp == nil {
			var err error
			if sp, err = newSpillFile(filepath.Join(p.dir, fmt.Sprintf("part-%03d.arrow", part)), p.schema); err != nil {
				releaseAll(recs)
				return err
			}
			p.parts[part] = sp
		}
		before := sp.Bytes()
		for i, r := range recs {
			if err := sp.Write(r); err != nil {
				releaseAll(recs[i:])
				return err
			}
			r.Release()
		}
		if err := sp.Flush(); err != nil {
			return err
		}
		p.spilled += sp.Bytes() - before
	}
	p.memBytes = 0
	return nil
}

// Partitions yields each non-empty partition's rows, spilled and in-memory
// alike. The caller releases the records it is given. Partitions may be
// called once; Close must still be called.
func (p *Partitioner) Partitions() iter.Seq2[[]arrow.RecordBatch, error] {
	return func(yield func([]arrow.RecordBatch, error) bool) {
		if p.parts == nil {
			if p.o.Whole {
				recs := p.whole
				p.whole = nil
				if len(recs) > 0 {
					yield(recs, nil)
				}
				return
			}
			for part := range p.mem {
				recs := p.mem[part]
				p.mem[part] = nil
				if len(recs) > 0 && !yield(recs, nil) {
					return
				}
			}
			return
		}
		// Everything goes to disk first, so that memory holds one
		// partition at a time.
		if err := p.spill(context.Background()); err != nil {
			yield(nil, err)
			return
		}
		for part, sp := range p.parts {
			if sp == nil {
				continue
			}
			if err := sp.Finish(); err != nil {
				yield(nil, err)
				return
			}
			st := p.stats[part]
			if sp.Bytes() <= p.o.Budget || !st.mixed || p.level >= maxLevel {
				recs, err := sp.ReadAll()
				sp.Remove()
				p.parts[part] = nil
				if err != nil {
					yield(nil, err)
					return
				}
				if len(recs) > 0 && !yield(recs, nil) {
					return
				}
				continue
			}
			if !p.repartition(part, sp, yield) {
				return
			}
		}
	}
}

// repartition splits a spilled partition larger than the budget by the
// next bits of the key hash and yields its parts; false when the caller
// stopped or an error was yielded.
func (p *Partitioner) repartition(part int, sp *SpillFile, yield func([]arrow.RecordBatch, error) bool) bool {
	child := &Partitioner{schema: p.schema, keyCols: p.keyCols, o: p.o, level: p.level + 1,
		mem: make([][]arrow.RecordBatch, fanout), stats: make([]partStats, fanout)}
	child.o.Whole = false
	child.o.TempDir = p.dir
	p.repartitioned++
	defer func() {
		p.spilled += child.spilled
		p.repartitioned += child.repartitioned
		child.Close()
	}()
	err := sp.Each(func(rec arrow.RecordBatch) error {
		return child.Add(context.Background(), rec)
	})
	sp.Remove()
	p.parts[part] = nil
	if err != nil {
		yield(nil, err)
		return false
	}
	for recs, err := range child.Partitions() {
		if !yield(recs, err) || err != nil {
			return false
		}
	}
	return true
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// Close releases buffered rows and removes spill files.
func (p *Partitioner) Close() {
	releaseAll(p.whole)
	p.whole = nil
	for part, recs := range p.mem {
		releaseAll(recs)
		p.mem[part] = nil
	}
	for _, sp := range p.parts {
		if sp != nil {
			sp.Remove()
		}
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
		p.dir = ""
	}
	p.parts = nil
}

// NewRecord is array.NewRecordBatch, here so callers need one import less.
func NewRecord(schema *arrow.Schema, cols []arrow.Array, n int64) arrow.RecordBatch {
	return array.NewRecordBatch(schema, cols, n)
}

// RecordSize estimates the bytes a record holds: the sizes of its buffers.
func RecordSize(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		n += dataSize(c.Data())
	}
	return n
}

func dataSize(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataSize(c)
	}
	return n
}
