//go:build cgo

package duckdb_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
)

// TestAnalyzeGroupBy: which GROUP BY queries the group-by rule maintains
// (keyed by their group columns) and why the others are rebuilt in full.
func TestAnalyzeGroupBy(t *testing.T) {
	ctx := context.Background()
	s, err := sqltx.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		query  string
		keys   string
		reason string // "" = group-by
	}{
		{"SELECT cat, count(*) AS n, sum(amount) AS s, avg(amount) AS a, min(amount), max(amount), count(DISTINCT amount) AS d FROM ns.src GROUP BY cat", "cat", ""},
		{"SELECT o.cat, count(amount) AS n FROM ns.src o WHERE o.amount > 3 GROUP BY o.cat HAVING sum(amount) > 10", "cat", ""},
		{"SELECT coalesce(cat, 'none') AS c, flag, sum(amount) FILTER (WHERE flag) AS s FROM ns.src GROUP BY coalesce(cat, 'none'), flag", "c,flag", ""},
		{"SELECT upper(cat) AS c, count(*) AS n FROM ns.src GROUP BY 1", "c", ""},
		{"SELECT cat, count(*) + 1 AS n1, CASE WHEN max(amount) > 5 THEN 'big' END AS size FROM ns.src GROUP BY cat", "cat", ""},
		// Full, with the reason.
		{"SELECT cat, count(*) AS n FROM ns.src GROUP BY cat", "", "no key: set the key to the group columns (cat)"},
		{"SELECT cat, flag, count(*) AS n FROM ns.src GROUP BY cat, flag", "cat", "not the group columns of the result (cat, flag)"},
		{"SELECT cat, count(*) AS n FROM ns.src GROUP BY cat", "n", "not the group columns"},
		{"SELECT count(*) AS n FROM ns.src", "n", "without GROUP BY: it is recomputed in full"},
		{"SELECT cat, count(*) AS n FROM ns.src GROUP BY ALL", "cat", "GROUP BY ALL"},
		{"SELECT cat, flag, count(*) AS n FROM ns.src GROUP BY ROLLUP (cat, flag)", "cat,flag", "ROLLUP"},
		{"SELECT cat, string_agg(id::VARCHAR, ',') AS ids FROM ns.src GROUP BY cat", "cat", "does not recompute (string_agg"},
		{"SELECT cat, sum(amount ORDER BY id) AS s FROM ns.src GROUP BY cat", "cat", "ORDER BY"},
		{"SELECT cat, count(*) AS n FROM ns.src GROUP BY cat ORDER BY n", "cat", "ORDER BY"},
		{"SELECT cat, count(*) AS n FROM ns.src GROUP BY cat LIMIT 3", "cat", "LIMIT"},
		{"SELECT cat, sum(random()) AS r FROM ns.src GROUP BY cat", "cat", "not deterministic"},
		{"SELECT s.cat, count(*) AS n FROM ns.src s RIGHT JOIN ns.dim d ON s.cat = d.cat GROUP BY s.cat", "cat", "right join"},
		{"SELECT cat, count(*) AS n FROM (SELECT * FROM ns.src) q GROUP BY cat", "cat", "subquery"},
		{"SELECT count(*) AS n FROM ns.src GROUP BY cat", "n", "not a column of the result"},
		{"SELECT upper(cat), count(*) AS n FROM ns.src GROUP BY upper(cat)", "n", "no name in the result"},
		{"SELECT upper(cat) AS c, count(*) AS n FROM ns.src GROUP BY c", "c", "names a result column"},
		{"SELECT upper(cat) AS c, count(*) AS n FROM ns.src WHERE c <> 'A' GROUP BY upper(cat)", "c", "the WHERE names c, a result column"},
		{"SELECT cat AS c, count(*) AS n FROM ns.src WHERE cat <> 'a' GROUP BY cat", "c", ""},
		{"SELECT cat, rank() OVER (ORDER BY count(*)) AS r FROM ns.src GROUP BY cat", "cat", "window function"},
	} {
		checkRule(t, ctx, s, c.query, c.keys, sqltx.RuleGroupBy, c.reason)
	}
}

// groupQueries are the GROUP BY queries the per-case test maintains side
// by side, with their keys.
var groupQueries = []struct{ name, query, keys string }{
	{"all", "SELECT cat, count(*) AS n, sum(amount) AS total, avg(amount) AS mean, min(amount) AS lo, max(amount) AS hi, count(DISTINCT amount) AS d, count(amount) AS c FROM ns.src WHERE cat IS NOT NULL GROUP BY cat", "cat"},
	{"nulls", "SELECT coalesce(cat, 'none') AS c, flag, sum(amount) AS total, min(amount) AS lo, count(*) AS n FROM ns.src GROUP BY coalesce(cat, 'none'), flag", "c,flag"},
	{"having", "SELECT cat, sum(amount) AS total, count(*) AS n FROM ns.src o WHERE o.cat IS NOT NULL GROUP BY o.cat HAVING sum(amount) > 20", "cat"},
}

// TestGroupByCases: the group-by rule case by case (insert into a new
// group, a row moving between groups, the last row of a group deleted,
// NULL group values, HAVING crossing its threshold both ways, COUNT
// DISTINCT, MIN after deleting the min), on copy-on-write and
// merge-on-read sources, v2 and v3: every build after the first is
// incremental and the destination equals the query recomputed in full.
func TestGroupByCases(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			e := newEnv(t)
			e.create("src", srcSchema, []string{"id"}, mode.props)
			var trs []*transform.Transform
			for _, q := range groupQueries {
				tr, plan, err := sqltx.New(e.Ctx, sqltx.Spec{Name: q.name, Query: q.query, Dst: "ns." + q.name, Keys: strings.Split(q.keys, ",")})
				if err != nil {
					t.Fatal(err)
				}
				if rule, reason := plan.RuleFor(strings.Split(q.keys, ",")); rule != sqltx.RuleGroupBy {
					t.Fatalf("%s: rule %s (%s)", q.name, rule, reason)
				}
				trs = append(trs, tr)
			}
			amount := func(v int64) func([]any) []any { return func(r []any) []any { r[2] = v; return r } }
			steps := []struct {
				what string
				do   func()
			}{
				{"first rows", func() {
					e.insert("src", []any{int64(1), "a", int64(10), true}, []any{int64(2), "a", int64(5), false},
						[]any{int64(3), "b", int64(7), true}, []any{int64(4), nil, int64(3), true})
				}},
				{"insert into a new group", func() { e.insert("src", []any{int64(5), "c", int64(30), true}) }},
				{"move a row between groups", func() { e.update("src", func(r []any) []any { r[1] = "b"; return r }, 2) }},
				{"delete the last row of a group", func() { e.del("src", 5) }},
				{"HAVING crosses its threshold upwards", func() { e.update("src", amount(25), 3) }},
				{"delete the min", func() { e.del("src", 2) }},
				{"NULL group values", func() {
					e.update("src", func(r []any) []any { r[1] = "a"; return r }, 4)
					e.insert("src", []any{int64(6), nil, int64(8), false}, []any{int64(7), nil, int64(9), false})
				}},
				{"COUNT DISTINCT with a repeated value", func() { e.insert("src", []any{int64(8), "a", int64(10), true}) }},
				{"HAVING crosses its threshold downwards", func() { e.update("src", amount(1), 3) }},
				{"the last NULL-group row leaves", func() { e.del("src", 6, 7) }},
				{"update the max in place", func() { e.update("src", amount(2), 1, 8) }},
				// No group touched for the queries whose WHERE drops the row.
				{"a row outside the WHERE", func() { e.insert("src", []any{int64(9), nil, int64(4), true}) }},
				{"nothing but the row outside the WHERE changes", func() { e.update("src", amount(40), 9) }},
			}
			for i, st := range steps {
				st.do()
				for j, tr := range trs {
					q := groupQueries[j]
					res, err := e.build(tr)
					if err != nil {
						t.Fatalf("%s after %q: %v", q.name, st.what, err)
					}
					if i > 0 && !res.Incremental {
						t.Fatalf("%s after %q: full build: %s", q.name, st.what, res.Reason)
					}
					if got, want := e.rowsOf(q.name), e.recompute(q.query); got != want {
						t.Fatalf("%s after %q:\ngot  %s\nwant %s", q.name, st.what, got, want)
					}
					if sum := e.summary(q.name); sum != nil && sum[sqltx.SummaryRule] != sqltx.RuleGroupBy {
						t.Fatalf("%s: summary %v", q.name, sum)
					}
				}
			}
			// The HAVING query's group b did cross both ways.
			if got := e.rowsOf("having"); strings.Contains(got, "'b'") {
				t.Fatalf("having: group b still there: %s", got)
			}
		})
	}
}

// TestGroupByNullKey: a NULL group value in a group column is a NULL key,
// refused as by the other keyed rules (full and incremental), with
// nothing committed.
func TestGroupByNullKey(t *testing.T) {
	e := newEnv(t)
	e.create("src", srcSchema, []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true})
	q := "SELECT cat, count(*) AS n FROM ns.src GROUP BY cat"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bycat", Query: q, Dst: "ns.bycat", Keys: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	before := e.Load("bycat").CurrentSnapshot().SnapshotID
	e.insert("src", []any{int64(2), nil, int64(1), true}, []any{int64(3), "b", int64(1), true})
	_, err = e.build(tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "NULL key in 1 row(s) (key cat)") || !strings.Contains(err.Error(), "transform bycat") {
		t.Fatalf("error %v", err)
	}
	if after := e.Load("bycat").CurrentSnapshot().SnapshotID; after != before {
		t.Fatal("something was committed")
	}
	// Fixed upstream: the build goes on, incrementally.
	e.del("src", 2)
	res, err := e.build(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Incremental {
		t.Fatalf("full: %s", res.Reason)
	}
	if got, want := e.rowsOf("bycat"), e.recompute(q); got != want || got != "('a',1) ('b',1)" {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestGroupByFallback: a GROUP BY query whose key is not its group
// columns is rebuilt in full, with the reason in the result and the
// snapshot summary.
func TestGroupByFallback(t *testing.T) {
	e := newEnv(t)
	e.create("src", srcSchema, []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true}, []any{int64(2), "b", int64(5), false})
	q := "SELECT cat, flag, count(*) AS n FROM ns.src GROUP BY cat, flag"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "f", Query: q, Dst: "ns.f", Keys: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res, err := e.build(tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incremental || (i > 0 && !strings.Contains(res.Reason, "not the group columns")) {
			t.Fatalf("build %d: incremental %v, reason %q", i, res.Incremental, res.Reason)
		}
		if sum := e.summary("f"); sum[sqltx.SummaryRule] != sqltx.RuleFull || !strings.Contains(sum[sqltx.SummaryRebuildReason], "not the group columns") {
			t.Fatalf("summary %v", sum)
		}
		if got, want := e.rowsOf("f"), e.recompute(q); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
		e.insert("src", []any{int64(3 + i), "c", int64(1), true})
	}
}
