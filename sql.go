package floe

import (
	"context"
	"errors"
	"fmt"

	"github.com/floedata/floe/sqltx"
)

// SQLSpec describes a SQL transform (see SQL): keep Dst equal to the result
// of Query, by Keys.
type SQLSpec = sqltx.Spec

// SQL declares a transform that keeps spec.Dst equal to the result of
// spec.Query, a SELECT over Iceberg tables named namespace.table and
// Delta Lake tables named delta."PATH" in DuckDB's dialect
// (docs/sql-transforms.md): maintained from the changes of its inputs (a
// Delta table's from its Change Data Feed) when the query's rule allows
// it, rebuilt in full otherwise, with the reason. Its inputs are the
// tables the query names, each under its own name ("ns.table", or
// "delta:PATH"); its output is "destination". A Runner builds
// it like any other transform, and package pipeline and cmdline run it.
//
// The query is parsed now, with the registered SQL engine. floe links none
// by default, since DuckDB needs cgo; a program that declares SQL
// transforms imports it where it is assembled:
//
//	import _ "github.com/floedata/floe/sqltx/duckdb"
//
// Without it SQL fails with an error that wraps sqltx.ErrNoEngine and
// names that import.
func SQL(spec SQLSpec) (*Transform, error) {
	t, _, err := sqltx.New(context.Background(), spec)
	if errors.Is(err, sqltx.ErrNoEngine) {
		return nil, fmt.Errorf("sql transform %q: %w: import _ \"github.com/floedata/floe/sqltx/duckdb\" in the program (it needs cgo)", sqlName(spec), err)
	}
	if err != nil {
		return nil, fmt.Errorf("sql transform %q: %w", sqlName(spec), err)
	}
	return t, nil
}

func sqlName(spec SQLSpec) string {
	if spec.Name != "" {
		return spec.Name
	}
	return "sql -> " + spec.Dst
}
