package pipeline_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/sqltx"
)

// TestSQLWithoutEngine: the pipeline package does not link DuckDB. A file
// with a sql transform validates; making its steps without an engine
// registered fails with ErrNoEngine, naming the transform.
func TestSQLWithoutEngine(t *testing.T) {
	if sqltx.Available() {
		t.Skip("an SQL engine is linked into this test binary")
	}
	f, err := pipeline.Parse("p.yaml", []byte(`transforms:
  - name: gross
    type: sql
    query: SELECT id, amount * 2 AS a2 FROM shop.orders
    key: id
    destination: shop.gross
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Pipeline()
	if !errors.Is(err, sqltx.ErrNoEngine) || !strings.Contains(err.Error(), `transform "gross"`) {
		t.Fatalf("error %v", err)
	}
	_, err = pipeline.Parse("p.yaml", []byte(`transforms:
  - name: gross
    type: sql
    destination: shop.gross
    filter: a > 1
`))
	if err == nil || !strings.Contains(err.Error(), "field query: missing (required by type sql)") || !strings.Contains(err.Error(), "field filter: not used by type sql") {
		t.Fatalf("error %v", err)
	}
}
