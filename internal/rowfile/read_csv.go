package rowfile

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// csvRecord is one CSV record: field contents (unescaped) and, per field,
// whether it was quoted and the physical line where it starts.
type csvRecord struct {
	buf    []byte
	ends   []int
	quoted []bool
	lines  []int
	line   int // line where the record starts
}

func (r *csvRecord) n() int { return len(r.ends) }

func (r *csvRecord) field(i int) []byte {
	start := 0
	if i > 0 {
		start = r.ends[i-1]
	}
	return r.buf[start:r.ends[i]]
}

func (r *csvRecord) endField(quoted bool, line int) {
	r.ends = append(r.ends, len(r.buf))
	r.quoted = append(r.quoted, quoted)
	r.lines = append(r.lines, line)
}

// csvReader parses RFC 4180 records: fields separated by commas, records by
// CRLF or LF, fields containing commas, quotes or line breaks enclosed in
// double quotes with inner quotes doubled. Line breaks inside quoted fields
// are kept byte for byte. A quote inside an unquoted field, text after a
// closing quote and an unterminated quoted field are errors.
type csvReader struct {
	lr   *lineReader
	file string
}

func (c *csvReader) malformed(line, col int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if col > 0 {
		msg += fmt.Sprintf(" (byte %d of the line)", col)
	}
	return fmt.Errorf("%s:%d: %w: %s", c.file, line, ErrMalformed, msg)
}

// read parses the next record into rec; it returns io.EOF at the end.
func (c *csvReader) read(rec *csvRecord) error {
	rec.buf, rec.ends, rec.quoted, rec.lines = rec.buf[:0], rec.ends[:0], rec.quoted[:0], rec.lines[:0]
	raw, err := c.lr.readLine()
	if err != nil {
		return err
	}
	rec.line = c.lr.line
	line, eol := splitEOL(raw)
	pos := 0
	for {
		fieldLine := c.lr.line
		if pos < len(line) && line[pos] == '"' {
			pos++
			for {
				i := bytes.IndexByte(line[pos:], '"')
				if i < 0 {
					// The quoted field goes on past this line.
					rec.buf = append(rec.buf, line[pos:]...)
					if len(eol) == 0 {
						return c.malformed(fieldLine, 0, "quoted field starting on this line is not closed")
					}
					rec.buf = append(rec.buf, eol...)
					raw, err = c.lr.readLine()
					if err == io.EOF {
						return c.malformed(fieldLine, 0, "quoted field starting on this line is not closed")
					}
					if err != nil {
						return err
					}
					line, eol = splitEOL(raw)
					pos = 0
					continue
				}
				rec.buf = append(rec.buf, line[pos:pos+i]...)
				pos += i + 1
				if pos < len(line) && line[pos] == '"' {
					rec.buf = append(rec.buf, '"')
					pos++
					continue
				}
				break
			}
			rec.endField(true, fieldLine)
			if pos == len(line) {
				return nil
			}
			if line[pos] != ',' {
				return c.malformed(c.lr.line, pos+1, "unexpected %q after a closing quote", line[pos])
			}
			pos++
			continue
		}
		i := bytes.IndexByte(line[pos:], ',')
		end := len(line)
		if i >= 0 {
			end = pos + i
		}
		field := line[pos:end]
		if q := bytes.IndexByte(field, '"'); q >= 0 {
			return c.malformed(c.lr.line, pos+q+1, "quote in an unquoted field (quote the whole field and double inner quotes)")
		}
		rec.buf = append(rec.buf, field...)
		rec.endField(false, fieldLine)
		if i < 0 {
			return nil
		}
		pos = end + 1
	}
}

type csvSource struct {
	rd      csvReader
	rec     csvRecord
	rb      *rowBuilder
	names   []string
	colOf   []int // input field -> output column, -1 to skip
	missing []int // output columns absent from the header
	ncols   int
	null    []byte
	batch   int
}

func newCSVSource(r io.Reader, file string, schema *arrow.Schema, opts *ReadOptions) (*csvSource, error) {
	s := &csvSource{rd: csvReader{lr: newLineReader(r), file: file}, null: []byte(opts.NullString), batch: opts.batchSize()}
	if err := s.rd.read(&s.rec); err != nil {
		if err == io.EOF {
			return nil, fmt.Errorf("%s: %w: empty file, expected a header row", file, ErrMalformed)
		}
		return nil, err
	}
	res := newResolver(file, schema, opts)
	fields := schema.Fields()
	present := make([]bool, len(fields))
	s.ncols = s.rec.n()
	for k := 0; k < s.ncols; k++ {
		name := s.rec.field(k)
		col, err := res.resolve(name, s.rec.lines[k])
		if err != nil {
			return nil, err
		}
		if col >= 0 {
			if present[col] {
				return nil, fmt.Errorf("%s:%d: %w: header names column %q twice", file, s.rec.lines[k], ErrDuplicateColumn, fields[col].Name)
			}
			present[col] = true
		}
		s.colOf = append(s.colOf, col)
	}
	if err := missingRequired(file, fields, present); err != nil {
		return nil, err
	}
	for i, p := range present {
		if !p {
			s.missing = append(s.missing, i)
		}
	}
	s.names = make([]string, len(fields))
	for i, f := range fields {
		s.names[i] = f.Name
	}
	rb, err := newRowBuilder(schema, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s.rb = rb
	return s, nil
}

func (s *csvSource) next(context.Context) (arrow.RecordBatch, error) {
	for s.rb.rows < s.batch {
		err := s.rd.read(&s.rec)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		n := s.rec.n()
		if n != s.ncols {
			// NB: a blank line is one empty unquoted field. With several
			// columns it cannot be a row and is skipped; with one column it
			// is a row holding NULL (that is how a NULL is written).
			if n == 1 && !s.rec.quoted[0] && len(s.rec.field(0)) == 0 {
				continue
			}
			return nil, fmt.Errorf("%s:%d: %w: record has %d fields, the header has %d",
				s.rd.file, s.rec.line, ErrMalformed, n, s.ncols)
		}
		for k := 0; k < n; k++ {
			col := s.colOf[k]
			if col < 0 {
				continue
			}
			v := s.rec.field(k)
			c := s.rb.convs[col]
			var err error
			if !s.rec.quoted[k] && bytes.Equal(v, s.null) {
				err = c.appendNull()
			} else {
				err = c.appendText(v)
			}
			if err != nil {
				return nil, toValueError(err, s.rd.file, s.rec.lines[k], -1, s.names[col])
			}
		}
		for _, col := range s.missing {
			s.rb.convs[col].appendNull() // nullable: checked at open
		}
		s.rb.rows++
	}
	return s.rb.flush(), nil
}

func (s *csvSource) close() error {
	s.rb.release()
	return nil
}
