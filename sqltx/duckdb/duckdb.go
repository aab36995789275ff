//go:build cgo

// Package duckdb is floe's SQL engine: DuckDB embedded through its Go
// bindings (github.com/duckdb/duckdb-go). Importing it registers the
// engine with package sqltx:
//
//	import _ "github.com/floedata/floe/sqltx/duckdb"
//
// It needs cgo; without cgo it registers nothing and SQL transforms fail
// with sqltx.ErrNoEngine. Each session is a private in-memory database.
// Rows pass between floe and DuckDB as Parquet files in a private
// temporary folder: duckdb-go's Arrow interface needs the duckdb_arrow
// build tag, which a plain `go build` or `go run` does not set.
package duckdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	duck "github.com/duckdb/duckdb-go/v2"

	"github.com/floedata/floe/sqltx"
)

func init() { sqltx.Register(Engine{}) }

// Engine opens DuckDB sessions.
type Engine struct{}

// Open starts a session: a fresh in-memory DuckDB database and a private
// temporary folder for the rows exchanged with it.
func (Engine) Open(ctx context.Context) (sqltx.Session, error) {
	dir, err := os.MkdirTemp("", "floe-sql-")
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	connector, err := duck.NewConnector("", nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	s := &session{db: db, conn: conn, dir: dir}
	// Spill to the session's folder; no extension downloads.
	if err := s.Exec(ctx, fmt.Sprintf("SET temp_directory = '%s'; SET autoinstall_known_extensions = false; SET autoload_known_extensions = false",
		strings.ReplaceAll(filepath.Join(dir, "spill"), "'", "''"))); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

type session struct {
	db     *sql.DB
	conn   *sql.Conn
	dir    string
	n      int
	closed bool
	open   []*os.File
}

func (s *session) path(kind string) string {
	s.n++
	return filepath.Join(s.dir, fmt.Sprintf("%s-%d.parquet", kind, s.n))
}

func quote(id string) string { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }

func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Bind writes rows to a Parquet file of the session and makes a view of it.
func (s *session) Bind(ctx context.Context, schema, table string, rows array.RecordReader) error {
	defer rows.Release()
	p := s.path("in")
	if err := writeParquet(ctx, p, rows); err != nil {
		return err
	}
	name := quote(table)
	if schema != "" {
		if err := s.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+quote(schema)); err != nil {
			return err
		}
		name = quote(schema) + "." + name
	}
	return s.Exec(ctx, fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM read_parquet(%s)", name, literal(p)))
}

// stagedRowGroup is the row group size of the Parquet files rows are
// staged in.
const stagedRowGroup = 128 * 1024

// writeParquet writes rows to a new file path (the Parquet writer closes
// it).
func writeParquet(ctx context.Context, path string, rows array.RecordReader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	schema := plainSchema(rows.Schema())
	// Row groups of stagedRowGroup rows however the rows come: a batch
	// per row group made a changelog's many small batches cost a column
	// writer setup each, and DuckDB reads row groups in parallel.
	props := parquet.NewWriterProperties(parquet.WithAllocator(memory.DefaultAllocator), parquet.WithDictionaryDefault(false),
		parquet.WithMaxRowGroupLength(stagedRowGroup))
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(memory.DefaultAllocator)))
	if err != nil {
		f.Close()
		return fmt.Errorf("duckdb: rows to Parquet: %w", err)
	}
	for rows.Next() {
		if err := ctx.Err(); err != nil {
			w.Close()
			return err
		}
		rec := rows.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		plain := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
		err := w.WriteBuffered(plain)
		plain.Release()
		if err != nil {
			w.Close()
			return fmt.Errorf("duckdb: rows to Parquet: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// plainSchema drops field metadata (Iceberg field IDs), which DuckDB does
// not need.
func plainSchema(s *arrow.Schema) *arrow.Schema {
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// Check prepares q (parse and bind) and drops the statement.
func (s *session) Check(ctx context.Context, q string) error {
	st, err := s.conn.PrepareContext(ctx, q)
	if err != nil {
		return engineError(err)
	}
	return st.Close()
}

// Exec runs statements.
func (s *session) Exec(ctx context.Context, q string) error {
	if _, err := s.conn.ExecContext(ctx, q); err != nil {
		return engineError(err)
	}
	return nil
}

// engineError strips the driver's wrapping from DuckDB's message, and
// the excerpt of floe's own wrapping statements (COPY (query) TO ...,
// CREATE ... AS query), whose positions would not be the query's.
func engineError(err error) error {
	var de *duck.Error
	if !errors.As(err, &de) {
		return err
	}
	lines := strings.Split(de.Msg, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "LINE ") {
			if _, rest, ok := strings.Cut(l, ": "); ok && (strings.HasPrefix(rest, "COPY (") || strings.HasPrefix(rest, "CREATE ")) {
				i++ // and the caret below it
				continue
			}
		}
		out = append(out, l)
	}
	return errors.New(strings.TrimRight(strings.Join(out, "\n"), "\n"))
}

// Query writes the result to a Parquet file of the session and streams it.
func (s *session) Query(ctx context.Context, q string) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	if err := s.Check(ctx, q); err != nil {
		return nil, nil, err
	}
	q, err := s.exactIntegers(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	p := s.path("out")
	if err := s.Exec(ctx, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", q, literal(p))); err != nil {
		return nil, nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	s.open = append(s.open, f)
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("duckdb: read the result: %w", err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, nil, fmt.Errorf("duckdb: read the result: %w", err)
	}
	schema, err := fr.Schema()
	if err != nil {
		pf.Close()
		return nil, nil, fmt.Errorf("duckdb: read the result: %w", err)
	}
	schema = plainSchema(schema)
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		defer pf.Close()
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			yield(nil, fmt.Errorf("duckdb: read the result: %w", err))
			return
		}
		defer rr.Release()
		for rr.Next() {
			rec := rr.RecordBatch()
			out := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
			if !yield(out, nil) {
				return
			}
		}
		if err := rr.Err(); err != nil {
			yield(nil, fmt.Errorf("duckdb: read the result: %w", err))
		}
	}
	return schema, seq, nil
}

// exactIntegers wraps q so that its 128-bit integer columns (DuckDB's
// sum of an INTEGER or BIGINT column is a HUGEINT) leave as BIGINT: DuckDB
// writes HUGEINT to Parquet as DOUBLE, which loses the last digits of
// sums past 2^53, and Spark's and Iceberg's sum of a long is a long. A
// value out of BIGINT's range fails the query with DuckDB's conversion
// error instead of being rounded.
func (s *session) exactIntegers(ctx context.Context, q string) (string, error) {
	cols, err := s.Strings(ctx, "SELECT column_name, column_type FROM (DESCRIBE "+q+")")
	if err != nil {
		return "", err
	}
	var casts []string
	for _, c := range cols {
		if len(c) == 2 && (c[1] == "HUGEINT" || c[1] == "UHUGEINT") {
			casts = append(casts, fmt.Sprintf("CAST(%s AS BIGINT) AS %s", quote(c[0]), quote(c[0])))
		}
	}
	if len(casts) == 0 {
		return q, nil
	}
	return fmt.Sprintf("SELECT * REPLACE (%s) FROM (%s)", strings.Join(casts, ", "), q), nil
}

// Strings runs a query with a small result.
func (s *session) Strings(ctx context.Context, q string, args ...any) ([][]string, error) {
	rows, err := s.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, engineError(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = v.String
		}
		out = append(out, row)
	}
	return out, engineError(rows.Err())
}

// Close closes the database and removes the session's files.
func (s *session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	for _, f := range s.open {
		f.Close()
	}
	err := errors.Join(s.conn.Close(), s.db.Close())
	return errors.Join(err, os.RemoveAll(s.dir))
}

var _ driver.Connector = (*duck.Connector)(nil)
