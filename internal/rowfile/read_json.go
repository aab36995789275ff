package rowfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
)

// jsonSource reads JSON Lines (one object per line, blank lines skipped) or,
// when the input starts with '[', one JSON array of objects, each element
// extracted and parsed on its own so memory stays bounded by one row.
type jsonSource struct {
	lr      *lineReader
	file    string
	p       jparser
	rb      *rowBuilder
	res     *resolver
	names   []string
	fields  []arrow.Field
	seen    []bool
	batch   int
	array   bool // reading a JSON array
	started bool // the array's '[' was consumed
	ended   bool // the array's ']' was consumed
	elem    []byte
}

func newJSONSource(r io.Reader, file string, schema *arrow.Schema, opts *ReadOptions) (*jsonSource, error) {
	s := &jsonSource{lr: newLineReader(r), file: file, batch: opts.batchSize(), fields: schema.Fields()}
	s.res = newResolver(file, schema, opts)
	s.seen = make([]bool, len(s.fields))
	s.names = make([]string, len(s.fields))
	for i, f := range s.fields {
		s.names[i] = f.Name
	}
	// Peek past white space and a byte order mark to choose the mode.
	br := s.lr.br
	for n := 1; ; n++ {
		b, err := br.Peek(n)
		if len(b) < n {
			if err != nil && err != io.EOF {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
			break
		}
		if n <= 3 && bytes.HasPrefix([]byte{0xEF, 0xBB, 0xBF}, b) {
			continue
		}
		c := b[n-1]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			if n > 4096 {
				break
			}
			continue
		}
		s.array = c == '['
		break
	}
	rb, err := newRowBuilder(schema, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	s.rb = rb
	return s, nil
}

func (s *jsonSource) malformed(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %w: %s", s.file, line, ErrMalformed, fmt.Sprintf(format, args...))
}

func (s *jsonSource) next(context.Context) (arrow.RecordBatch, error) {
	for s.rb.rows < s.batch {
		var doc []byte
		var line int
		if s.array {
			var err error
			doc, line, err = s.nextElement()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, err
			}
		} else {
			raw, err := s.lr.readLine()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.file, err)
			}
			if len(trimSpace(raw)) == 0 {
				continue
			}
			doc, line = raw, s.lr.line
		}
		if !s.p.parse(doc) {
			l := line + bytes.Count(doc[:min(s.p.errPos, len(doc))], []byte{'\n'})
			col := s.p.errPos - bytes.LastIndexByte(doc[:min(s.p.errPos, len(doc))], '\n')
			return nil, s.malformed(l, "invalid JSON at byte %d: %s", col, s.p.errMsg)
		}
		if err := s.appendRow(line); err != nil {
			return nil, err
		}
		s.rb.rows++
	}
	return s.rb.flush(), nil
}

// appendRow converts the parsed object into one row.
func (s *jsonSource) appendRow(line int) error {
	root := &s.p.nodes[0]
	if root.kind != jObject {
		what := "line"
		if s.array {
			what = "array element"
		}
		return s.malformed(line, "expected a JSON object per %s, found %s", what, root.kind)
	}
	clear(s.seen)
	for j := int32(1); j < root.next; j = s.p.nodes[j].next {
		key := s.p.nodes[j].key
		col, err := s.res.resolve(key, line)
		if err != nil {
			return err
		}
		if col < 0 {
			continue
		}
		if s.seen[col] {
			return fmt.Errorf("%s:%d: %w: the object names column %q twice", s.file, line, ErrDuplicateColumn, s.names[col])
		}
		s.seen[col] = true
		if err := s.rb.convs[col].appendJSON(&s.p, j); err != nil {
			return toValueError(err, s.file, line, -1, s.names[col])
		}
	}
	for col, seen := range s.seen {
		if seen {
			continue
		}
		if err := s.rb.convs[col].appendNull(); err != nil {
			err = toValueError(err, s.file, line, -1, s.names[col])
			var ve *ValueError
			if errors.As(err, &ve) && ve.Column == s.names[col] {
				// The column is missing, not NULL: say so (a file of changes
				// without _change_type was reported as a NULL).
				return fmt.Errorf("%s:%d: %w %q (%s): the object has no such key", s.file, line, ErrMissingColumn, s.names[col], ve.Type)
			}
			return err
		}
	}
	return nil
}

// nextElement extracts the next object of a top-level JSON array, returning
// its bytes and the line it starts on, or io.EOF after the closing ']'.
func (s *jsonSource) nextElement() ([]byte, int, error) {
	br := s.lr.br
	// Lines are counted by the newlines consumed: the current line is
	// s.lr.line+1.
	readByte := func() (byte, error) {
		c, err := br.ReadByte()
		if err == nil && c == '\n' {
			s.lr.line++
		}
		return c, err
	}
	skipWS := func() (byte, error) {
		for {
			c, err := readByte()
			if err != nil {
				return 0, err
			}
			if c == 0xEF && !s.started { // byte order mark
				if _, err := br.Discard(2); err != nil {
					return 0, err
				}
				continue
			}
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				return c, nil
			}
		}
	}
	if s.ended {
		return nil, 0, io.EOF
	}
	c, err := skipWS()
	if err != nil {
		return nil, 0, s.malformed(s.lr.line+1, "unexpected end of input in the JSON array")
	}
	if !s.started {
		s.started = true // c is '[' (checked at open)
		c, err = skipWS()
		if err != nil {
			return nil, 0, s.malformed(s.lr.line+1, "unexpected end of input in the JSON array")
		}
		if c == ']' {
			return nil, 0, s.finish()
		}
	} else {
		switch c {
		case ']':
			return nil, 0, s.finish()
		case ',':
			c, err = skipWS()
			if err != nil {
				return nil, 0, s.malformed(s.lr.line+1, "unexpected end of input in the JSON array")
			}
		default:
			return nil, 0, s.malformed(s.lr.line+1, "unexpected %q between array elements, expected ',' or ']'", c)
		}
	}
	line := s.lr.line + 1
	if c != '{' {
		return nil, 0, s.malformed(line, "expected a JSON object as array element, found %q", c)
	}
	s.elem = append(s.elem[:0], c)
	depth, inStr, esc := 1, false, false
	for depth > 0 {
		c, err = readByte()
		if err != nil {
			return nil, 0, s.malformed(line, "unexpected end of input in an array element starting on this line")
		}
		s.elem = append(s.elem, c)
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return s.elem, line, nil
}

// finish checks that only white space follows the closing ']'.
func (s *jsonSource) finish() error {
	s.ended = true
	for {
		c, err := s.lr.br.ReadByte()
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return err
		}
		if c == '\n' {
			s.lr.line++
			continue
		}
		if c != ' ' && c != '\t' && c != '\r' {
			return s.malformed(s.lr.line+1, "unexpected %q after the closing ']' of the JSON array", c)
		}
	}
}

func (s *jsonSource) close() error {
	s.rb.release()
	return nil
}
