package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/floedata/floe/sqltx"
)

// TestQueryWithoutEngine: the cli package does not link DuckDB; without
// an engine, floe query fails with a clear message (the floe binary
// registers DuckDB; cmd/floe's script sql covers it).
func TestQueryWithoutEngine(t *testing.T) {
	if sqltx.Available() {
		t.Skip("an SQL engine is linked into this test binary")
	}
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--warehouse", t.TempDir(), "query", "SELECT * FROM ns.t"}, strings.NewReader(""), &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "SQL transforms need floe built with cgo (DuckDB)") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
