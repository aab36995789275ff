//go:build cgo

package duckdb_test

import (
	"strings"
	"testing"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	_ "github.com/floedata/floe/sqltx/duckdb"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	e.create("src", "id long not null, cat string, amount long, flag boolean", []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true}, []any{int64(2), "b", int64(60), false}, []any{int64(3), nil, int64(70), true})
	q := "SELECT id, upper(cat) AS ucat, amount * 2 AS a2 FROM ns.src WHERE amount > 20"
	tr, plan, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "t", Query: q, Dst: "ns.dst", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := plan.Rule(true); r != sqltx.RuleRowLocal {
		t.Fatalf("rule %s: %s", r, plan.NotRowLocal)
	}
	step := func(wantIncremental bool) {
		t.Helper()
		res, err := e.build(tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incremental != wantIncremental {
			t.Fatalf("incremental %v, want %v (%s)", res.Incremental, wantIncremental, res.Reason)
		}
		if got, want := e.rowsOf("dst"), e.recompute(q); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
	step(false)
	e.update("src", func(r []any) []any { r[2] = int64(5); return r }, 2)
	e.insert("src", []any{int64(4), "d", int64(99), false})
	e.del("src", 3)
	step(true)
	if got := e.summary("dst")[sqltx.SummaryRule]; got != sqltx.RuleRowLocal {
		t.Fatalf("summary rule %q", got)
	}
	_ = strings.Contains
	_ = transform.Changelog
}
