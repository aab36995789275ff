package rowfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultBatchSize is the number of rows per batch when
// ReadOptions.BatchSize is zero.
const DefaultBatchSize = 8192

// ReadOptions says how to read a file into a target schema. The zero value
// of every field but Target means its default.
type ReadOptions struct {
	// Target is the table's Arrow schema, as
	// table.SchemaToArrowSchema(icebergSchema, nil, true, false) produces it.
	// Its fields (names, types, nullability, metadata such as
	// "PARQUET:field_id") are the first columns of every output batch.
	// Required.
	Target *arrow.Schema

	// Extra are columns allowed beyond the table's (a "_change_type" string,
	// a sequence number), appended after the target columns in this order.
	Extra []arrow.Field

	// IgnoreUnknown drops input columns (and JSON object keys, and Parquet
	// struct fields) that match no column instead of failing with
	// ErrUnknownColumn.
	IgnoreUnknown bool

	// Format is the input format; FormatAuto takes it from the file name.
	Format Format

	// BatchSize is the number of rows per output batch (the last may be
	// shorter); 0 means DefaultBatchSize.
	BatchSize int

	// NullString is the CSV text that means NULL when it appears unquoted;
	// the default is the empty string, so an empty unquoted cell is NULL and
	// an empty quoted cell ("") is an empty string. Quoted cells are never
	// NULL.
	NullString string

	// Allocator allocates the output batches; nil means
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// outputSchema validates the options and returns the schema of the output
// batches: target fields, then extra fields.
func (o *ReadOptions) outputSchema() (*arrow.Schema, error) {
	if o.Target == nil {
		return nil, fmt.Errorf("%w: Target schema is nil", ErrOptions)
	}
	if o.BatchSize < 0 {
		return nil, fmt.Errorf("%w: BatchSize %d is negative", ErrOptions, o.BatchSize)
	}
	fields := append(o.Target.Fields(), o.Extra...)
	for i, f := range fields {
		for _, g := range fields[:i] {
			if strings.EqualFold(f.Name, g.Name) {
				return nil, fmt.Errorf("%w: column names %q and %q clash", ErrOptions, g.Name, f.Name)
			}
		}
	}
	md := o.Target.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

func (o *ReadOptions) batchSize() int {
	if o.BatchSize == 0 {
		return DefaultBatchSize
	}
	return o.BatchSize
}

func (o *ReadOptions) allocator() memory.Allocator {
	if o.Allocator == nil {
		return memory.DefaultAllocator
	}
	return o.Allocator
}

// source produces converted batches for a Reader.
type source interface {
	// next returns the next batch, or nil and nil at the end.
	next(ctx context.Context) (arrow.RecordBatch, error)
	// close releases the source's resources.
	close() error
}

// Reader streams a file's rows as Arrow record batches with exactly the
// target and extra columns. It implements array.RecordReader (for
// iceberg-go's Transaction.Append) and offers All (an iter.Seq2 for
// table.WriteRecords).
//
// Memory is bounded by one batch plus the format's buffers (for Parquet, one
// row group's pages of the columns read). The first bad value ends the read
// with a *ValueError; Err returns it. A Reader is not safe for concurrent
// use, except Retain and Release.
type Reader struct {
	refs    atomic.Int64
	ctx     context.Context
	name    string
	schema  *arrow.Schema
	src     source
	cur     arrow.RecordBatch
	err     error
	done    bool
	closed  bool
	cerr    error
	onClose []func() error
}

// Open opens the file at path and returns a Reader converting its rows to
// opts.Target plus opts.Extra. The path "-" reads standard input (then
// opts.Format must be set). Problems with the options, the format, the
// header or the columns (an unknown column, a missing required column, a
// Parquet column of an incompatible type) are reported here; bad values are
// reported by Next/Err. The caller must Close (or Release) the Reader.
func Open(ctx context.Context, path string, opts ReadOptions) (*Reader, error) {
	if path == "-" {
		return NewReader(ctx, os.Stdin, "-", opts)
	}
	if opts.Format == FormatAuto {
		f, err := FormatFromPath(path)
		if err != nil {
			return nil, err
		}
		opts.Format = f
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(ctx, f, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.onClose = append(r.onClose, f.Close)
	return r, nil
}

// NewReader returns a Reader over r, which it does not close; name is used
// in messages and, when opts.Format is FormatAuto, for the format. CSV and
// JSON are streamed. Parquet needs random access: an r that is an
// io.ReaderAt and io.Seeker over a regular file or memory is read in place,
// any other r (a pipe, standard input) is first copied to a temporary file
// that Close removes.
func NewReader(ctx context.Context, r io.Reader, name string, opts ReadOptions) (*Reader, error) {
	schema, err := opts.outputSchema()
	if err != nil {
		return nil, err
	}
	if opts.Format == FormatAuto {
		f, err := FormatFromPath(name)
		if err != nil {
			return nil, err
		}
		opts.Format = f
	}
	if err := checkTypes(schema, opts.allocator()); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rd := &Reader{ctx: ctx, name: name, schema: schema}
	rd.refs.Store(1)
	var src source
	switch opts.Format {
	case FormatCSV:
		var s *csvSource
		if s, err = newCSVSource(r, name, schema, &opts); err == nil {
			src = s
		}
	case FormatJSONL:
		var s *jsonSource
		if s, err = newJSONSource(r, name, schema, &opts); err == nil {
			src = s
		}
	case FormatParquet:
		var ra readerAtSeeker
		var cleanup func() error
		ra, cleanup, err = randomAccess(r)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if cleanup != nil {
			rd.onClose = append(rd.onClose, cleanup)
		}
		var s *parquetSource
		if s, err = newParquetSource(ctx, ra, name, schema, &opts); err == nil {
			src = s
		}
	default:
		err = fmt.Errorf("%w: %v", ErrFormat, opts.Format)
	}
	if err != nil {
		rd.Close()
		return nil, err
	}
	rd.src = src
	return rd, nil
}

type readerAtSeeker interface {
	io.ReaderAt
	io.Seeker
}

// randomAccess returns r itself when it supports random access, else a
// temporary copy of it and a function removing that copy.
func randomAccess(r io.Reader) (readerAtSeeker, func() error, error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return f, nil, nil
		}
	} else if ra, ok := r.(readerAtSeeker); ok {
		return ra, nil, nil
	}
	tmp, err := os.CreateTemp("", "rowfile-*.parquet")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() error {
		err := tmp.Close()
		if rerr := os.Remove(tmp.Name()); err == nil {
			err = rerr
		}
		return err
	}
	if _, err := io.Copy(tmp, r); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("copying input to a temporary file: %w", err)
	}
	return tmp, cleanup, nil
}

// Schema returns the output schema: the target fields followed by the extra
// fields.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Next advances to the next batch and reports whether there is one. After
// false, Err says whether the read ended in an error. The previous batch is
// released; Retain it to keep it.
func (r *Reader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.done || r.err != nil || r.closed {
		return false
	}
	if err := r.ctx.Err(); err != nil {
		r.err = err
		return false
	}
	rec, err := r.src.next(r.ctx)
	if err != nil {
		r.err = err
		return false
	}
	if rec == nil {
		r.done = true
		return false
	}
	r.cur = rec
	return true
}

// RecordBatch returns the current batch, valid until the next call to Next
// or Release/Close.
func (r *Reader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record returns the current batch.
//
// Deprecated: Use RecordBatch; Record exists to satisfy array.RecordReader.
func (r *Reader) Record() arrow.RecordBatch { return r.cur }

// Err returns the error that ended the read, or nil after a complete read.
func (r *Reader) Err() error { return r.err }

// Retain increases the reference count. It may be called concurrently.
func (r *Reader) Retain() { r.refs.Add(1) }

// Release decreases the reference count; at zero the Reader is closed.
func (r *Reader) Release() {
	if r.refs.Add(-1) == 0 {
		r.Close()
	}
}

// Close releases the current batch and the input (closing a file opened by
// Open, removing a temporary copy). It is idempotent and returns the first
// error met while closing.
func (r *Reader) Close() error {
	if r.closed {
		return r.cerr
	}
	r.closed = true
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	var errs []error
	if r.src != nil {
		errs = append(errs, r.src.close())
	}
	for i := len(r.onClose) - 1; i >= 0; i-- {
		errs = append(errs, r.onClose[i]())
	}
	r.cerr = errors.Join(errs...)
	return r.cerr
}

// All returns the remaining batches as a sequence for table.WriteRecords.
// Each yielded batch belongs to the consumer, which must Release it. A
// failed read yields one final (nil, err). Stopping early leaves the Reader
// open; the caller still closes it.
func (r *Reader) All() iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for r.Next() {
			rec := r.cur
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if r.err != nil {
			yield(nil, r.err)
		}
	}
}

var _ array.RecordReader = (*Reader)(nil)

// resolver matches input column names to output columns: exact name first,
// then a unique case-insensitive match.
type resolver struct {
	file   string
	fields []arrow.Field
	ntgt   int // number of target (non-extra) fields
	exact  map[string]int
	cache  map[string]int // case-insensitive results, -1 for no match
	ignore bool
}

func newResolver(file string, schema *arrow.Schema, opts *ReadOptions) *resolver {
	r := &resolver{file: file, fields: schema.Fields(), ntgt: opts.Target.NumFields(),
		exact: map[string]int{}, cache: map[string]int{}, ignore: opts.IgnoreUnknown}
	for i, f := range r.fields {
		r.exact[f.Name] = i
	}
	return r
}

// resolve returns the output column for an input column name, or -1 when
// the column is to be ignored, or an error for an unknown column naming the
// line (when line > 0).
func (r *resolver) resolve(name []byte, line int) (int, error) {
	if i, ok := r.exact[string(name)]; ok {
		return i, nil
	}
	if i, ok := r.cache[string(name)]; ok && (i >= 0 || r.ignore) {
		return i, nil
	}
	found, ambiguous := -1, false
	for i, f := range r.fields {
		if strings.EqualFold(f.Name, string(name)) {
			if found >= 0 {
				ambiguous = true
			}
			found = i
		}
	}
	if ambiguous {
		found = -1
	}
	if len(r.cache) < 4096 { // bounded: keys may differ on every line
		if found >= 0 || r.ignore {
			r.cache[string(name)] = found
		}
	}
	if found >= 0 || r.ignore {
		return found, nil
	}
	where := r.file
	if line > 0 {
		where = fmt.Sprintf("%s:%d", r.file, line)
	}
	return -1, fmt.Errorf("%s: %w %q: the table's columns are %s", where, ErrUnknownColumn, name, r.describe())
}

// describe lists the columns for messages.
func (r *resolver) describe() string {
	names := make([]string, len(r.fields))
	for i, f := range r.fields {
		names[i] = f.Name
	}
	s := strings.Join(names[:r.ntgt], ", ")
	if len(names) > r.ntgt {
		s += "; extra columns allowed: " + strings.Join(names[r.ntgt:], ", ")
	}
	return s
}

// missingRequired reports the first required output column absent from an
// input that has the columns marked in present.
func missingRequired(file string, fields []arrow.Field, present []bool) error {
	for i, f := range fields {
		if !present[i] && !f.Nullable {
			return fmt.Errorf("%s: %w %q (%s)", file, ErrMissingColumn, f.Name, typeName(f.Type))
		}
	}
	return nil
}

// checkTypes fails for a column type no converter exists for, before any
// input is looked at.
func checkTypes(schema *arrow.Schema, mem memory.Allocator) error {
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for i, f := range schema.Fields() {
		if _, err := newConv(f, rb.Field(i), convOptions{}); err != nil {
			return fmt.Errorf("column %q: %w", f.Name, err)
		}
	}
	return nil
}

// rowBuilder appends converted rows for the text formats.
type rowBuilder struct {
	rb    *array.RecordBuilder
	convs []conv
	rows  int
}

func newRowBuilder(schema *arrow.Schema, opts *ReadOptions) (*rowBuilder, error) {
	rb := array.NewRecordBuilder(opts.allocator(), schema)
	b := &rowBuilder{rb: rb}
	co := convOptions{ignoreUnknown: opts.IgnoreUnknown}
	for i, f := range schema.Fields() {
		c, err := newConv(f, rb.Field(i), co)
		if err != nil {
			rb.Release()
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		b.convs = append(b.convs, c)
	}
	return b, nil
}

// flush returns the rows appended so far as a batch, or nil if none.
func (b *rowBuilder) flush() arrow.RecordBatch {
	if b.rows == 0 {
		return nil
	}
	b.rows = 0
	return b.rb.NewRecordBatch()
}

func (b *rowBuilder) release() {
	if b != nil && b.rb != nil {
		b.rb.Release()
		b.rb = nil
	}
}

// lineReader reads physical lines and counts them.
type lineReader struct {
	br   *bufio.Reader
	line int // lines read so far
	long []byte
	bom  bool // the UTF-8 byte order mark was checked
}

func newLineReader(r io.Reader) *lineReader {
	br, ok := r.(*bufio.Reader)
	if !ok || br.Size() < 64<<10 {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	return &lineReader{br: br}
}

// readLine returns the next line with its terminator; the slice is valid
// until the next call. At the end it returns io.EOF.
func (l *lineReader) readLine() ([]byte, error) {
	line, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.long = append(l.long[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = l.br.ReadSlice('\n')
			l.long = append(l.long, line...)
		}
		line = l.long
	}
	if err == io.EOF && len(line) > 0 {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	l.line++
	if !l.bom {
		l.bom = true
		line = stripBOM(line)
	}
	return line, nil
}

func stripBOM(b []byte) []byte {
	if len(b) >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		return b[3:]
	}
	return b
}

// splitEOL splits a line into its content and its terminator ("\n", "\r\n"
// or "" for a last line without one).
func splitEOL(line []byte) ([]byte, []byte) {
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		if n > 1 && line[n-2] == '\r' {
			return line[:n-2], line[n-2:]
		}
		return line[:n-1], line[n-1:]
	}
	return line, nil
}
