package catalog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/faultcat"
)

// sqliteBusyError returns the error SQLite gives a reader while another
// connection holds the file's exclusive lock (no busy timeout).
func sqliteBusyError(t *testing.T) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), "busy.db")
	a, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Exec(`CREATE TABLE x (i INTEGER)`); err != nil {
		t.Fatal(err)
	}
	conn, err := a.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	b, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var n int
	err = b.QueryRow(`SELECT count(*) FROM x`).Scan(&n)
	if err == nil {
		t.Fatal("no busy error while another connection holds the exclusive lock")
	}
	return fmt.Errorf("error encountered loading table ns.t: %w", err)
}

func TestIsTransient(t *testing.T) {
	busy := sqliteBusyError(t)
	for _, c := range []struct {
		kinds []string
		err   error
		want  bool
	}{
		{[]string{"embedded", "sql"}, busy, true},
		{[]string{"rest", "hive", "glue", "hadoop"}, busy, false},
		{[]string{"rest"}, faultcat.ErrServiceUnavailable, true},
		{[]string{"rest"}, faultcat.ErrGatewayTimeout, true},
		{[]string{"rest"}, faultcat.ErrReset, true},
		{[]string{"rest"}, faultcat.ErrEOF, true},
		{[]string{"rest"}, faultcat.ErrTimeout, true},
		{[]string{"rest"}, &requestTimeoutError{}, true},
		{[]string{"embedded", "sql"}, faultcat.ErrServiceUnavailable, false},
		{[]string{"rest", "embedded", "sql"}, fmt.Errorf("load: %w", icecat.ErrNoSuchTable), false},
		{[]string{"rest"}, faultcat.ErrConflict, false},
		{[]string{"rest"}, errors.New("something else"), false},
	} {
		for _, k := range c.kinds {
			if got := IsTransient(k, c.err); got != c.want {
				t.Errorf("%s: IsTransient(%q) = %v, want %v", k, c.err, got, c.want)
			}
		}
	}
}

// busyOnce fails the first n loads with SQLite's busy error.
type busyOnce struct {
	icecat.Catalog
	err   error
	fails atomic.Int32
}

func (b *busyOnce) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if b.fails.Add(-1) >= 0 {
		return nil, b.err
	}
	return b.Catalog.LoadTable(ctx, id)
}

// TestEmbeddedBusyRetried: a load of the embedded catalog that fails
// because another process holds the SQLite lock past the busy timeout is
// retried.
func TestEmbeddedBusyRetried(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.CreateNamespace(ctx, table.Identifier{"ns"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateTable(ctx, ident, sqliteSchema()); err != nil {
		t.Fatal(err)
	}
	b := &busyOnce{err: sqliteBusyError(t)}
	b.fails.Store(2)
	c.Wrap(Wrap{Catalog: func(ice icecat.Catalog) icecat.Catalog { b.Catalog = ice; return b }})
	if _, err := c.Load(ctx, ident); err != nil {
		t.Fatalf("a busy SQLite file was not retried: %v", err)
	}
	// Not with WithoutRetry (package commit retries by its own policy).
	b.fails.Store(1)
	if _, err := c.Load(WithoutRetry(ctx), ident); err == nil {
		t.Fatal("WithoutRetry retried")
	}
}

func sqliteSchema() *iceberg.Schema {
	return iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
}
