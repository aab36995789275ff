//go:build cgo

package duckdb_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/sqltx/duckdb"
)

const (
	factSchema = "id long not null, dim_id long, amount long"
	dimSchema  = "id long not null, name string, region string"
)

// joinCase builds tr after each step and checks the destination against
// the query recomputed in full (multiset), and that builds after the
// first are incremental by the join rule.
func checkJoin(t *testing.T, e *env, q string, keys []string, steps ...func()) {
	t.Helper()
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "j", Query: q, Dst: "ns.out", Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	for i := -1; i < len(steps); i++ {
		if i >= 0 {
			steps[i]()
		}
		res, err := e.build(tr)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i >= 0 && !res.Skipped && !res.Incremental {
			t.Fatalf("step %d: full build: %s", i, res.Reason)
		}
		if got := e.summary("out")[sqltx.SummaryRule]; got != sqltx.RuleJoin {
			t.Fatalf("step %d: rule %q", i, got)
		}
		if got, want := e.rowsOf("out"), e.recompute(q); got != want {
			t.Fatalf("step %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
}

func setupJoin(t *testing.T, mode int) *env {
	e := newEnv(t)
	e.create("fact", factSchema, []string{"id"}, modes[mode].props)
	e.create("dim", dimSchema, []string{"id"}, modes[mode].props)
	e.insert("dim", []any{int64(1), "one", "eu"}, []any{int64(2), "two", "us"}, []any{int64(3), "three", "eu"})
	e.insert("fact", []any{int64(10), int64(1), int64(5)}, []any{int64(11), int64(1), int64(7)}, []any{int64(12), int64(2), int64(1)},
		[]any{int64(13), int64(9), int64(2)}, []any{int64(14), nil, int64(3)})
	return e
}

const (
	innerQ = "SELECT f.id, f.amount * 2 AS a2, d.name, upper(d.region) AS region FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id WHERE f.amount > 1"
	leftQ  = "SELECT f.id, f.amount, d.name FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id AND d.region <> 'xx'"
)

func rename(name string) func(r []any) []any {
	return func(r []any) []any { r[1] = name; return r }
}

// TestJoinCases: one history per case, on copy-on-write and
// merge-on-read sources (v2 and v3), for inner and left joins.
func TestJoinCases(t *testing.T) {
	for m := range modes {
		for _, q := range []struct{ name, query string }{{"inner", innerQ}, {"left", leftQ}} {
			t.Run(modes[m].name+"-"+q.name, func(t *testing.T) {
				cases := map[string]func(e *env) []func(){
					"dim-update": func(e *env) []func() {
						return []func(){func() { e.update("dim", rename("uno"), 1) }, func() { e.update("dim", func(r []any) []any { r[2] = "xx"; return r }, 2) }}
					},
					"dim-delete": func(e *env) []func() {
						return []func(){func() { e.del("dim", 1) }, func() { e.insert("dim", []any{int64(1), "back", "eu"}) }}
					},
					"dim-insert-matches": func(e *env) []func() {
						return []func(){func() { e.insert("dim", []any{int64(9), "nine", "us"}) }}
					},
					"fact-insert-delete": func(e *env) []func() {
						return []func(){func() { e.insert("fact", []any{int64(20), int64(3), int64(4)}, []any{int64(21), int64(8), int64(4)}) },
							func() { e.del("fact", 10, 13) }}
					},
					"fact-dim-change": func(e *env) []func() {
						return []func(){func() {
							e.update("fact", func(r []any) []any { r[1] = int64(3); return r }, 11)
						}, func() {
							e.update("fact", func(r []any) []any { r[1] = nil; r[2] = int64(0); return r }, 12)
						}}
					},
					"both-sides": func(e *env) []func() {
						return []func(){func() {
							e.update("dim", rename("un"), 1)
							e.del("dim", 2)
							e.insert("fact", []any{int64(30), int64(1), int64(9)}, []any{int64(31), int64(2), int64(9)})
							e.update("fact", func(r []any) []any { r[1] = int64(2); return r }, 10)
						}}
					},
				}
				for name, steps := range cases {
					t.Run(name, func(t *testing.T) {
						e := setupJoin(t, m)
						checkJoin(t, e, q.query, []string{"id"}, steps(e)...)
					})
				}
			})
		}
	}
}

// TestJoinThreeTables: a chain of an inner and a left join.
func TestJoinThreeTables(t *testing.T) {
	e := setupJoin(t, 0)
	e.create("reg", "id long not null, code string, label string", []string{"id"}, nil)
	e.insert("reg", []any{int64(1), "eu", "Europe"})
	q := "SELECT f.id, d.name, r.label FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id LEFT JOIN ns.reg r ON r.code = d.region"
	checkJoin(t, e, q, []string{"id"},
		func() { e.insert("reg", []any{int64(2), "us", "America"}) },
		func() { e.update("dim", func(r []any) []any { r[2] = "us"; return r }, 1) },
		func() { e.del("reg", 1); e.update("reg", func(r []any) []any { r[2] = "US"; return r }, 2) },
	)
}

// TestJoinRules: which joins the rule maintains and which fall back to
// full, with the reason.
func TestJoinRules(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		query, key, want string
	}{
		{innerQ, "id", ""},
		{leftQ, "id", ""},
		{"SELECT f.id, d.id AS did FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id", "did", "NULL-extended"},
		{"SELECT f.id, d.name FROM ns.fact f RIGHT JOIN ns.dim d ON f.dim_id = d.id", "id", "right join"},
		{"SELECT f.id, d.name FROM ns.fact f FULL JOIN ns.dim d ON f.dim_id = d.id", "id", "full join"},
		{"SELECT f.id, d.name FROM ns.fact f JOIN ns.dim d USING (id)", "id", "USING"},
		{"SELECT f.id, random() AS r FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id", "id", "not deterministic"},
		{"SELECT f.id, d.name FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id", "", "no key"},
		{"SELECT f.id + 1 AS id FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id", "id", "table.column"},
	} {
		_, plan, err := sqltx.New(e.Ctx, sqltx.Spec{Query: c.query, Dst: "ns.x", Keys: strings.Fields(c.key)})
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		rule, reason := plan.RuleFor(strings.Fields(c.key))
		if c.want == "" && rule != sqltx.RuleJoin {
			t.Errorf("%s: rule %s (%s)", c.query, rule, reason)
		}
		if c.want != "" && (rule != sqltx.RuleFull || !strings.Contains(reason, c.want)) {
			t.Errorf("%s: rule %s (%s), want full because of %q", c.query, rule, reason, c.want)
		}
	}
}

// TestJoinDuplicateKey: a dimension row that makes a key repeat fails
// the build, naming the key, with nothing committed.
func TestJoinDuplicateKey(t *testing.T) {
	e := setupJoin(t, 0)
	e.create("tag", "id long not null, dim long, tag string", []string{"id"}, nil)
	e.insert("tag", []any{int64(1), int64(1), "x"})
	q := "SELECT f.id, t.tag FROM ns.fact f JOIN ns.tag t ON f.dim_id = t.dim"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "dup", Query: q, Dst: "ns.out", Keys: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.build(tr); err != nil {
		t.Fatal(err)
	}
	before := e.Load("out").CurrentSnapshot().SnapshotID
	e.insert("tag", []any{int64(2), int64(1), "y"})
	_, err = e.build(tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "key id=1") {
		t.Fatalf("error %v", err)
	}
	if after := e.Load("out").CurrentSnapshot().SnapshotID; after != before {
		t.Fatal("something was committed")
	}
}

// TestRandomJoin: random inner and left joins of ns.src with a small
// dimension ns.cats, over random histories of both (copy-on-write and
// merge-on-read, v2 and v3): after every incremental build the
// destination equals the query recomputed in full.
func TestRandomJoin(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 23))
	for round := range 6 {
		mode := modes[round%len(modes)]
		t.Run(fmt.Sprintf("%d-%s", round, mode.name), func(t *testing.T) {
			e := newEnv(t)
			e.create("src", srcSchema, []string{"id"}, mode.props)
			e.create("cats", "id long not null, cat string, label string, weight long", []string{"id"}, mode.props)
			h := &history{e: e, rng: rng, live: map[int64]bool{}}
			dimRow := func(id int64) []any {
				// Mostly one dimension row per cat; sometimes two (the
				// key then repeats, and the build must fail).
				var cat any = fmt.Sprintf("x%d", id)
				if id <= 3 {
					cat = cats[id-1]
				}
				if rng.IntN(6) == 0 {
					cat = cats[rng.IntN(len(cats))]
				}
				return []any{id, cat, fmt.Sprintf("l%d", rng.IntN(3)), int64(rng.IntN(10))}
			}
			e.insert("cats", dimRow(1), dimRow(2), dimRow(3))
			dimNext := int64(3)
			join := []string{"JOIN", "LEFT JOIN"}[rng.IntN(2)]
			on := []string{"s.cat = c.cat", "s.cat = c.cat AND c.weight > 3", "s.cat = c.cat OR s.amount = c.weight"}[rng.IntN(3)]
			cols := []string{"s.id", "s.amount", "c.label", "c.weight * 2 AS w2", "coalesce(c.label, 'none') AS l2"}
			q := fmt.Sprintf("SELECT %s FROM ns.src s %s ns.cats c ON %s", strings.Join(cols[:2+rng.IntN(4)], ", "), join, on)
			if rng.IntN(2) == 0 {
				q += " WHERE " + []string{"s.amount > 20", "c.label <> 'l1'", "c.weight IS NULL OR s.flag"}[rng.IntN(3)]
			}
			tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "rj", Query: q, Dst: "ns.dst", Keys: []string{"id"}})
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			var log []string
			built := false
			for i := range 8 {
				log = append(log, h.step())
				switch rng.IntN(3) {
				case 0:
					dimNext++
					e.insert("cats", dimRow(dimNext))
					log = append(log, "dim insert")
				case 1:
					id := 1 + rng.Int64N(dimNext)
					e.update("cats", func(r []any) []any { return dimRow(r[0].(int64)) }, id)
					log = append(log, fmt.Sprintf("dim update %d", id))
				default:
					id := 1 + rng.Int64N(dimNext)
					e.del("cats", id)
					log = append(log, fmt.Sprintf("dim delete %d", id))
				}
				res, err := e.build(tr)
				if errors.Is(err, transform.ErrKeyNotUnique) {
					// A cat matched by several dimension rows: the key
					// repeats, as the full query would say too.
					log = append(log, "duplicate key")
					if !repeatsFirst(e.recompute(q)) {
						t.Fatalf("%s\nafter %v: %v, but the full result has no repeated key", q, log, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s\nafter %v: %v", q, log, err)
				}
				if built && !res.Skipped && !res.Incremental {
					t.Fatalf("%s\nafter %v: build %d was full: %s", q, log, i, res.Reason)
				}
				built = true
				if got, want := e.rowsOf("dst"), e.recompute(q); got != want {
					t.Fatalf("%s\nafter %v:\ngot  %s\nwant %s", q, log, got, want)
				}
			}
		})
	}
}

// repeatsFirst reports whether two rendered rows share their first value.
func repeatsFirst(rendered string) bool {
	seen := map[string]bool{}
	for _, r := range strings.Split(rendered, " ") {
		k, _, _ := strings.Cut(strings.TrimPrefix(r, "("), ",")
		if seen[k] {
			return true
		}
		seen[k] = true
	}
	return false
}

// countingEngine is the DuckDB engine with a count of the rows bound
// under each schema.table name, for tests that check what a build reads.
type countingEngine struct{ bound map[string]int64 }

func (c *countingEngine) Open(ctx context.Context) (sqltx.Session, error) {
	s, err := duckdb.Engine{}.Open(ctx)
	return &countingSession{Session: s, c: c}, err
}

type countingSession struct {
	sqltx.Session
	c *countingEngine
}

func (s *countingSession) Bind(ctx context.Context, schema, table string, rows array.RecordReader) error {
	var n int64
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		defer rows.Release()
		for rows.Next() {
			rec := rows.RecordBatch()
			n += rec.NumRows()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
		}
	}
	err := s.Session.Bind(ctx, schema, table, transform.NewRows(rows.Schema(), seq))
	s.c.bound[schema+"."+table] = max(s.c.bound[schema+"."+table], n)
	return err
}

// TestJoinDimChangePrunesFact: after a dimension row changes, a fact
// joined to it by a plain column equality is read through a filter on
// its join column (the fact rows of that dimension row only, here 100 of
// 1,000), and through an expression join whole; both results equal the
// query recomputed in full.
func TestJoinDimChangePrunesFact(t *testing.T) {
	for _, c := range []struct {
		on   string
		want int64
	}{{"d.id = f.dim_id", 100}, {"d.id = f.dim_id + 0", 1000}} {
		t.Run(c.on, func(t *testing.T) {
			counter, e := countedFactDim(t)
			q := "SELECT f.id, f.amount, d.name FROM ns.fact f LEFT JOIN ns.dim d ON " + c.on
			checkJoin(t, e, q, []string{"id"}, func() {
				e.update("dim", rename("changed"), 3)
				clear(counter.bound)
			})
			if got := counter.bound["__floe_new.t0"]; got != c.want {
				t.Fatalf("the build read %d fact rows, want %d (bound: %v)", got, c.want, counter.bound)
			}
		})
	}
}

// countedFactDim registers an engine that counts the rows bound per view
// (unregistered when t ends) and makes merge-on-read tables ns.fact (1,000
// rows, 100 per dim_id) and ns.dim (10 rows).
func countedFactDim(t *testing.T) (*countingEngine, *env) {
	counter := &countingEngine{bound: map[string]int64{}}
	sqltx.Register(counter)
	t.Cleanup(func() { sqltx.Register(duckdb.Engine{}) })
	e := newEnv(t)
	mor := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	e.create("fact", factSchema, []string{"id"}, mor)
	e.create("dim", dimSchema, []string{"id"}, mor)
	for d := range 10 {
		var rows [][]any
		for i := range 100 {
			rows = append(rows, []any{int64(d*100 + i), int64(d), int64(i)})
		}
		e.insert("fact", rows...)
		e.insert("dim", []any{int64(d), fmt.Sprintf("d%d", d), "eu"})
	}
	return counter, e
}

// TestJoinFactChangePrunesDim: a dimension joined by a plain column
// equality is read, when the fact changed, through a filter on its join
// column: the changed fact rows' values to find the keys to recompute,
// then the values of those keys' fact rows (here 3 of 10 dimension rows);
// with an expression join it is read whole. When only the dimension
// changed, an inner-joined one is read by the recomputed keys' values (the
// changed row's own, 1 row), a LEFT-joined one whole (its changed rows
// NULL-extend other rows). Every result equals the query recomputed in
// full.
func TestJoinFactChangePrunesDim(t *testing.T) {
	factChange := func(e *env) {
		e.update("fact", func(r []any) []any { r[2] = int64(1000); return r }, 301, 502)
		e.insert("fact", []any{int64(5000), int64(7), int64(1)})
	}
	dimChange := func(e *env) { e.update("dim", rename("changed"), 3) }
	for _, c := range []struct {
		name, join, on string
		step           func(e *env)
		fact, dim      int64
	}{
		{"inner-fact", "JOIN", "d.id = f.dim_id", factChange, 3, 3},
		{"left-fact", "LEFT JOIN", "f.dim_id = d.id AND d.region <> 'xx'", factChange, 3, 3},
		{"inner-fact-expr", "JOIN", "d.id = f.dim_id + 0", factChange, 3, 10},
		{"inner-dim", "JOIN", "d.id = f.dim_id", dimChange, 100, 1},
		{"left-dim", "LEFT JOIN", "d.id = f.dim_id", dimChange, 100, 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			counter, e := countedFactDim(t)
			q := "SELECT f.id, f.amount, d.name FROM ns.fact f " + c.join + " ns.dim d ON " + c.on
			checkJoin(t, e, q, []string{"id"}, func() {
				c.step(e)
				clear(counter.bound)
			})
			if got := counter.bound["__floe_new.t1"]; got != c.dim {
				t.Errorf("the build read %d dimension rows, want %d (bound: %v)", got, c.dim, counter.bound)
			}
			if got := counter.bound["__floe_new.t0"]; got != c.fact {
				t.Errorf("the build read %d fact rows, want %d (bound: %v)", got, c.fact, counter.bound)
			}
		})
	}
}
