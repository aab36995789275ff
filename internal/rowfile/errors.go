package rowfile

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error returned by this package wraps one of them
// (with %w), so callers can test for the kind of failure with errors.Is and
// read the message for where it happened.
var (
	// ErrFormat reports an unknown or unusable file format name or extension,
	// or a format that cannot be used where it was asked for.
	ErrFormat = errors.New("unsupported format")

	// ErrOptions reports invalid ReadOptions (no target schema, an extra
	// column whose name clashes with a target column, a negative batch size).
	ErrOptions = errors.New("invalid read options")

	// ErrUnknownColumn reports an input column that is neither a target nor an
	// extra column (and ReadOptions.IgnoreUnknown is false).
	ErrUnknownColumn = errors.New("unknown column")

	// ErrMissingColumn reports a required (non-nullable) target or extra
	// column that the input file does not have.
	ErrMissingColumn = errors.New("missing required column")

	// ErrDuplicateColumn reports an input that names the same column twice,
	// directly or through case-insensitive matching, or a case-insensitive
	// name that matches several columns.
	ErrDuplicateColumn = errors.New("duplicate or ambiguous column")

	// ErrIncompatibleType reports a Parquet column whose type cannot be read
	// into the target column's type (a narrowing such as long into int, or
	// double into long).
	ErrIncompatibleType = errors.New("incompatible column type")

	// ErrUnsupportedType reports a target or output column type this package
	// does not read or write (for example variant or geometry).
	ErrUnsupportedType = errors.New("unsupported column type")

	// ErrMalformed reports a file that is not valid in its format: broken CSV
	// quoting, a record with the wrong number of fields, invalid JSON, a
	// truncated or corrupt Parquet file.
	ErrMalformed = errors.New("malformed input")

	// ErrValue reports a single value that cannot be converted to its column's
	// type, or a NULL in a required column. Such errors are *ValueError.
	ErrValue = errors.New("invalid value")

	// ErrSchema reports a batch given to a Writer whose columns do not have
	// the writer's types, or a Writer asked for without a schema.
	ErrSchema = errors.New("schema mismatch")

	// ErrWriterClosed reports a Write or Close on a Writer that is already
	// closed.
	ErrWriterClosed = errors.New("writer is closed")
)

// ValueError describes the one value that failed a read: where it is (file
// and line for text formats, file and row index for Parquet), which column,
// the offending value and the type it was converted to.
//
// errors.Is(err, ErrValue) holds for every *ValueError.
type ValueError struct {
	// File is the name of the input as given to Open or NewReader.
	File string
	// Line is the 1-based physical line number in a CSV file (the header is
	// line 1; for a cell spanning lines, the line where the cell starts) or in
	// a JSON Lines file. It is 0 for Parquet input.
	Line int
	// Row is the 0-based row index in a Parquet file; -1 for text input.
	Row int64
	// Column is the target column, with a path into nested values
	// ("address.zip", "tags[2]", "attrs.key").
	Column string
	// Value is the offending value as text (a CSV cell, a JSON value's text, a
	// Parquet value printed); empty for a NULL.
	Value string
	// Type is the target type, spelled as Iceberg spells it ("decimal(10,2)").
	Type string
	// Null is true when the failure is a NULL (or absent value) in a required
	// column.
	Null bool
	// Reason says why the value was rejected, when more can be said than
	// "cannot convert"; it may be empty.
	Reason string
}

// Error formats the error as `file:line: column "c": cannot convert "v" to T: reason`
// (or `file: row N: ...` for Parquet).
func (e *ValueError) Error() string {
	var sb strings.Builder
	sb.WriteString(e.File)
	switch {
	case e.Line > 0:
		fmt.Fprintf(&sb, ":%d", e.Line)
	case e.Row >= 0:
		fmt.Fprintf(&sb, ": row %d", e.Row)
	}
	fmt.Fprintf(&sb, ": column %q: ", e.Column)
	if e.Null {
		fmt.Fprintf(&sb, "NULL in required column of type %s", e.Type)
	} else {
		fmt.Fprintf(&sb, "cannot convert %q to %s", clip(e.Value), e.Type)
	}
	if e.Reason != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Reason)
	}
	return sb.String()
}

// Is reports whether target is ErrValue.
func (e *ValueError) Is(target error) bool { return target == ErrValue }

// clip shortens long values in messages so that one bad multi-megabyte cell
// does not flood a terminal.
func clip(s string) string {
	const max = 120
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
		cut--
	}
	return s[:cut] + "…"
}

// convError is the error a converter returns for one bad value; the reader
// adds the file, line or row and the top-level column to make a ValueError.
type convError struct {
	path   string // path below the top-level column: ".zip", "[3]"
	value  string
	typ    string
	null   bool
	reason string
}

func (e *convError) Error() string {
	if e.null {
		return fmt.Sprintf("%s: NULL in required column of type %s", e.path, e.typ)
	}
	return fmt.Sprintf("%s: cannot convert %q to %s: %s", e.path, clip(e.value), e.typ, e.reason)
}

// under prefixes the error's path with a step into a nested value.
func under(err error, step string) error {
	if ce, ok := err.(*convError); ok {
		ce.path = step + ce.path
	}
	return err
}

// toValueError turns a converter's error into a *ValueError for the given
// place; other errors are returned unchanged.
func toValueError(err error, file string, line int, row int64, column string) error {
	ce, ok := err.(*convError)
	if !ok {
		return err
	}
	return &ValueError{
		File: file, Line: line, Row: row, Column: column + ce.path,
		Value: ce.value, Type: ce.typ, Null: ce.null, Reason: ce.reason,
	}
}
