package rowfile

import (
	"bufio"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Writer writes record batches in one output format. Write may be called
// any number of times (also never) and Close exactly once to finish the
// output (the JSON array's closing bracket, the table's last page, the
// Parquet footer); Close does not close the underlying io.Writer. After an
// error the output is incomplete. A Writer is not safe for concurrent use.
type Writer interface {
	// Write writes the rows of rec, whose columns must have the types of the
	// writer's schema (names and metadata may differ).
	Write(rec arrow.RecordBatch) error
	// Close flushes buffered rows and finishes the output.
	Close() error
}

// WriterOption adjusts a Writer. Options that do not apply to the format
// are ignored.
type WriterOption func(*writerConfig)

type writerConfig struct {
	maxCellWidth int
	pageRows     int
	rowGroupRows int64
	rowGroupSize int64
}

// WithMaxCellWidth sets the display width at which OutputTable cuts cells
// (with an ellipsis); the default is 40, values below 4 mean 4.
func WithMaxCellWidth(n int) WriterOption {
	return func(c *writerConfig) { c.maxCellWidth = max(n, 4) }
}

// WithPageRows sets how many rows OutputTable buffers to size its columns;
// the default is 1000.
func WithPageRows(n int) WriterOption {
	return func(c *writerConfig) { c.pageRows = max(n, 1) }
}

// WithRowGroupRows sets the most rows in one Parquet row group; the default
// is 1,048,576. A row group is also closed once it holds about 128 MiB.
func WithRowGroupRows(n int64) WriterOption {
	return func(c *writerConfig) { c.rowGroupRows = max(n, 1) }
}

// NewWriter returns a Writer of rows with the given schema to w in the
// given format. Every column type this package reads can be written; other
// types (variant, geometry, unions, ...) are an error wrapping
// ErrUnsupportedType.
func NewWriter(w io.Writer, format OutputFormat, schema *arrow.Schema, opts ...WriterOption) (Writer, error) {
	cfg := writerConfig{maxCellWidth: 40, pageRows: 1000, rowGroupRows: 1 << 20, rowGroupSize: 128 << 20}
	for _, o := range opts {
		o(&cfg)
	}
	if schema == nil {
		return nil, fmt.Errorf("%w: nil schema", ErrSchema)
	}
	if format == OutputParquet {
		return newParquetWriter(w, schema, &cfg)
	}
	fmts := make([]*valueFormat, schema.NumFields())
	for i, f := range schema.Fields() {
		vf, err := newValueFormat(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", f.Name, err)
		}
		fmts[i] = vf
	}
	tw := textWriter{bw: bufio.NewWriterSize(w, 64<<10), schema: schema, fmts: fmts}
	switch format {
	case OutputJSONL, OutputJSON:
		jw := &jsonWriter{textWriter: tw, array: format == OutputJSON}
		for _, f := range schema.Fields() {
			jw.keys = append(jw.keys, append(appendJSONString(nil, f.Name), ':'))
		}
		return jw, nil
	case OutputCSV:
		return &csvWriter{textWriter: tw}, nil
	case OutputTable:
		return &tableWriter{textWriter: tw, cfg: cfg}, nil
	}
	return nil, fmt.Errorf("%w: output format %v", ErrFormat, format)
}

// checkBatch verifies that rec's columns have the schema's types.
func checkBatch(schema *arrow.Schema, rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != schema.NumFields() {
		return fmt.Errorf("%w: batch has %d columns, the writer's schema %d", ErrSchema, rec.NumCols(), schema.NumFields())
	}
	for i, f := range schema.Fields() {
		if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type) {
			return fmt.Errorf("%w: column %d (%q) is %s, the writer's schema has %s", ErrSchema,
				i, f.Name, rec.Column(i).DataType(), f.Type)
		}
	}
	return nil
}

// textWriter is what the text formats share.
type textWriter struct {
	bw     *bufio.Writer
	schema *arrow.Schema
	fmts   []*valueFormat
	buf    []byte
	closed bool
	rows   int64
}

func (t *textWriter) check(rec arrow.RecordBatch) error {
	if t.closed {
		return ErrWriterClosed
	}
	return checkBatch(t.schema, rec)
}

// --- JSON Lines and JSON ---

type jsonWriter struct {
	textWriter
	array bool
	keys  [][]byte
}

func (w *jsonWriter) Write(rec arrow.RecordBatch) error {
	if err := w.check(rec); err != nil {
		return err
	}
	cols := rec.Columns()
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		b := w.buf[:0]
		if w.array {
			if w.rows == 0 {
				b = append(b, "[\n"...)
			} else {
				b = append(b, ",\n"...)
			}
		}
		b = append(b, '{')
		for k, c := range cols {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, w.keys[k]...)
			b = w.fmts[k].appendJSON(b, c, i)
		}
		b = append(b, '}')
		if !w.array {
			b = append(b, '\n')
		}
		w.buf = b
		w.rows++
		if _, err := w.bw.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (w *jsonWriter) Close() error {
	if w.closed {
		return ErrWriterClosed
	}
	w.closed = true
	if w.array {
		if w.rows == 0 {
			w.bw.WriteString("[]\n")
		} else {
			w.bw.WriteString("\n]\n")
		}
	}
	return w.bw.Flush()
}

// --- CSV ---

type csvWriter struct {
	textWriter
	header bool
}

// appendCSVField writes a field, quoted when it is empty (an empty unquoted
// field is NULL), contains a comma, quote or line break, or has white space
// at either end.
func appendCSVField(dst, v []byte) []byte {
	needs := len(v) == 0 || v[0] == ' ' || v[0] == '\t' || v[len(v)-1] == ' ' || v[len(v)-1] == '\t'
	if !needs {
		for _, c := range v {
			if c == ',' || c == '"' || c == '\n' || c == '\r' {
				needs = true
				break
			}
		}
	}
	if !needs {
		return append(dst, v...)
	}
	dst = append(dst, '"')
	for _, c := range v {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

func (w *csvWriter) writeHeader() error {
	w.header = true
	b := w.buf[:0]
	for k, f := range w.schema.Fields() {
		if k > 0 {
			b = append(b, ',')
		}
		b = appendCSVField(b, []byte(f.Name))
	}
	b = append(b, '\n')
	w.buf = b
	_, err := w.bw.Write(b)
	return err
}

func (w *csvWriter) Write(rec arrow.RecordBatch) error {
	if err := w.check(rec); err != nil {
		return err
	}
	if !w.header {
		if err := w.writeHeader(); err != nil {
			return err
		}
	}
	cols := rec.Columns()
	n := int(rec.NumRows())
	var cell []byte
	for i := 0; i < n; i++ {
		b := w.buf[:0]
		for k, c := range cols {
			if k > 0 {
				b = append(b, ',')
			}
			if isNull(c, i) {
				continue
			}
			cell = w.fmts[k].text(cell[:0], c, i)
			b = appendCSVField(b, cell)
		}
		b = append(b, '\n')
		w.buf = b
		if _, err := w.bw.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (w *csvWriter) Close() error {
	if w.closed {
		return ErrWriterClosed
	}
	w.closed = true
	if !w.header {
		if err := w.writeHeader(); err != nil {
			return err
		}
	}
	return w.bw.Flush()
}

// --- Parquet ---

// nopCloser hides the caller's Close from the Parquet writer, which closes
// its sink.
type nopCloser struct{ io.Writer }

type parquetWriter struct {
	fw     *pqarrow.FileWriter
	schema *arrow.Schema
	cfg    *writerConfig
	closed bool
}

func newParquetWriter(w io.Writer, schema *arrow.Schema, cfg *writerConfig) (*parquetWriter, error) {
	props := parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(cfg.rowGroupRows),
	)
	fw, err := pqarrow.NewFileWriter(schema, nopCloser{w}, props,
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnsupportedType, err)
	}
	return &parquetWriter{fw: fw, schema: schema, cfg: cfg}, nil
}

func (w *parquetWriter) Write(rec arrow.RecordBatch) error {
	if w.closed {
		return ErrWriterClosed
	}
	if err := checkBatch(w.schema, rec); err != nil {
		return err
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if !rec.Schema().Equal(w.schema) {
		rec = array.NewRecordBatch(w.schema, rec.Columns(), rec.NumRows())
		defer rec.Release()
	}
	if err := w.fw.WriteBuffered(rec); err != nil {
		return err
	}
	// NB: a buffered row group is held in memory until closed; cap it by
	// size as well as by rows.
	if w.fw.RowGroupTotalBytesWritten() >= w.cfg.rowGroupSize {
		return w.fw.NewBufferedRowGroupChecked()
	}
	return nil
}

func (w *parquetWriter) Close() error {
	if w.closed {
		return ErrWriterClosed
	}
	w.closed = true
	return w.fw.Close()
}
