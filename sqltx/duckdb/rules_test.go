//go:build cgo

package duckdb_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
)

const srcSchema = "id long not null, cat string, amount long, flag boolean"

// source modes: copy-on-write and merge-on-read.
var modes = []struct {
	name  string
	props iceberg.Properties
}{
	{"cow", nil},
	{"mor", iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "format-version": "2"}},
	{"mor-v3", iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "format-version": "3"}},
}

// history applies random inserts, updates and deletes to ns.src.
type history struct {
	e    *env
	rng  *rand.Rand
	live map[int64]bool
	next int64
}

var cats = []any{"a", "b", "c", nil}

func (h *history) row(id int64) []any {
	var flag any = h.rng.IntN(2) == 0
	if h.rng.IntN(8) == 0 {
		flag = nil
	}
	var amount any = int64(h.rng.IntN(100))
	if h.rng.IntN(10) == 0 {
		amount = nil
	}
	return []any{id, cats[h.rng.IntN(len(cats))], amount, flag}
}

func (h *history) pick(n int) []int64 {
	var ids []int64
	for id := range h.live {
		if len(ids) < n && h.rng.IntN(2) == 0 {
			ids = append(ids, id)
		}
	}
	return ids
}

// step makes one snapshot (or none, when it picks no row).
func (h *history) step() string {
	switch k := h.rng.IntN(4); {
	case k == 0 || len(h.live) < 3:
		var data [][]any
		for range 1 + h.rng.IntN(4) {
			h.next++
			data = append(data, h.row(h.next))
			h.live[h.next] = true
		}
		h.e.insert("src", data...)
		return fmt.Sprintf("insert %d", len(data))
	case k == 1:
		ids := h.pick(2)
		if len(ids) == 0 {
			return "nothing"
		}
		h.e.del("src", ids...)
		for _, id := range ids {
			delete(h.live, id)
		}
		return fmt.Sprintf("delete %v", ids)
	default:
		ids := h.pick(3)
		if len(ids) == 0 {
			return "nothing"
		}
		h.e.update("src", func(r []any) []any { return h.row(r[0].(int64)) }, ids...)
		return fmt.Sprintf("update %v", ids)
	}
}

var (
	exprs = []string{
		"amount * 2 AS a2", "upper(cat) AS ucat", "CASE WHEN amount > 50 THEN 'big' WHEN amount IS NULL THEN 'none' ELSE 'small' END AS size",
		"CAST(amount AS DOUBLE) / 4 AS q", "coalesce(cat, 'none') AS c2", "length(cat) AS len", "flag", "NOT flag AS nf",
		"amount::VARCHAR || '-' || cat AS label", "cat", "amount",
	}
	preds = []string{
		"amount > %d", "amount < %d", "cat = 'a'", "cat IS NULL", "cat <> 'b'", "flag", "NOT flag", "amount %% 3 = 0",
		"amount BETWEEN %d AND 80", "cat IN ('a', 'c')", "coalesce(amount, 0) > %d", "length(cat) = 1",
	}
)

// randomQuery draws a row-local query over ns.src from a small grammar;
// keyed queries keep id.
func randomQuery(rng *rand.Rand, keyed bool) string {
	var cols []string
	if keyed || rng.IntN(2) == 0 {
		cols = append(cols, "id")
	}
	for _, i := range rng.Perm(len(exprs))[:1+rng.IntN(3)] {
		cols = append(cols, exprs[i])
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM ns.src"
	pred := func() string {
		p := preds[rng.IntN(len(preds))]
		if strings.Contains(p, "%d") {
			p = fmt.Sprintf(p, rng.IntN(100))
		}
		return strings.ReplaceAll(p, "%%", "%")
	}
	switch rng.IntN(4) {
	case 0:
	case 1:
		q += " WHERE " + pred()
	case 2:
		q += " WHERE " + pred() + " AND " + pred()
	default:
		q += " WHERE " + pred() + " OR NOT (" + pred() + ")"
	}
	return q
}

// TestRandomRowLocal: random row-local queries over random histories of
// inserts, updates and deletes (copy-on-write, merge-on-read with position
// deletes on v2 and deletion vectors on v3): after
// every build, incremental from the changes, the destination equals the
// query recomputed in full on the source's state.
func TestRandomRowLocal(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 19))
	for round := range 6 {
		mode := modes[round%len(modes)]
		keyed := round != 4 // one append-only round (inserts only)
		t.Run(fmt.Sprintf("%d-%s-keyed=%v", round, mode.name, keyed), func(t *testing.T) {
			e := newEnv(t)
			e.create("src", srcSchema, []string{"id"}, mode.props)
			h := &history{e: e, rng: rng, live: map[int64]bool{}}
			q := randomQuery(rng, keyed)
			spec := sqltx.Spec{Name: "rand", Query: q, Dst: "ns.dst"}
			if keyed {
				spec.Keys = []string{"id"}
			}
			tr, _, err := sqltx.New(e.Ctx, spec)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			var log []string
			for i := range 8 {
				if keyed {
					log = append(log, h.step())
				} else {
					// Append-only: inserts only (a delete rebuilds in full).
					h.next++
					h.live[h.next] = true
					e.insert("src", h.row(h.next))
					log = append(log, "insert 1")
				}
				if i%3 == 2 {
					log = append(log, h.step())
				}
				res, err := e.build(tr)
				if err != nil {
					t.Fatalf("%s\nafter %v: %v", q, log, err)
				}
				if i > 0 && !res.Skipped && !res.Incremental && keyed {
					t.Fatalf("%s\nafter %v: build %d was full: %s", q, log, i, res.Reason)
				}
				if got, want := e.rowsOf("dst"), e.recompute(q); got != want {
					t.Fatalf("%s\nafter %v:\ngot  %s\nwant %s", q, log, got, want)
				}
			}
		})
	}
}

// TestFullRule: a query that is not row-local is rebuilt in full on every
// build, with the reason in the result and the snapshot summary.
func TestFullRule(t *testing.T) {
	e := newEnv(t)
	e.create("src", srcSchema, []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true}, []any{int64(2), "a", int64(5), false}, []any{int64(3), "b", int64(7), nil})
	q := "SELECT cat, sum(amount) AS total, count(*) AS n FROM ns.src GROUP BY ALL"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "totals", Query: q, Dst: "ns.totals", Keys: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		res, err := e.build(tr)
		if err != nil {
			t.Fatal(err)
		}
		if res.Incremental {
			t.Fatalf("build %d incremental", i)
		}
		if i > 0 && !strings.Contains(res.Reason, "GROUP BY") {
			t.Fatalf("build %d: reason %q", i, res.Reason)
		}
		sum := e.summary("totals")
		if sum[sqltx.SummaryRule] != sqltx.RuleFull || !strings.Contains(sum[sqltx.SummaryRebuildReason], "GROUP BY") {
			t.Fatalf("summary %v", sum)
		}
		if sum["floe.source.ns.src.snapshot-id"] == "" {
			t.Fatalf("no watermark in the summary: %v", sum)
		}
		if got, want := e.rowsOf("totals"), e.recompute(q); got != want {
			t.Fatalf("build %d: got %s, want %s", i, got, want)
		}
		e.update("src", func(r []any) []any { r[2] = r[2].(int64) + 1; return r }, 1)
	}
}

// TestDuplicateKeys: a query whose result repeats a key fails naming the
// key, and commits nothing (on the first build, and on an incremental
// build where a changed row takes the key of an unchanged one).
func TestDuplicateKeys(t *testing.T) {
	e := newEnv(t)
	e.create("src", srcSchema, []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true}, []any{int64(2), "a", int64(5), false})
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bycat", Query: "SELECT cat, amount FROM ns.src", Dst: "ns.bycat", Keys: []string{"cat"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.build(tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "key cat=a") || !strings.Contains(err.Error(), "transform bycat") {
		t.Fatalf("error %v", err)
	}
	if _, err := e.Cat.LoadTable(e.Ctx, "ns.bycat"); err == nil {
		t.Fatal("the destination was created")
	}
	// Incremental: unique at first, then row 2 moves to cat a.
	e.update("src", func(r []any) []any { r[1] = "b"; return r }, 2)
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	before := e.Load("bycat").CurrentSnapshot().SnapshotID
	e.update("src", func(r []any) []any { r[1] = "a"; return r }, 2)
	_, err = e.build(tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "cat=a") {
		t.Fatalf("error %v", err)
	}
	if after := e.Load("bycat").CurrentSnapshot().SnapshotID; after != before {
		t.Fatal("something was committed")
	}
	// Two new rows with one key in one build.
	e.update("src", func(r []any) []any { r[1] = "c"; return r }, 2)
	e.insert("src", []any{int64(3), "d", int64(1), true}, []any{int64(4), "d", int64(2), true})
	_, err = e.build(tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "2 rows with the key cat=d") {
		t.Fatalf("error %v", err)
	}
	// A NULL key.
	e.update("src", func(r []any) []any { r[1] = nil; return r }, 4)
	_, err = e.build(tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "a NULL key in 1 row(s) (key cat)") {
		t.Fatalf("error %v", err)
	}
	if after := e.Load("bycat").CurrentSnapshot().SnapshotID; after != before {
		t.Fatal("something was committed")
	}
}

// TestBadQuery: unknown columns and tables are reported with the
// transform and the position in the query; nothing is committed.
func TestBadQuery(t *testing.T) {
	e := newEnv(t)
	e.create("src", srcSchema, []string{"id"}, nil)
	e.insert("src", []any{int64(1), "a", int64(10), true})
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bad", Query: "SELECT id, nope FROM ns.src", Dst: "ns.bad", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.build(tr)
	if err == nil || !strings.Contains(err.Error(), "transform bad") || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "LINE 1") {
		t.Fatalf("error %v", err)
	}
	tr, _, err = sqltx.New(e.Ctx, sqltx.Spec{Name: "missing", Query: "SELECT * FROM ns.nosuch", Dst: "ns.bad2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = e.build(tr); err == nil || !strings.Contains(err.Error(), "ns.nosuch") {
		t.Fatalf("error %v", err)
	}
	tr, _, err = sqltx.New(e.Ctx, sqltx.Spec{Name: "nokey", Query: "SELECT cat FROM ns.src", Dst: "ns.bad3", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err = e.build(tr); err == nil || !strings.Contains(err.Error(), `no column "id"`) {
		t.Fatalf("error %v", err)
	}
	for _, n := range []string{"ns.bad", "ns.bad2", "ns.bad3"} {
		if _, err := e.Cat.LoadTable(e.Ctx, n); err == nil {
			t.Errorf("%s was created", n)
		}
	}
}

// The grammar of random GROUP BY queries: group expressions (never NULL,
// or cat with its NULL rows filtered out), aggregates and HAVING.
var (
	groupExprs = []struct{ sel, group, name string }{
		{"coalesce(cat, 'none') AS g", "coalesce(cat, 'none')", "g"},
		{"coalesce(flag, false) AS f", "coalesce(flag, false)", "f"},
		{"coalesce(amount, 0) % 4 AS m", "coalesce(amount, 0) % 4", "m"},
		{"cat", "cat", "cat"},
	}
	aggs = []string{
		"count(*) AS n", "sum(amount) AS s", "avg(amount) AS av", "min(amount) AS lo", "max(amount) AS hi",
		"count(DISTINCT amount) AS d", "count(amount) AS c", "sum(amount) FILTER (WHERE flag) AS sf", "max(cat) AS mc",
		"count(*) + sum(amount) AS ns",
	}
	havings = []string{"count(*) > 1", "sum(amount) > 100", "min(amount) < 30", "count(DISTINCT cat) = 1"}
)

// randomGroupQuery draws a GROUP BY query over ns.src and its key (the
// group columns).
func randomGroupQuery(rng *rand.Rand) (string, []string) {
	var sel, group, keys, where []string
	for _, i := range rng.Perm(len(groupExprs))[:1+rng.IntN(2)] {
		g := groupExprs[i]
		sel, group, keys = append(sel, g.sel), append(group, g.group), append(keys, g.name)
		if g.name == "cat" {
			where = append(where, "cat IS NOT NULL")
		}
	}
	for _, i := range rng.Perm(len(aggs))[:1+rng.IntN(4)] {
		sel = append(sel, aggs[i])
	}
	if rng.IntN(3) == 0 {
		p := preds[rng.IntN(len(preds))]
		if strings.Contains(p, "%d") {
			p = fmt.Sprintf(p, rng.IntN(100))
		}
		where = append(where, strings.ReplaceAll(p, "%%", "%"))
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM ns.src"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " GROUP BY " + strings.Join(group, ", ")
	if rng.IntN(3) == 0 {
		q += " HAVING " + havings[rng.IntN(len(havings))]
	}
	return q, keys
}

// TestRandomGroupBy: random GROUP BY queries over random histories of
// inserts, updates and deletes (copy-on-write, merge-on-read v2 and v3):
// every build after the first is incremental (group-by rule) and the
// destination equals the query recomputed in full.
func TestRandomGroupBy(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 23))
	for round := range 6 {
		mode := modes[round%len(modes)]
		t.Run(fmt.Sprintf("%d-%s", round, mode.name), func(t *testing.T) {
			e := newEnv(t)
			e.create("src", srcSchema, []string{"id"}, mode.props)
			h := &history{e: e, rng: rng, live: map[int64]bool{}}
			q, keys := randomGroupQuery(rng)
			tr, plan, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "rand", Query: q, Dst: "ns.dst", Keys: keys})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if rule, reason := plan.RuleFor(keys); rule != sqltx.RuleGroupBy {
				t.Fatalf("%s: rule %s (%s)", q, rule, reason)
			}
			var log []string
			for i := range 8 {
				log = append(log, h.step())
				if i%3 == 2 {
					log = append(log, h.step())
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
