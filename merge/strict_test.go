package merge_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// strictKeyKinds are the key columns of TestApplyStrictModel's tables: a
// long (its keys kept as a bitmap while they fit), a string and both.
var strictKeyKinds = []struct {
	name   string
	schema string // the key columns, then v string
	keys   []string
	key    func(n int) []any
	format func(key []any) string // as errors name the key
}{
	{"long", "id long not null, v string", []string{"id"},
		func(n int) []any { return []any{int64(n * 3)} },
		func(k []any) string { return fmt.Sprintf("id=%d", k[0]) }},
	{"string", "k string not null, v string", []string{"k"},
		func(n int) []any { return []any{fmt.Sprintf("key-%03d", n)} },
		func(k []any) string { return fmt.Sprintf("k=%q", k[0]) }},
	{"long and string", "id long not null, k string not null, v string", []string{"id", "k"},
		func(n int) []any { return []any{int64(n % 7), fmt.Sprintf("k%d", n/7)} },
		func(k []any) string { return fmt.Sprintf("id=%d, k=%q", k[0], k[1]) }},
}

// strictCase is a table and a change set, with what a model of strict
// apply says of them: the keys the table would hold twice (then Apply
// fails), else the rows after the changes.
type strictCase struct {
	initial   [][]any
	changes   []change
	withSeq   bool
	offenders map[string]bool // formatted keys
	expected  [][]any
}

// genStrictCase generates a table of about half of 60 keys and changes of
// about two thirds of them, as a source whose keys are unique would send
// them (with a sequence column, several per key: inserts of absent keys,
// deletes and update pairs of present ones; without, at most one per key,
// and before-images), then, in half of the cases, one more INSERT (or
// UPDATE_AFTER) of a random key at a random place, which may or may not
// leave the source with two rows of that key.
func genStrictCase(rng *rand.Rand, keyOf func(int) []any, format func([]any) string, withSeq bool) strictCase {
	const pool = 60
	c := strictCase{withSeq: withSeq}
	row := func(n int, tag string) []any {
		return append(keyOf(n), fmt.Sprintf("%s-%d", tag, rng.IntN(100)))
	}
	inTable := map[int]bool{}
	for n := range pool {
		if rng.IntN(2) == 0 {
			inTable[n] = true
			c.initial = append(c.initial, row(n, "v0"))
		}
	}
	keyN := map[string]int{} // formatted key -> n
	for n := range pool {
		keyN[format(keyOf(n))] = n
		if rng.IntN(3) == 0 {
			continue
		}
		live := inTable[n]
		if !withSeq {
			if rng.IntN(4) == 0 {
				c.changes = append(c.changes, change{row: row(n, "old"), kind: merge.UpdateBefore})
			}
			kind := merge.Insert
			switch {
			case live && rng.IntN(2) == 0:
				kind = merge.UpdateAfter
			case live:
				kind = merge.Delete
			case rng.IntN(4) == 0:
				kind = merge.Delete // of a key the table does not hold
			}
			c.changes = append(c.changes, change{row: row(n, "v1"), kind: kind})
			continue
		}
		s := int64(rng.IntN(3))
		for range 1 + rng.IntN(4) {
			switch {
			case !live:
				c.changes = append(c.changes, change{row: row(n, "v1"), kind: merge.Insert, seq: s})
				live = true
			case rng.IntN(2) == 0:
				c.changes = append(c.changes, change{row: row(n, "v1"), kind: merge.Delete, seq: s})
				live = false
			default:
				c.changes = append(c.changes, change{row: row(n, "v1"), kind: merge.UpdateBefore, seq: s},
					change{row: row(n, "v1"), kind: merge.UpdateAfter, seq: s})
			}
			s += 1 + int64(rng.IntN(2))
		}
	}
	if rng.IntN(2) == 0 {
		n := rng.IntN(pool)
		kind := merge.Insert
		if withSeq && rng.IntN(2) == 0 {
			kind = merge.UpdateAfter
		}
		if !withSeq {
			// At most one change per key (else ErrCardinality): the
			// INSERT replaces the key's.
			c.changes = slices.DeleteFunc(c.changes, func(ch change) bool {
				return keyN[format(ch.row[:len(ch.row)-1])] == n && ch.kind != merge.UpdateBefore
			})
		}
		c.changes = append(c.changes, change{row: row(n, "dup"), kind: kind, seq: int64(rng.IntN(12)) - 1})
	}
	rng.Shuffle(len(c.changes), func(i, j int) { c.changes[i], c.changes[j] = c.changes[j], c.changes[i] })

	// The model: a key's changes in sequence order (ties UPDATE_BEFORE <
	// DELETE < UPDATE_AFTER < INSERT, then arrival), counting the source's
	// rows of the key from the table's: INSERT and, with a sequence
	// column, UPDATE_AFTER add one, DELETE and UPDATE_BEFORE remove one.
	// Two rows of a key is an offence; else the last change wins (an
	// upsert or a delete), as without WithInsertsMustBeNew.
	rank := map[string]int{merge.UpdateBefore: 0, merge.Delete: 1, merge.UpdateAfter: 2, merge.Insert: 3}
	type ev struct {
		change
		arrival int
	}
	byKey := map[int][]ev{}
	for i, ch := range c.changes {
		if !withSeq && ch.kind == merge.UpdateBefore {
			continue // ignored
		}
		n := keyN[format(ch.row[:len(ch.row)-1])]
		byKey[n] = append(byKey[n], ev{ch, i})
	}
	c.offenders = map[string]bool{}
	final := map[int][]any{}
	for n := range pool {
		if inTable[n] {
			final[n] = c.initial[slices.IndexFunc(c.initial, func(r []any) bool { return format(r[:len(r)-1]) == format(keyOf(n)) })]
		}
		evs := byKey[n]
		if len(evs) == 0 {
			continue
		}
		slices.SortFunc(evs, func(a, b ev) int {
			return cmp.Or(cmp.Compare(a.seq, b.seq), cmp.Compare(rank[a.kind], rank[b.kind]), cmp.Compare(a.arrival, b.arrival))
		})
		count := 0
		if inTable[n] {
			count = 1
		}
		for _, e := range evs {
			switch {
			case e.kind == merge.Insert || withSeq && e.kind == merge.UpdateAfter:
				count++
			case e.kind == merge.Delete || e.kind == merge.UpdateBefore:
				count = max(0, count-1)
			}
			if count >= 2 {
				c.offenders[format(keyOf(n))] = true
			}
		}
		if last := evs[len(evs)-1]; rank[last.kind] >= 2 {
			final[n] = last.row
		} else {
			delete(final, n)
		}
	}
	for n := range pool {
		if r, ok := final[n]; ok {
			c.expected = append(c.expected, r)
		}
	}
	return c
}

// TestApplyStrictModel: for random tables and change sets, with and
// without a sequence column, in every delete mode, in memory and with
// budgets that make the change set spill (one where the keys the changes
// add are still checked in one group as the table's rows are matched, one
// where they are checked in several groups by reading the table), Apply
// with WithInsertsMustBeNew fails with ErrInsertExists, naming a key the
// source would hold twice and committing nothing, exactly when the model
// says a key would be held twice, and otherwise leaves the table the model
// computes.
func TestApplyStrictModel(t *testing.T) {
	seed := modelSeed(t)
	// 0: in memory; 4096 and 8192: spilled, the added keys mostly in
	// one group (8192) or one or several (4096); 2: several groups.
	budgets := []int64{0, 4096, 8192, 2}
	var oneGroupSpilled, severalGroups, failures, successes int
	for ki, kk := range strictKeyKinds {
		for si, withSeq := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/seq=%t", kk.name, withSeq), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(ki*2+si)))
				e := tabletest.New(t)
				sawRefusal, sawClean := false, false
				for trial := range 2 {
					c := genStrictCase(rng, kk.key, kk.format, withSeq)
					// The second trial draws again (a bounded number of
					// times) for the kind of case the first one was not, so
					// that every seed covers both refusals and successes.
					for n := 0; trial == 1 && n < 200 && (sawRefusal && len(c.offenders) > 0 || sawClean && len(c.offenders) == 0); n++ {
						c = genStrictCase(rng, kk.key, kk.format, withSeq)
					}
					sawRefusal = sawRefusal || len(c.offenders) > 0
					sawClean = sawClean || len(c.offenders) == 0
					for mi, m := range spillModes {
						for bi, budget := range budgets {
							name := fmt.Sprintf("t%d_%d_%d", trial, mi, bi)
							tbl, err := e.Create(name, kk.schema, "", nil, m.props)
							if err != nil {
								t.Fatal(err)
							}
							as := tabletest.ArrowSchema(tbl)
							half := len(c.initial) / 2
							for _, part := range [][][]any{c.initial[:half], c.initial[half:]} {
								if len(part) == 0 {
									continue
								}
								if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(as, part)); err != nil {
									t.Fatal(err)
								}
							}
							before := e.Load(name).MetadataLocation()
							sch, recs, err := spillCase{changes: c.changes, withSeq: withSeq}.changeRecords(as)
							if err != nil {
								t.Fatal(err)
							}
							var spilled int64
							groups := -1
							doneSpill := merge.SetSpillHook(func(s, _ int64, _ int) { spilled = s })
							doneStrict := merge.SetStrictHook(func(g int) { groups = g })
							opts := []merge.Option{merge.WithInsertsMustBeNew(), merge.WithDeleteMode(m.del),
								merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir())}
							if withSeq {
								opts = append(opts, merge.WithSequenceColumn("seq"))
							}
							_, err = merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, replay(recs), kk.keys, opts...)
							doneSpill()
							doneStrict()
							releaseRecs(recs)
							where := fmt.Sprintf("trial %d, %s, budget %d", trial, m.name, budget)
							if budget == 2 && spilled == 0 {
								t.Fatalf("%s: nothing spilled", where)
							}
							switch {
							case spilled > 0 && groups == 1:
								oneGroupSpilled++
							case groups > 1:
								severalGroups++
							}
							if len(c.offenders) > 0 {
								failures++
								if !errors.Is(err, merge.ErrInsertExists) || !errors.Is(err, merge.ErrCardinality) {
									t.Fatalf("%s: %v, want ErrInsertExists for one of %v", where, err, c.offenders)
								}
								named := false
								for k := range c.offenders {
									named = named || strings.Contains(err.Error(), "("+k+")")
								}
								if !named || !strings.Contains(err.Error(), "nothing was committed") {
									t.Fatalf("%s: %v names none of %v", where, err, c.offenders)
								}
								if e.Load(name).MetadataLocation() != before {
									t.Fatalf("%s: a refused apply committed", where)
								}
								continue
							}
							successes++
							if err != nil {
								t.Fatalf("%s: %v", where, err)
							}
							got, err := e.Rows(e.Load(name), scan.At{})
							if err != nil {
								t.Fatal(err)
							}
							if d := diffRows(got, expectedRows(t, as, c.expected)); d != "" {
								t.Fatalf("%s: table differs from the model: %s", where, d)
							}
						}
					}
				}
			})
		}
	}
	t.Logf("%d refused, %d applied; spilled with the added keys in one group %d times, in several groups %d times", failures, successes, oneGroupSpilled, severalGroups)
	if !t.Failed() && (failures == 0 || successes == 0 || oneGroupSpilled == 0 || severalGroups == 0) {
		t.Fatal("the cases did not cover refusals, successes, and spilled change sets with their added keys in one and in several groups")
	}
}

// BenchmarkApplyStrict applies, to a table of 200,000 rows in 4 files,
// 10,000 changes with a sequence column (update pairs of 5,000 keys of one
// file, inserts of 5,000 new keys) with and without WithInsertsMustBeNew,
// in memory and under a 1 MiB budget (the changes spill), copy-on-write.
func BenchmarkApplyStrict(b *testing.B) {
	for _, strict := range []bool{false, true} {
		for _, budget := range []int64{0, 1 << 20} {
			b.Run(fmt.Sprintf("strict=%t/budget=%d", strict, budget), func(b *testing.B) {
				e := tabletest.New(b)
				if _, err := e.Create("t", "id long not null, v string, n long", "", nil, iceberg.Properties{"format-version": "2"}); err != nil {
					b.Fatal(err)
				}
				const files, perFile, half = 4, 50_000, 5_000
				for f := int64(0); f < files; f++ {
					rec := benchRecord(f*perFile, perFile, "init", true)
					if _, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, rec.Schema(), seqOf(rec), []string{"id"}); err != nil {
						b.Fatal(err)
					}
					rec.Release()
				}
				opts := []merge.Option{merge.WithSequenceColumn("seq"), merge.WithMemoryBudget(budget), merge.WithTempDir(b.TempDir())}
				if strict {
					opts = append(opts, merge.WithInsertsMustBeNew())
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					rec := strictBenchChanges(perFile+1000, half, int64(files*perFile+i*half), int64(i))
					b.StartTimer()
					res, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, rec.Schema(), seqOf(rec), []string{"id"}, opts...)
					if err != nil {
						b.Fatal(err)
					}
					if res.Upserts != 2*half || (budget > 0) != (res.Spilled > 0) {
						b.Fatalf("%d upserts, %d bytes spilled", res.Upserts, res.Spilled)
					}
					rec.Release()
				}
			})
		}
	}
}

// strictBenchChanges builds update pairs of keys upd..upd+n-1 and inserts
// of keys ins..ins+n-1 (id, v, n, _change_type, seq).
func strictBenchChanges(upd, n, ins, seq int64) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String},
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	add := func(id int64, kind string) {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", kind, id))
		b.Field(2).(*array.Int64Builder).Append(id * 7)
		b.Field(3).(*array.StringBuilder).Append(kind)
		b.Field(4).(*array.Int64Builder).Append(seq)
	}
	for i := range n {
		add(upd+i, merge.UpdateBefore)
		add(upd+i, merge.UpdateAfter)
		add(ins+i, merge.Insert)
	}
	return b.NewRecordBatch()
}
