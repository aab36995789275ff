package rows

import (
	"bufio"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// spillBufSize is the buffer of each spill file, for writing and reading.
const spillBufSize = 256 << 10

// SpillFile is a run of record batches of one schema written to a
// temporary file (Arrow IPC, uncompressed) and read back in order, as
// often as needed. It is not safe for concurrent use.
type SpillFile struct {
	path   string
	schema *arrow.Schema
	f      *os.File
	cw     *countingWriter
	buf    *bufio.Writer
	w      *ipc.Writer
	rows   int64
}

type countingWriter struct {
	f *os.File
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.f.Write(b)
	c.n += int64(n)
	return n, err
}

// CreateSpillFile creates a spill file for rows of schema in folder dir
// ("" = os.TempDir()).
func CreateSpillFile(dir string, schema *arrow.Schema) (*SpillFile, error) {
	f, err := os.CreateTemp(dir, "floe-spill-*.arrow")
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return openSpillFile(f, schema), nil
}

func newSpillFile(path string, schema *arrow.Schema) (*SpillFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("spill: %w", err)
	}
	return openSpillFile(f, schema), nil
}

func openSpillFile(f *os.File, schema *arrow.Schema) *SpillFile {
	s := &SpillFile{path: f.Name(), schema: schema, f: f, cw: &countingWriter{f: f}}
	// NB: spilled batches are often slices of a few rows; unbuffered, the
	// IPC writer makes a write call per buffer.
	s.buf = bufio.NewWriterSize(s.cw, spillBufSize)
	s.w = ipc.NewWriter(s.buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	return s
}

// Write appends the rows of rec (the caller keeps its reference).
func (s *SpillFile) Write(rec arrow.RecordBatch) error {
	if s.w == nil {
		return fmt.Errorf("spill to %s: written after Finish", s.path)
	}
	if err := s.w.Write(rec); err != nil {
		return fmt.Errorf("spill to %s: %w", s.path, err)
	}
	s.rows += rec.NumRows()
	return nil
}

// Bytes is the size of what was written (buffered bytes not counted until
// Flush or Finish).
func (s *SpillFile) Bytes() int64 { return s.cw.n }

// Flush writes out what is buffered.
func (s *SpillFile) Flush() error {
	if s.w == nil {
		return nil
	}
	if err := s.buf.Flush(); err != nil {
		return fmt.Errorf("spill to %s: %w", s.path, err)
	}
	return nil
}

// Rows is the number of rows written.
func (s *SpillFile) Rows() int64 { return s.rows }

// Finish ends the writing; the file can then be read.
func (s *SpillFile) Finish() error {
	if s.w == nil {
		return nil
	}
	err := s.w.Close()
	if err == nil {
		err = s.buf.Flush()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	s.w = nil
	if err != nil {
		return fmt.Errorf("spill to %s: %w", s.path, err)
	}
	return nil
}

// ReadAll returns every batch of the file, in order (Finish first). The
// caller releases them.
func (s *SpillFile) ReadAll() ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	err := s.Each(func(rec arrow.RecordBatch) error {
		rec.Retain()
		out = append(out, rec)
		return nil
	})
	if err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// Each calls f with each batch of the file, in order (Finish first); f
// retains what it keeps.
func (s *SpillFile) Each(f func(arrow.RecordBatch) error) error {
	if err := s.Finish(); err != nil {
		return err
	}
	file, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("read spill %s: %w", s.path, err)
	}
	defer file.Close()
	r, err := ipc.NewReader(bufio.NewReaderSize(file, spillBufSize), ipc.WithSchema(s.schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return fmt.Errorf("read spill %s: %w", s.path, err)
	}
	defer r.Release()
	for r.Next() {
		if err := f(r.RecordBatch()); err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("read spill %s: %w", s.path, err)
	}
	return nil
}

// Remove closes and removes the file.
func (s *SpillFile) Remove() {
	if s.w != nil {
		s.w.Close()
		s.w = nil
		s.f.Close()
	}
	os.Remove(s.path)
}
