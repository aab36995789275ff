// Package sqltx runs SQL transforms: a SELECT over Iceberg tables by name,
// kept up to date incrementally when the query allows it (see
// docs/sql-transforms.md for the rules) and rebuilt in full, with the
// reason, when it does not.
//
// The SQL engine is pluggable so that packages using sqltx do not link it:
// a program that runs SQL registers one, usually by importing
// github.com/floedata/floe/sqltx/duckdb (DuckDB, which needs cgo). Without
// one, every SQL operation fails with ErrNoEngine.
package sqltx

import (
	"context"
	"errors"
	"iter"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ErrNoEngine is returned when no SQL engine is registered (a floe built
// without cgo, or a program that does not import sqltx/duckdb).
var ErrNoEngine = errors.New("SQL transforms need floe built with cgo (DuckDB)")

// Engine opens sessions of a SQL engine.
type Engine interface {
	// Open starts a session: a private, empty database.
	Open(ctx context.Context) (Session, error)
}

// Session is one private database of an engine. It is not safe for
// concurrent use.
type Session interface {
	// Bind makes rows readable as schema.table (schema "" = the default
	// one), replacing an earlier binding of the name. rows is read (and
	// released) before Bind returns.
	Bind(ctx context.Context, schema, table string, rows array.RecordReader) error
	// Check parses and binds a query without running it, so that its
	// errors point into the query as written.
	Check(ctx context.Context, sql string) error
	// Exec runs statements that return no rows.
	Exec(ctx context.Context, sql string) error
	// Query runs a query; its rows stay readable until Close.
	Query(ctx context.Context, sql string) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error)
	// Strings runs a query with a small result and returns its rows as
	// strings (NULL as "").
	Strings(ctx context.Context, sql string, args ...any) ([][]string, error)
	// Close frees the session and everything it holds.
	Close() error
}

var (
	mu     sync.Mutex
	engine Engine
)

// Register sets the engine SQL transforms use (the last one registered
// wins).
func Register(e Engine) {
	mu.Lock()
	defer mu.Unlock()
	engine = e
}

// Open opens a session of the registered engine, or fails with
// ErrNoEngine.
func Open(ctx context.Context) (Session, error) {
	mu.Lock()
	e := engine
	mu.Unlock()
	if e == nil {
		return nil, ErrNoEngine
	}
	return e.Open(ctx)
}

// Available reports whether an engine is registered.
func Available() bool {
	mu.Lock()
	defer mu.Unlock()
	return engine != nil
}
