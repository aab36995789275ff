package merge_test

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// spillBudget is far below the size of the change sets of the spill
// tests, so that they spill, are partitioned again and are matched in
// several groups.
const spillBudget = 64 << 10

// spillKeys describes the key columns of a spill test's table.
type spillKeys struct {
	name    string
	schema  string   // the table's columns; the key columns first, then v string, part int
	keys    []string // key columns
	newKey  func(rng *rand.Rand, n int) []any
	skewed  bool // keys chosen to fall into one partition of the first level
	nKeyCol int
}

var spillKeyKinds = []spillKeys{
	{name: "dense long", schema: "id long not null, v string, part int", keys: []string{"id"}, nKeyCol: 1,
		newKey: func(_ *rand.Rand, n int) []any { return []any{int64(n)} }},
	{name: "sparse long", schema: "id long not null, v string, part int", keys: []string{"id"}, nKeyCol: 1,
		newKey: func(_ *rand.Rand, n int) []any { return []any{int64(n) * 1_000_003} }},
	{name: "random long", schema: "id long not null, v string, part int", keys: []string{"id"}, nKeyCol: 1,
		newKey: func(rng *rand.Rand, _ int) []any { return []any{int64(rng.Uint64())} }},
	{name: "string", schema: "k string not null, v string, part int", keys: []string{"k"}, nKeyCol: 1,
		newKey: func(_ *rand.Rand, n int) []any { return []any{fmt.Sprintf("key-%07d", n)} }},
	{name: "long and string", schema: "id long not null, k string not null, v string, part int", keys: []string{"id", "k"}, nKeyCol: 2,
		newKey: func(_ *rand.Rand, n int) []any { return []any{int64(n % 97), fmt.Sprintf("k%d", n/97)} }},
	{name: "skewed string", schema: "k string not null, v string, part int", keys: []string{"k"}, nKeyCol: 1, skewed: true,
		newKey: func(_ *rand.Rand, n int) []any { return []any{fmt.Sprintf("key-%07d", n)} }},
	{name: "skewed long", schema: "id long not null, v string, part int", keys: []string{"id"}, nKeyCol: 1, skewed: true,
		newKey: func(_ *rand.Rand, n int) []any { return []any{int64(n)} }},
}

// keyGen hands out distinct keys of a kind; skewed kinds only keys whose
// hash puts them in partition 0 of the first level (rows.HashKeys' low 6
// bits), as rows.Partitioner picks partitions.
type keyGen struct {
	k    spillKeys
	rng  *rand.Rand
	n    int
	seen map[string]bool
	as   *arrow.Schema // the key columns
}

func newKeyGen(k spillKeys, rng *rand.Rand, tableSchema *arrow.Schema) *keyGen {
	return &keyGen{k: k, rng: rng, seen: map[string]bool{}, as: arrow.NewSchema(tableSchema.Fields()[:k.nKeyCol], nil)}
}

func (g *keyGen) next() []any {
	for {
		key := g.k.newKey(g.rng, g.n)
		g.n++
		s := fmt.Sprint(key)
		if g.seen[s] {
			continue
		}
		if g.k.skewed {
			rec, err := tabletest.Record(g.as, [][]any{key})
			if err != nil {
				panic(err)
			}
			h := rows.HashKeys(rec, seqN(g.k.nKeyCol), nil)[0]
			rec.Release()
			if h&63 != 0 {
				continue
			}
		}
		g.seen[s] = true
		return key
	}
}

func seqN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// change is one change row: the table row (key, v, part) and its type
// and sequence value.
type change struct {
	row  []any
	kind string
	seq  int64
}

// spillCase is a generated table and change set, with the rows the table
// must hold after the changes are applied.
type spillCase struct {
	keys     spillKeys
	part     string
	initial  [][]any
	changes  []change
	withSeq  bool
	expected [][]any
}

func keyOf(row []any, n int) string { return fmt.Sprint(row[:n]) }

// genSpillCase generates a table of n rows and about 2n changes: without a
// sequence column at most one change (and any number of UPDATE_BEFORE
// rows) per key; with one, several per key in random sequence order, ties
// included. The expected rows are computed by a plain model of apply.
func genSpillCase(rng *rand.Rand, k spillKeys, tableSchema *arrow.Schema, n int, withSeq bool) spillCase {
	c := spillCase{keys: k, withSeq: withSeq}
	if rng.IntN(2) == 0 {
		c.part = "part"
	}
	gen := newKeyGen(k, rng, tableSchema)
	live := map[string][]any{}
	var order []string
	row := func(key []any, tag string) []any {
		r := append(slices.Clone(key), fmt.Sprintf("%s-%d", tag, rng.IntN(1000)), int64(rng.IntN(3)))
		return r
	}
	for range n {
		r := row(gen.next(), "v0")
		c.initial = append(c.initial, r)
		live[keyOf(r, k.nKeyCol)] = r
		order = append(order, keyOf(r, k.nKeyCol))
	}
	existing := slices.Clone(c.initial)
	rng.Shuffle(len(existing), func(i, j int) { existing[i], existing[j] = existing[j], existing[i] })
	type winner struct {
		seq  int64
		rank int
		row  []any
		kind string
	}
	rank := map[string]int{merge.UpdateBefore: 0, merge.Delete: 1, merge.UpdateAfter: 2, merge.Insert: 3}
	final := map[string]*winner{}
	emit := func(ch change) {
		c.changes = append(c.changes, ch)
		if !withSeq {
			return
		}
		kk := keyOf(ch.row, k.nKeyCol)
		w := final[kk]
		if w == nil || ch.seq > w.seq || ch.seq == w.seq && rank[ch.kind] >= w.rank {
			final[kk] = &winner{seq: ch.seq, rank: rank[ch.kind], row: ch.row, kind: ch.kind}
		}
	}
	// Changes of existing keys: updates, deletes, before-images.
	for i, old := range existing[:n*3/4] {
		key := old[:k.nKeyCol]
		kk := keyOf(old, k.nKeyCol)
		if !withSeq {
			if rng.IntN(4) == 0 {
				emit(change{row: old, kind: merge.UpdateBefore})
			}
			switch {
			case i%3 == 2:
				emit(change{row: old, kind: merge.Delete})
				delete(live, kk)
			case rng.IntN(8) == 0: // a lone before-image: nothing
			default:
				r := row(key, "v1")
				emit(change{row: r, kind: merge.UpdateAfter})
				live[kk] = r
			}
			continue
		}
		for range 1 + rng.IntN(4) {
			kinds := []string{merge.UpdateBefore, merge.Delete, merge.UpdateAfter, merge.Insert}
			emit(change{row: row(key, "v1"), kind: kinds[rng.IntN(4)], seq: int64(rng.IntN(5))})
		}
	}
	// New keys: inserts, and deletes of keys the table never had.
	for i := range n {
		r := row(gen.next(), "v2")
		kk := keyOf(r, k.nKeyCol)
		if withSeq {
			for range 1 + rng.IntN(3) {
				kinds := []string{merge.Delete, merge.UpdateAfter, merge.Insert}
				emit(change{row: row(r[:k.nKeyCol], "v2"), kind: kinds[rng.IntN(3)], seq: int64(rng.IntN(5))})
			}
			continue
		}
		if i%5 == 4 {
			emit(change{row: r, kind: merge.Delete})
			continue
		}
		emit(change{row: r, kind: merge.Insert})
		live[kk] = r
		order = append(order, kk)
	}
	rng.Shuffle(len(c.changes), func(i, j int) { c.changes[i], c.changes[j] = c.changes[j], c.changes[i] })
	if withSeq {
		// The shuffle changed the arrival order of ties: recompute the
		// winners in the new order.
		final = map[string]*winner{}
		kept := c.changes
		c.changes = nil
		for _, ch := range kept {
			emit(ch)
		}
		for kk, w := range final {
			if w.rank >= 2 {
				if _, ok := live[kk]; !ok {
					order = append(order, kk)
				}
				live[kk] = w.row
			} else {
				delete(live, kk)
			}
		}
	}
	seen := map[string]bool{}
	for _, kk := range order {
		if r, ok := live[kk]; ok && !seen[kk] {
			seen[kk] = true
			c.expected = append(c.expected, r)
		}
	}
	return c
}

// changeRecords renders the changes as batches of 500 rows: the table's
// columns, _change_type and, with a sequence column, seq.
func (c spillCase) changeRecords(tableSchema *arrow.Schema) (*arrow.Schema, []arrow.RecordBatch, error) {
	fields := append(slices.Clone(tableSchema.Fields()), arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String})
	if c.withSeq {
		fields = append(fields, arrow.Field{Name: "seq", Type: arrow.PrimitiveTypes.Int64})
	}
	sch := arrow.NewSchema(fields, nil)
	var out []arrow.RecordBatch
	for lo := 0; lo < len(c.changes); lo += 500 {
		var data [][]any
		for _, ch := range c.changes[lo:min(lo+500, len(c.changes))] {
			r := append(slices.Clone(ch.row), ch.kind)
			if c.withSeq {
				r = append(r, ch.seq)
			}
			data = append(data, r)
		}
		rec, err := tabletest.Record(sch, data)
		if err != nil {
			releaseRecs(out)
			return nil, nil, err
		}
		out = append(out, rec)
	}
	return sch, out, nil
}

func releaseRecs(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

func replay(recs []arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}

// spillModes are the ways Apply removes rows.
var spillModes = []struct {
	name  string
	props iceberg.Properties
	del   merge.DeleteMode
}{
	{"cow", iceberg.Properties{"format-version": "2"}, merge.DeleteAuto},
	{"position", iceberg.Properties{"format-version": "2"}, merge.DeletePosition},
	{"dv", iceberg.Properties{"format-version": "3"}, merge.DeletePosition},
	{"equality", iceberg.Properties{"format-version": "2"}, merge.DeleteEquality},
}

// createWith creates ns.name with rows written in three appends (three
// data files per partition).
func createWith(t *testing.T, e *tabletest.Env, name string, c spillCase, props iceberg.Properties) *arrow.Schema {
	t.Helper()
	tbl, err := e.Create(name, c.keys.schema, c.part, nil, props)
	if err != nil {
		t.Fatal(err)
	}
	as := tabletest.ArrowSchema(tbl)
	third := len(c.initial)/3 + 1
	for lo := 0; lo < len(c.initial); lo += third {
		if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(as, c.initial[lo:min(lo+third, len(c.initial))])); err != nil {
			t.Fatal(err)
		}
	}
	return as
}

func expectedRows(t *testing.T, as *arrow.Schema, data [][]any) []string {
	t.Helper()
	rec, err := tabletest.Record(as, data)
	if err != nil {
		t.Fatal(err)
	}
	out, err := rows.FormatSorted(func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func modelSeed(t *testing.T) uint64 {
	seed := uint64(rand.Int64())
	if s := os.Getenv("FLOE_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with FLOE_MODEL_SEED=%d)", seed, seed)
	return seed
}

// TestApplySpillModel: for random tables and change sets (with and
// without a sequence column, keys of several kinds, some chosen so that
// they all fall into one partition), in every delete mode, Apply with a
// memory budget far below the change set's size spills it, splits the
// skewed partition again, matches the keys in several groups, and gives
// the same table as Apply in memory, which is the table a plain model of
// apply computes.
func TestApplySpillModel(t *testing.T) {
	seed := modelSeed(t)
	for trial, k := range spillKeyKinds {
		rng := rand.New(rand.NewPCG(seed, uint64(trial)))
		withSeq := trial%2 == 1
		t.Run(fmt.Sprintf("%s/seq=%t", k.name, withSeq), func(t *testing.T) {
			e := tabletest.New(t)
			probe, err := e.Create("probe", k.schema, "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := genSpillCase(rng, k, tabletest.ArrowSchema(probe), 1500, withSeq)
			for mi, m := range spillModes {
				var results [2][]string
				for bi, budget := range []int64{0, spillBudget} {
					name := fmt.Sprintf("t%d_%d", mi, bi)
					as := createWith(t, e, name, c, m.props)
					sch, recs, err := c.changeRecords(as)
					if err != nil {
						t.Fatal(err)
					}
					var spilled, repart int64
					groups := 0
					done := merge.SetSpillHook(func(s, r int64, g int) { spilled, repart, groups = s, r, g })
					opts := []merge.Option{merge.WithDeleteMode(m.del), merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir())}
					if withSeq {
						opts = append(opts, merge.WithSequenceColumn("seq"))
					}
					res, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, replay(recs), k.keys, opts...)
					done()
					releaseRecs(recs)
					if err != nil {
						t.Fatalf("%s, budget %d: %v", m.name, budget, err)
					}
					if budget == 0 && res.Spilled != 0 {
						t.Fatalf("%s: the default budget spilled %d bytes of a small change set", m.name, res.Spilled)
					}
					if budget > 0 {
						if res.Spilled == 0 || spilled == 0 {
							t.Fatalf("%s: a budget of %d bytes did not spill", m.name, budget)
						}
						if k.skewed && repart == 0 {
							t.Fatalf("%s: skewed keys were not partitioned again", m.name)
						}
						if (k.name == "string" || k.name == "skewed string") && groups < 2 {
							t.Fatalf("%s: string keys matched in %d group(s), want several", m.name, groups)
						}
					}
					got, err := e.Rows(e.Load(name), scan.At{})
					if err != nil {
						t.Fatal(err)
					}
					results[bi] = got
				}
				want := expectedRows(t, tabletest.ArrowSchema(probe), c.expected)
				for bi, label := range []string{"in memory", "spilled"} {
					if d := diffRows(results[bi], want); d != "" {
						t.Fatalf("%s, %s: table differs from the model: %s", m.name, label, d)
					}
				}
			}
		})
	}
}

// diffRows describes how got differs from want ("" when equal).
func diffRows(got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	g, w := map[string]int{}, map[string]int{}
	for _, r := range got {
		g[r]++
	}
	for _, r := range want {
		w[r]++
	}
	var extra, missing []string
	for r, n := range g {
		if w[r] < n {
			extra = append(extra, r)
		}
	}
	for r, n := range w {
		if g[r] < n {
			missing = append(missing, r)
		}
	}
	slices.Sort(extra)
	slices.Sort(missing)
	return fmt.Sprintf("%d rows, want %d; extra %v; missing %v", len(got), len(want), extra[:min(5, len(extra))], missing[:min(5, len(missing))])
}

// TestApplySpillCardinality: two changes of one key fail with
// ErrCardinality in memory and spilled alike, and nothing is committed.
func TestApplySpillCardinality(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null, v string, part int", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "part", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "_change_type", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for i := range 5000 {
		id := int64(i)
		if i == 4321 {
			id = 17 // the second change of key 17
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("x", 20))
		b.Field(2).(*array.Int32Builder).Append(1)
		b.Field(3).(*array.StringBuilder).Append(merge.Insert)
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	for _, budget := range []int64{0, spillBudget} {
		var spilled int64
		done := merge.SetSpillHook(func(s, _ int64, _ int) { spilled = s })
		_, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch, replay([]arrow.RecordBatch{rec}), []string{"id"},
			merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir()))
		done()
		if budget > 0 && spilled == 0 {
			t.Fatalf("budget %d: nothing spilled", budget)
		}
		if !errors.Is(err, merge.ErrCardinality) {
			t.Fatalf("budget %d: %v, want ErrCardinality", budget, err)
		}
		if !strings.Contains(err.Error(), "2 changes for the key (id=17) (rows 17 and 4321: INSERT and INSERT)") {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if s := e.Load("t").CurrentSnapshot(); s != nil {
			t.Fatalf("budget %d: snapshot %d committed", budget, s.SnapshotID)
		}
	}
}

// mergeStatements are MERGE statements whose effect the model of
// TestMergeSpillModel computes. %[1]s is the target, %[2]s the ON
// condition on the keys.
var mergeStatements = []struct {
	name string
	sql  string
}{
	{"changes", `MERGE INTO %[1]s t USING src s ON %[2]s
		WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
		WHEN MATCHED THEN UPDATE SET *
		WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *`},
	{"by source", `MERGE INTO %[1]s t USING src s ON %[2]s
		WHEN MATCHED AND t.part = 1 THEN UPDATE SET v = s.v
		WHEN MATCHED AND s.part = 0 THEN DELETE
		WHEN NOT MATCHED BY SOURCE AND t.part = 2 THEN UPDATE SET v = 'gone'
		WHEN NOT MATCHED THEN INSERT *`},
}

// mergeModel computes the rows of the table after a mergeStatements
// statement: initial rows, source rows (table columns plus a change type).
func mergeModel(stmt string, k spillKeys, initial [][]any, source []change) [][]any {
	n := k.nKeyCol
	src := map[string]change{}
	for _, c := range source {
		src[keyOf(c.row, n)] = c
	}
	var out [][]any
	matched := map[string]bool{}
	vCol, partCol := n, n+1
	for _, r := range initial {
		kk := keyOf(r, n)
		s, ok := src[kk]
		if ok {
			matched[kk] = true
		}
		switch stmt {
		case "changes":
			switch {
			case ok && s.kind == merge.Delete:
			case ok:
				out = append(out, s.row)
			default:
				out = append(out, r)
			}
		case "by source":
			switch {
			case ok && r[partCol] == int64(1):
				nr := slices.Clone(r)
				nr[vCol] = s.row[vCol]
				out = append(out, nr)
			case ok && s.row[partCol] == int64(0):
			case !ok && r[partCol] == int64(2):
				nr := slices.Clone(r)
				nr[vCol] = "gone"
				out = append(out, nr)
			default:
				out = append(out, r)
			}
		}
	}
	for _, c := range source {
		if matched[keyOf(c.row, n)] {
			continue
		}
		if stmt == "changes" && c.kind == merge.Delete {
			continue
		}
		out = append(out, c.row)
	}
	return out
}

// TestMergeSpillModel: for random tables and sources (keys of several
// kinds) and MERGE statements, in every delete mode, Merge with a memory
// budget far below the source's size spills the source to runs, joins
// each with the table and gives the same table as Merge in memory, which
// is the table a plain model computes.
func TestMergeSpillModel(t *testing.T) {
	seed := modelSeed(t)
	for trial, k := range spillKeyKinds {
		if k.skewed {
			continue // the source is not partitioned by key
		}
		rng := rand.New(rand.NewPCG(seed, uint64(100+trial)))
		t.Run(k.name, func(t *testing.T) {
			e := tabletest.New(t)
			probe, err := e.Create("probe", k.schema, "", nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := genSpillCase(rng, k, tabletest.ArrowSchema(probe), 1200, false)
			// The source: one row per key (the last change of each).
			last := map[string]int{}
			for i, ch := range c.changes {
				if ch.kind != merge.UpdateBefore {
					last[keyOf(ch.row, k.nKeyCol)] = i
				}
			}
			var source []change
			for i, ch := range c.changes {
				if j, ok := last[keyOf(ch.row, k.nKeyCol)]; ok && j == i {
					source = append(source, ch)
				}
			}
			var on []string
			for _, key := range k.keys {
				on = append(on, fmt.Sprintf("t.%s = s.%s", key, key))
			}
			for si, st := range mergeStatements {
				want := expectedRows(t, tabletest.ArrowSchema(probe), mergeModel(st.name, k, c.initial, source))
				for mi, m := range spillModes[:3] {
					for bi, budget := range []int64{0, spillBudget} {
						name := fmt.Sprintf("m%d_%d_%d", si, mi, bi)
						as := createWith(t, e, name, c, m.props)
						sc := spillCase{changes: source}
						sch, recs, err := sc.changeRecords(as)
						if err != nil {
							t.Fatal(err)
						}
						stmt, err := expr.ParseMerge(fmt.Sprintf(st.sql, "ns."+name, strings.Join(on, " AND ")))
						if err != nil {
							t.Fatal(err)
						}
						groups := 0
						done := merge.SetSpillHook(func(_, _ int64, g int) { groups = g })
						res, err := merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Name: "src", Schema: sch, Rows: replay(recs)},
							merge.WithDeleteMode(m.del), merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir()))
						done()
						releaseRecs(recs)
						if err != nil {
							t.Fatalf("%s, %s, budget %d: %v", st.name, m.name, budget, err)
						}
						if budget == 0 && (res.Spilled != 0 || groups != 1) {
							t.Fatalf("%s, %s: the default budget spilled %d bytes in %d runs", st.name, m.name, res.Spilled, groups)
						}
						if budget > 0 && (res.Spilled == 0 || groups < 3) {
							t.Fatalf("%s, %s: budget %d spilled %d bytes in %d runs, want 3 runs or more", st.name, m.name, budget, res.Spilled, groups)
						}
						got, err := e.Rows(e.Load(name), scan.At{})
						if err != nil {
							t.Fatal(err)
						}
						if d := diffRows(got, want); d != "" {
							t.Fatalf("%s, %s, budget %d: table differs from the model: %s", st.name, m.name, budget, d)
						}
					}
				}
			}
		})
	}
}

// TestMergeSpillCardinality: a target row matched by source rows that
// land in different spilled runs fails with Spark's cardinality error,
// naming both source rows as in memory, and nothing is committed.
func TestMergeSpillCardinality(t *testing.T) {
	e := tabletest.New(t)
	tbl, err := e.Create("t", "id long not null, v string, part int", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	as := tabletest.ArrowSchema(tbl)
	var data [][]any
	for i := range 50 {
		data = append(data, []any{int64(i), "x", int64(0)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(as, data)); err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	for i := range 8000 {
		id := int64(1000 + i)
		if i == 3 || i == 7777 {
			id = 17
		}
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(strings.Repeat("y", 20))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	stmt, err := expr.ParseMerge(`MERGE INTO ns.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)`)
	if err != nil {
		t.Fatal(err)
	}
	before := e.Load("t").CurrentSnapshot().SnapshotID
	for _, budget := range []int64{0, spillBudget} {
		groups := 0
		done := merge.SetSpillHook(func(_, _ int64, g int) { groups = g })
		_, err := merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Name: "src", Schema: sch, Rows: replay([]arrow.RecordBatch{rec})},
			merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir()))
		done()
		if budget > 0 && groups < 2 {
			t.Fatalf("budget %d: %d runs", budget, groups)
		}
		if !errors.Is(err, merge.ErrCardinality) || !strings.Contains(err.Error(), "the target row (id=17) at position 17 matches source rows 3 and 7777 (counting from 0)") {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if s := e.Load("t").CurrentSnapshot().SnapshotID; s != before {
			t.Fatalf("budget %d: snapshot %d committed", budget, s)
		}
	}
}

// TestApplySpillHotKey: a change set where a few keys carry most of the
// rows (one key updated 20,000 times, one changed 8,000 times and deleted
// last, one new key changed 8,000 times and inserted last, in random
// order, with a sequence column) spills past a small budget, in every
// delete mode, and gives the table the model gives, as Apply in memory
// does: a key's changes collapse to its winner as they spill, so one key
// never has to come back from disk whole.
func TestApplySpillHotKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(modelSeed(t), 14))
	k := spillKeyKinds[0] // id long
	c := spillCase{keys: k, withSeq: true}
	live := map[int64][]any{}
	for i := range int64(1500) {
		r := []any{i, fmt.Sprintf("v0-%d", i), int64(i % 3)}
		c.initial = append(c.initial, r)
		live[i] = r
	}
	hot := func(id int64, n int, last string) {
		for s := range n {
			kind := []string{merge.UpdateAfter, merge.Delete, merge.Insert, merge.UpdateBefore}[rng.IntN(4)]
			if s == n-1 {
				kind = last
			}
			c.changes = append(c.changes, change{row: []any{id, fmt.Sprintf("hot-%d-%d", id, s), int64(1)}, kind: kind, seq: int64(s)})
		}
	}
	hot(7, 20_000, merge.UpdateAfter)
	live[7] = []any{int64(7), "hot-7-19999", int64(1)}
	hot(8, 8_000, merge.Delete)
	delete(live, 8)
	hot(1600, 8_000, merge.Insert)
	live[1600] = []any{int64(1600), "hot-1600-7999", int64(1)}
	for i := int64(10); i < 1500; i += 2 {
		r := []any{i, fmt.Sprintf("v1-%d", i), int64(2)}
		c.changes = append(c.changes, change{row: r, kind: merge.UpdateAfter, seq: 1})
		live[i] = r
	}
	rng.Shuffle(len(c.changes), func(i, j int) { c.changes[i], c.changes[j] = c.changes[j], c.changes[i] })
	for _, r := range live {
		c.expected = append(c.expected, r)
	}
	e := tabletest.New(t)
	for mi, m := range spillModes {
		var results [2][]string
		for bi, budget := range []int64{0, spillBudget} {
			name := fmt.Sprintf("hot%d_%d", mi, bi)
			as := createWith(t, e, name, c, m.props)
			sch, recs, err := c.changeRecords(as)
			if err != nil {
				t.Fatal(err)
			}
			res, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, replay(recs), k.keys,
				merge.WithDeleteMode(m.del), merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir()),
				merge.WithSequenceColumn("seq"))
			releaseRecs(recs)
			if err != nil {
				t.Fatalf("%s, budget %d: %v", m.name, budget, err)
			}
			if (budget > 0) != (res.Spilled > 0) {
				t.Fatalf("%s, budget %d: spilled %d bytes", m.name, budget, res.Spilled)
			}
			if res.Deletes != 1 || res.Upserts != 2+745 {
				t.Fatalf("%s, budget %d: %d upserts and %d deletes, want %d and 1", m.name, budget, res.Upserts, res.Deletes, 2+745)
			}
			if results[bi], err = e.Rows(e.Load(name), scan.At{}); err != nil {
				t.Fatal(err)
			}
		}
		want := expectedRows(t, tabletest.ArrowSchema(e.Load("hot0_0")), c.expected)
		for bi, label := range []string{"in memory", "spilled"} {
			if d := diffRows(results[bi], want); d != "" {
				t.Fatalf("%s, %s: table differs from the model: %s", m.name, label, d)
			}
		}
	}
}
