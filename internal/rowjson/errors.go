package rowjson

import "errors"

var (
	// ErrInvalidRows reports rows that are not a well-formed Table (bad JSON, or
	// a row whose width differs from the column count).
	ErrInvalidRows = errors.New("rowjson: invalid rows")
	// ErrNoSuchColumn reports a column name the table does not have.
	ErrNoSuchColumn = errors.New("rowjson: no such column")
	// ErrUnsupportedType reports an Arrow type that has no JSON convention.
	ErrUnsupportedType = errors.New("rowjson: no JSON convention for Arrow type")
)
