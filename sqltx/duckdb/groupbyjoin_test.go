//go:build cgo

package duckdb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
)

// TestAnalyzeGroupByJoin: which GROUP BY queries over joins the
// group-by-join rule maintains (keyed by their group columns) and why
// the others are rebuilt in full.
func TestAnalyzeGroupByJoin(t *testing.T) {
	ctx := context.Background()
	s, err := sqltx.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		query  string
		keys   string
		reason string // "" = group-by-join
	}{
		{"SELECT d.region, count(*) AS n, sum(f.amount) AS total FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "region", ""},
		{"SELECT coalesce(d.region, 'none') AS region, count(d.id) AS n FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id GROUP BY 1", "region", ""},
		{"SELECT f.dim_id, d.name, min(f.amount) AS lo, count(DISTINCT f.amount) AS k FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id AND d.region <> 'x' WHERE f.amount > 1 GROUP BY f.dim_id, d.name HAVING sum(f.amount) > 3", "dim_id,name", ""},
		{"SELECT r.label, sum(f.amount) AS s FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id LEFT JOIN ns.reg r ON r.code = d.region GROUP BY r.label", "label", ""},
		{"SELECT upper(d.region) AS r, sum(f.amount) FILTER (WHERE f.amount > 2) AS s FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY upper(d.region)", "r", ""},
		// Full, with the reason.
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "", "no key: set the key to the group columns (region)"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "n", "not the group columns"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f RIGHT JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "region", "right join"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f FULL JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "region", "full join"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.dim d USING (id) GROUP BY d.region", "region", "USING"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.fact d ON f.dim_id = d.id GROUP BY d.region", "region", "twice"},
		{"SELECT d.region, string_agg(d.name, ',') AS names FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "region", "does not recompute (string_agg"},
		{"SELECT d.region, sum(random()) AS r FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "region", "not deterministic"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id AND random() > 0.5 GROUP BY d.region", "region", "not deterministic"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY ROLLUP (d.region)", "region", "ROLLUP"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region ORDER BY n", "region", "ORDER BY"},
		{"SELECT count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "n", "not a column of the result"},
		{"SELECT d.region, count(*) AS n FROM ns.fact f JOIN (SELECT * FROM ns.dim) d ON f.dim_id = d.id GROUP BY d.region", "region", "not a table"},
	} {
		checkRule(t, ctx, s, c.query, c.keys, sqltx.RuleGroupByJoin, c.reason)
	}
}

// groupJoinQueries are the GROUP BY queries over ns.fact and ns.dim the
// per-case test maintains side by side, with their keys.
var groupJoinQueries = []struct{ name, query, keys string }{
	{"inner", "SELECT d.region, count(*) AS n, sum(f.amount) AS total, min(f.amount) AS lo, max(f.amount) AS hi, count(DISTINCT f.amount) AS k, avg(f.amount) AS mean FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.region", "region"},
	{"left", "SELECT coalesce(d.region, 'none') AS region, count(*) AS n, count(d.id) AS matched, sum(f.amount) AS total, max(f.amount) AS hi FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id GROUP BY coalesce(d.region, 'none')", "region"},
	{"having", "SELECT d.region, sum(f.amount) AS total, count(*) AS n FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id WHERE f.amount > 1 GROUP BY d.region HAVING sum(f.amount) > 10", "region"},
	{"two", "SELECT f.dim_id, d.name, count(*) AS n, min(f.amount) AS lo FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY f.dim_id, d.name", "dim_id,name"},
}

// TestGroupByJoinCases: the group-by-join rule case by case (a fact
// change, a dimension change moving rows between groups, a dimension row
// deleted under an inner join, a dimension row matching NULL-extended
// fact rows of a left join, HAVING crossing its threshold both ways,
// COUNT DISTINCT, MIN and MAX after deleting the extreme row), on
// copy-on-write and merge-on-read sources, v2 and v3: every build after
// the first is incremental and the destination equals the query
// recomputed in full.
func TestGroupByJoinCases(t *testing.T) {
	for m, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			// dim: 1 one eu, 2 two us, 3 three eu; fact: 10 (1,5),
			// 11 (1,7), 12 (2,1), 13 (9,2), 14 (NULL,3).
			e := setupJoin(t, m)
			var trs []*transform.Transform
			for _, q := range groupJoinQueries {
				keys := strings.Split(q.keys, ",")
				tr, plan, err := sqltx.New(e.Ctx, sqltx.Spec{Name: q.name, Query: q.query, Dst: "ns." + q.name, Keys: keys})
				if err != nil {
					t.Fatal(err)
				}
				if rule, reason := plan.RuleFor(keys); rule != sqltx.RuleGroupByJoin {
					t.Fatalf("%s: rule %s (%s)", q.name, rule, reason)
				}
				trs = append(trs, tr)
			}
			amount := func(v int64) func([]any) []any { return func(r []any) []any { r[2] = v; return r } }
			region := func(v any) func([]any) []any { return func(r []any) []any { r[2] = v; return r } }
			steps := []struct {
				what string
				do   func()
			}{
				{"nothing yet", func() {}},
				{"fact rows into a group and none", func() {
					e.insert("fact", []any{int64(20), int64(3), int64(4)}, []any{int64(21), int64(8), int64(4)})
				}},
				{"a fact row moves between groups", func() { e.update("fact", func(r []any) []any { r[1] = int64(2); return r }, 11) }},
				{"HAVING crosses its threshold upwards", func() { e.update("fact", amount(30), 12) }},
				{"a dimension change moves rows between groups", func() { e.update("dim", region("eu"), 2) }},
				{"COUNT DISTINCT with a repeated value", func() { e.insert("fact", []any{int64(22), int64(3), int64(5)}) }},
				{"delete the max", func() { e.del("fact", 12) }},
				{"delete the min", func() { e.del("fact", 20) }},
				{"a dimension row deleted under the inner join", func() { e.del("dim", 1) }},
				{"a new dimension row matches NULL-extended fact rows", func() { e.insert("dim", []any{int64(9), "nine", "apac"}) }},
				{"a new group from the dimension side only", func() { e.update("dim", region("us"), 3) }},
				{"both sides in one step", func() {
					e.update("dim", region("eu"), 9)
					e.insert("dim", []any{int64(1), "uno", "us"})
					e.update("fact", func(r []any) []any { r[1] = int64(1); r[2] = int64(2); return r }, 14)
					e.del("fact", 13)
				}},
				{"HAVING crosses its threshold downwards", func() { e.update("fact", amount(1), 22, 11) }},
				{"the last rows of a group leave", func() { e.del("dim", 9); e.del("fact", 21) }},
			}
			for i, st := range steps {
				st.do()
				for j, tr := range trs {
					q := groupJoinQueries[j]
					res, err := e.build(tr)
					if err != nil {
						t.Fatalf("%s after %q: %v", q.name, st.what, err)
					}
					if i > 0 && !res.Skipped && !res.Incremental {
						t.Fatalf("%s after %q: full build: %s", q.name, st.what, res.Reason)
					}
					if got, want := e.rowsOf(q.name), e.recompute(q.query); got != want {
						t.Fatalf("%s after %q:\ngot  %s\nwant %s", q.name, st.what, got, want)
					}
					if sum := e.summary(q.name); i > 0 && sum[sqltx.SummaryRule] != sqltx.RuleGroupByJoin {
						t.Fatalf("%s: summary %v", q.name, sum)
					}
				}
			}
			// The history did what the steps say: the left query's 'none'
			// group (fact rows matching no dimension row) is gone once
			// facts 13 and 21 are, and every group of the having query
			// ended under its threshold (us: 5 + 2 over the WHERE).
			if got := e.rowsOf("left"); strings.Contains(got, "'none'") {
				t.Fatalf("left: group none still there: %s", got)
			}
			if got := e.rowsOf("having"); got != "" {
				t.Fatalf("having: groups still there: %s", got)
			}
		})
	}
}

// TestGroupByJoinThreeTables: a GROUP BY over an inner and a left join,
// grouped by a column of the LEFT-joined table (NULL when it does not
// match, hence coalesce).
func TestGroupByJoinThreeTables(t *testing.T) {
	e := setupJoin(t, 1)
	e.create("reg", "id long not null, code string, label string", []string{"id"}, nil)
	e.insert("reg", []any{int64(1), "eu", "Europe"})
	q := "SELECT coalesce(r.label, '?') AS label, count(*) AS n, sum(f.amount) AS total FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id LEFT JOIN ns.reg r ON r.code = d.region GROUP BY coalesce(r.label, '?')"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "g3", Query: q, Dst: "ns.g3", Keys: []string{"label"}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []func(){
		func() {},
		func() { e.insert("reg", []any{int64(2), "us", "America"}) },
		func() { e.update("dim", func(r []any) []any { r[2] = "us"; return r }, 1) },
		func() { e.del("reg", 1); e.update("reg", func(r []any) []any { r[2] = "US"; return r }, 2) },
		func() { e.insert("fact", []any{int64(40), int64(3), int64(8)}); e.del("fact", 12) },
	}
	for i, st := range steps {
		st()
		res, err := e.build(tr)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i > 0 && !res.Incremental {
			t.Fatalf("step %d: full build: %s", i, res.Reason)
		}
		if got, want := e.rowsOf("g3"), e.recompute(q); got != want {
			t.Fatalf("step %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
	if got := e.rowsOf("g3"); got != "('?',1,8) ('US',2,12)" {
		t.Fatalf("final result %s", got)
	}
}

// TestRandomGroupByJoin: random GROUP BY queries over an inner or left
// join of ns.src with a small dimension ns.cats (whose cat repeats at
// times: a fact row then joins several dimension rows), over random
// histories of both (copy-on-write, merge-on-read v2 and v3): every
// build after the first is incremental (group-by-join rule) and the
// destination equals the query recomputed in full.
func TestRandomGroupByJoin(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 29))
	rounds, steps := 4, 7
	if testing.Short() {
		rounds, steps = 2, 4
	}
	// Plain columns (which prune the recompute's reads) need a WHERE
	// that drops NULL groups: a NULL key is refused.
	groups := []struct{ sel, group, name, where string }{
		{"coalesce(c.label, 'none') AS l", "coalesce(c.label, 'none')", "l", ""},
		{"coalesce(s.cat, 'none') AS g", "coalesce(s.cat, 'none')", "g", ""},
		{"coalesce(c.weight, -1) % 3 AS w", "coalesce(c.weight, -1) % 3", "w", ""},
		{"coalesce(s.flag, false) AS f", "coalesce(s.flag, false)", "f", ""},
		{"s.cat", "s.cat", "cat", "s.cat IS NOT NULL"},
		{"c.label", "c.label", "label", "c.label IS NOT NULL"},
		{"c.weight", "c.weight", "weight", "c.weight IS NOT NULL"},
	}
	aggs := []string{
		"count(*) AS n", "sum(s.amount) AS sa", "avg(s.amount) AS av", "min(s.amount) AS lo", "max(c.weight) AS hw",
		"count(DISTINCT s.amount) AS d", "count(c.id) AS matched", "sum(s.amount) FILTER (WHERE c.weight > 4) AS sf",
	}
	for round := range rounds {
		mode := modes[round%len(modes)]
		t.Run(fmt.Sprintf("%d-%s", round, mode.name), func(t *testing.T) {
			e := newEnv(t)
			e.create("src", srcSchema, []string{"id"}, mode.props)
			e.create("cats", "id long not null, cat string, label string, weight long", []string{"id"}, mode.props)
			h := &history{e: e, rng: rng, live: map[int64]bool{}}
			dimRow := func(id int64) []any {
				var cat any = fmt.Sprintf("x%d", id)
				if id <= 3 {
					cat = cats[id-1]
				}
				if rng.IntN(4) == 0 {
					cat = cats[rng.IntN(len(cats))]
				}
				return []any{id, cat, fmt.Sprintf("l%d", rng.IntN(3)), int64(rng.IntN(10))}
			}
			e.insert("cats", dimRow(1), dimRow(2), dimRow(3))
			dimNext := int64(3)
			var sel, group, keys, where []string
			for _, i := range rng.Perm(len(groups))[:1+rng.IntN(2)] {
				g := groups[i]
				sel, group, keys = append(sel, g.sel), append(group, g.group), append(keys, g.name)
				if g.where != "" {
					where = append(where, g.where)
				}
			}
			for _, i := range rng.Perm(len(aggs))[:1+rng.IntN(4)] {
				sel = append(sel, aggs[i])
			}
			join := []string{"JOIN", "LEFT JOIN"}[rng.IntN(2)]
			on := []string{"s.cat = c.cat", "s.cat = c.cat AND c.weight > 3", "s.cat = c.cat OR s.amount = c.weight"}[rng.IntN(3)]
			q := fmt.Sprintf("SELECT %s FROM ns.src s %s ns.cats c ON %s", strings.Join(sel, ", "), join, on)
			if rng.IntN(2) == 0 {
				where = append(where, []string{"s.amount > 20", "c.label <> 'l1'", "c.weight IS NULL OR s.flag"}[rng.IntN(3)])
			}
			if len(where) > 0 {
				q += " WHERE (" + strings.Join(where, ") AND (") + ")"
			}
			q += " GROUP BY " + strings.Join(group, ", ")
			if rng.IntN(3) == 0 {
				q += " HAVING " + []string{"count(*) > 1", "sum(s.amount) > 100", "min(s.amount) < 30"}[rng.IntN(3)]
			}
			tr, plan, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "rgj", Query: q, Dst: "ns.dst", Keys: keys})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if rule, reason := plan.RuleFor(keys); rule != sqltx.RuleGroupByJoin {
				t.Fatalf("%s: rule %s (%s)", q, rule, reason)
			}
			var log []string
			for i := range steps {
				log = append(log, h.step())
				switch rng.IntN(4) {
				case 0:
					dimNext++
					e.insert("cats", dimRow(dimNext))
					log = append(log, "dim insert")
				case 1:
					id := 1 + rng.Int64N(dimNext)
					e.update("cats", func(r []any) []any { return dimRow(r[0].(int64)) }, id)
					log = append(log, fmt.Sprintf("dim update %d", id))
				case 2:
					id := 1 + rng.Int64N(dimNext)
					e.del("cats", id)
					log = append(log, fmt.Sprintf("dim delete %d", id))
				default:
					log = append(log, "dim unchanged")
				}
				res, err := e.build(tr)
				if err != nil {
					t.Fatalf("%s\nafter %v: %v", q, log, err)
				}
				if i > 0 && !res.Skipped && !res.Incremental {
					t.Fatalf("%s\nafter %v: build %d was full: %s", q, log, i, res.Reason)
				}
				if got, want := e.rowsOf("dst"), e.recompute(q); got != want {
					t.Fatalf("%s\nafter %v:\ngot  %s\nwant %s", q, log, got, want)
				}
			}
		})
	}
}

// TestGroupByJoinPrunes: the recompute of a GROUP BY over a join reads a
// table that is never NULL-extended, and whose column is a group
// expression, through col IN (the touched groups), and a table joined to
// it by a plain column equality through the pruned rows' join values;
// else whole (here: a LEFT-joined dimension's group column prunes
// nothing). Counted on ns.fact (1,000 rows, 100 per dim_id) and ns.dim
// (10 rows); every result equals the query recomputed in full.
func TestGroupByJoinPrunes(t *testing.T) {
	dimChange := func(e *env) { e.update("dim", rename("changed"), 3) }
	factChange := func(e *env) { e.update("fact", func(r []any) []any { r[2] = int64(1000); return r }, 301, 305) }
	for _, c := range []struct {
		name, query, key string
		step             func(e *env)
		fact, dim        int64
	}{
		{"dim-group-dim-change", "SELECT d.name, count(*) AS n, sum(f.amount) AS s FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.name", "name", dimChange, 100, 1},
		{"fact-group-fact-change", "SELECT f.dim_id, max(d.name) AS name, sum(f.amount) AS s FROM ns.fact f JOIN ns.dim d ON d.id = f.dim_id GROUP BY f.dim_id", "dim_id", factChange, 100, 1},
		{"dim-group-fact-change", "SELECT d.name, count(*) AS n, sum(f.amount) AS s FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.name", "name", factChange, 100, 1},
		{"left-dim-group", "SELECT coalesce(d.name, '?') AS name, sum(f.amount) AS s FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id GROUP BY coalesce(d.name, '?')", "name", dimChange, 1000, 10},
		{"expression-join", "SELECT d.name, sum(f.amount) AS s FROM ns.fact f JOIN ns.dim d ON d.id = f.dim_id + 0 GROUP BY d.name", "name", dimChange, 1000, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			counter, e := countedFactDim(t)
			tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "p", Query: c.query, Dst: "ns.out", Keys: []string{c.key}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				if i == 1 {
					c.step(e)
					clear(counter.bound)
				}
				res, err := e.build(tr)
				if err != nil {
					t.Fatalf("build %d: %v", i, err)
				}
				if i == 1 && !res.Incremental {
					t.Fatalf("full build: %s", res.Reason)
				}
				if got := e.summary("out")[sqltx.SummaryRule]; got != sqltx.RuleGroupByJoin {
					t.Fatalf("build %d: rule %q", i, got)
				}
				if got, want := e.rowsOf("out"), e.recompute(c.query); got != want {
					t.Fatalf("build %d:\ngot  %s\nwant %s", i, got, want)
				}
			}
			if got := counter.bound["__floe_new.t0"]; got != c.fact {
				t.Errorf("the build read %d fact rows, want %d (bound: %v)", got, c.fact, counter.bound)
			}
			if got := counter.bound["__floe_new.t1"]; got != c.dim {
				t.Errorf("the build read %d dimension rows, want %d (bound: %v)", got, c.dim, counter.bound)
			}
		})
	}
}
