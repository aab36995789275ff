package rows

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultMemoryBudget is the memory a Partitioner holds before it spills.
const DefaultMemoryBudget = 256 << 20

// spillBufSize is the buffer of each spill file, for writing and reading.
const spillBufSize = 256 << 10

// Partitioner hash-partitions rows by a key and hands back each partition
// whole, so that rows with equal keys can be processed together. While its
// buffered rows stay under the memory budget nothing touches the disk; past
// it, partitions are spilled to Arrow IPC files in a temporary folder and
// read back one at a time, so peak memory is about the budget plus one
// partition. It is not safe for concurrent use.
type Partitioner struct {
	schema  *arrow.Schema
	keyCols []int
	parts   int
	budget  int64
	dir     string // spill folder, created on first spill

	mem      [][]arrow.RecordBatch
	memBytes int64
	files    []*os.File
	bufs     []*bufio.Writer
	writers  []*ipc.Writer
	spilled  bool
	hashes   []uint64
}

// NewPartitioner returns a partitioner of rows of schema, keyed by the
// values of keyCols with AppendKey's equality (hashed with HashKeys). budget <= 0 means
// DefaultMemoryBudget; tmpDir "" means os.TempDir().
func NewPartitioner(schema *arrow.Schema, keyCols []int, budget int64, tmpDir string) *Partitioner {
	if budget <= 0 {
		budget = DefaultMemoryBudget
	}
	const parts = 64
	return &Partitioner{schema: schema, keyCols: keyCols, parts: parts, budget: budget, dir: tmpDir,
		mem: make([][]arrow.RecordBatch, parts)}
}

// Spilled reports whether any rows went to disk.
func (p *Partitioner) Spilled() bool { return p.spilled }

// Add adds the rows of rec (the caller keeps its reference).
func (p *Partitioner) Add(ctx context.Context, rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	p.hashes = HashKeys(rec, p.keyCols, p.hashes)
	partOf := make([]int32, n)
	counts := make([]int, p.parts)
	for i, h := range p.hashes {
		part := int32(h % uint64(p.parts))
		partOf[i] = part
		counts[part]++
	}
	if counts[partOf[0]] == n {
		rec.Retain()
		p.mem[partOf[0]] = append(p.mem[partOf[0]], rec)
		p.memBytes += RecordSize(rec)
		return p.maybeSpill()
	}
	// NB: one Take puts the rows in partition order (stable, so rows keep
	// their order within a partition) and each partition gets a zero-copy
	// slice of it; a Take per partition would call the kernels parts times
	// per column for a few rows each. The slices share the taken buffers,
	// which are counted once.
	starts := make([]int, p.parts+1)
	for part, c := range counts {
		starts[part+1] = starts[part] + c
	}
	next := append([]int(nil), starts[:p.parts]...)
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
	for part := 0; part < p.parts; part++ {
		if counts[part] == 0 {
			continue
		}
		p.mem[part] = append(p.mem[part], taken.NewSlice(int64(starts[part]), int64(starts[part+1])))
	}
	p.memBytes += RecordSize(taken)
	return p.maybeSpill()
}

func (p *Partitioner) maybeSpill() error {
	if p.memBytes > p.budget {
		return p.spill()
	}
	return nil
}

func (p *Partitioner) spill() error {
	if !p.spilled {
		dir, err := os.MkdirTemp(p.dir, "floe-spill-")
		if err != nil {
			return fmt.Errorf("spill: %w", err)
		}
		p.dir = dir
		p.files = make([]*os.File, p.parts)
		p.bufs = make([]*bufio.Writer, p.parts)
		p.writers = make([]*ipc.Writer, p.parts)
		p.spilled = true
	}
	for part, recs := range p.mem {
		if len(recs) == 0 {
			continue
		}
		if p.writers[part] == nil {
			f, err := os.Create(fmt.Sprintf("%s/part-%03d.arrow", p.dir, part))
			if err != nil {
				return fmt.Errorf("spill: %w", err)
			}
			p.files[part] = f
			// NB: a spilled batch is a slice of a few rows per partition;
			// unbuffered, the IPC writer makes a write call per buffer.
			p.bufs[part] = bufio.NewWriterSize(f, spillBufSize)
			p.writers[part] = ipc.NewWriter(p.bufs[part], ipc.WithSchema(p.schema), ipc.WithAllocator(memory.DefaultAllocator))
		}
		for _, r := range recs {
			if err := p.writers[part].Write(r); err != nil {
				return fmt.Errorf("spill to %s: %w", p.files[part].Name(), err)
			}
			r.Release()
		}
		p.mem[part] = nil
	}
	p.memBytes = 0
	return nil
}

// Partitions yields each non-empty partition's rows, spilled and in-memory
// alike. The caller releases the records it is given. Partitions may be
// called once; Close must still be called.
func (p *Partitioner) Partitions() iter.Seq2[[]arrow.RecordBatch, error] {
	return func(yield func([]arrow.RecordBatch, error) bool) {
		for part := 0; part < p.parts; part++ {
			recs := p.mem[part]
			p.mem[part] = nil
			if p.spilled && p.writers[part] != nil {
				err := p.writers[part].Close()
				if err == nil {
					err = p.bufs[part].Flush()
				}
				if err != nil {
					releaseAll(recs)
					yield(nil, fmt.Errorf("spill to %s: %w", p.files[part].Name(), err))
					return
				}
				p.writers[part] = nil
				back, err := readSpill(p.files[part].Name(), p.schema)
				if err != nil {
					releaseAll(recs)
					yield(nil, err)
					return
				}
				recs = append(back, recs...)
				p.files[part].Close()
				os.Remove(p.files[part].Name())
				p.files[part] = nil
			}
			if len(recs) == 0 {
				continue
			}
			if !yield(recs, nil) {
				return
			}
		}
	}
}

func readSpill(path string, schema *arrow.Schema) ([]arrow.RecordBatch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read spill %s: %w", path, err)
	}
	defer f.Close()
	r, err := ipc.NewReader(bufio.NewReaderSize(f, spillBufSize), ipc.WithSchema(schema))
	if err != nil {
		return nil, fmt.Errorf("read spill %s: %w", path, err)
	}
	defer r.Release()
	var out []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		rec.Retain()
		out = append(out, rec)
	}
	if err := r.Err(); err != nil {
		releaseAll(out)
		return nil, fmt.Errorf("read spill %s: %w", path, err)
	}
	return out, nil
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// Close releases buffered rows and removes spill files.
func (p *Partitioner) Close() {
	for part, recs := range p.mem {
		releaseAll(recs)
		p.mem[part] = nil
	}
	for part, w := range p.writers {
		if w != nil {
			w.Close()
		}
		if f := p.files[part]; f != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}
	if p.spilled {
		os.RemoveAll(p.dir)
	}
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
