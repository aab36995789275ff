package rows

import (
	"bufio"
	"fmt"
	"os"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// BatchFile is a temporary file of record batches of one schema (Arrow IPC
// file format, uncompressed), written first and then read back by batch
// number, in any order. Write and Read may be called concurrently.
type BatchFile struct {
	mu     sync.Mutex
	path   string
	schema *arrow.Schema
	f      *os.File
	cw     *countingWriter
	buf    *bufio.Writer
	w      *ipc.FileWriter
	n      int
	r      *ipc.FileReader
	rf     *os.File
}

// CreateBatchFile creates a batch file for rows of schema in folder dir
// ("" = os.TempDir()).
func CreateBatchFile(dir string, schema *arrow.Schema) (*BatchFile, error) {
	f, err := os.CreateTemp(dir, "floe-spill-*.arrows")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	b := &BatchFile{path: f.Name(), schema: schema, f: f, cw: &countingWriter{f: f}}
	b.buf = bufio.NewWriterSize(b.cw, spillBufSize)
	if b.w, err = ipc.NewFileWriter(b.buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator)); err != nil {
		f.Close()
		os.Remove(b.path)
		return nil, fmt.Errorf("spill to %s: %w", b.path, err)
	}
	return b, nil
}

// Write appends rec (the caller keeps its reference) and returns its
// batch number.
func (b *BatchFile) Write(rec arrow.RecordBatch) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w == nil {
		return 0, fmt.Errorf("spill to %s: written after Finish", b.path)
	}
	if err := b.w.Write(rec); err != nil {
		return 0, fmt.Errorf("spill to %s: %w", b.path, err)
	}
	b.n++
	return b.n - 1, nil
}

// Schema is the schema of the file's batches.
func (b *BatchFile) Schema() *arrow.Schema { return b.schema }

// Bytes is the size of what was written so far.
func (b *BatchFile) Bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cw.n
}

// Finish ends the writing and opens the file for reading.
func (b *BatchFile) Finish() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w == nil {
		return nil
	}
	err := b.w.Close()
	if err == nil {
		err = b.buf.Flush()
	}
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	b.w = nil
	if err == nil {
		b.rf, err = os.Open(b.path)
	}
	if err == nil {
		b.r, err = ipc.NewFileReader(b.rf, ipc.WithSchema(b.schema), ipc.WithAllocator(memory.DefaultAllocator))
	}
	if err != nil {
		return fmt.Errorf("spill to %s: %w", b.path, err)
	}
	return nil
}

// Read returns batch i (Finish first); the caller releases it.
func (b *BatchFile) Read(i int) (arrow.RecordBatch, error) {
	b.mu.Lock()
	r := b.r
	b.mu.Unlock()
	if r == nil {
		return nil, fmt.Errorf("read spill %s: not finished", b.path)
	}
	rec, err := r.RecordBatchAt(i)
	if err != nil {
		return nil, fmt.Errorf("read spill %s: batch %d: %w", b.path, i, err)
	}
	return rec, nil
}

// Remove closes and removes the file.
func (b *BatchFile) Remove() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.w != nil {
		b.w.Close()
		b.w = nil
		b.f.Close()
	}
	if b.r != nil {
		b.r.Close()
		b.r = nil
	}
	if b.rf != nil {
		b.rf.Close()
		b.rf = nil
	}
	os.Remove(b.path)
}
