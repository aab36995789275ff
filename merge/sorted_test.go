package merge_test

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// TestApplySortedKeys: a change set whose integer key arrives in ascending
// order is reduced without a key index (one key per run of equal keys);
// the same changes shuffled take the hash path. In every delete mode, with
// and without a sequence column (several changes of a key), in memory and
// spilled, and with WithInsertsMustBeNew (whose table check looks keys up
// in the index built on demand), both give the table the model gives and
// the same counts.
func TestApplySortedKeys(t *testing.T) {
	seed := modelSeed(t)
	for trial, k := range spillKeyKinds[:3] { // dense, sparse and random long keys
		for _, withSeq := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(seed, uint64(trial*2)+boolInt(withSeq)))
			t.Run(fmt.Sprintf("%s/seq=%t", k.name, withSeq), func(t *testing.T) {
				e := tabletest.New(t)
				probe, err := e.Create("probe", k.schema, "", nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				c := genSpillCase(rng, k, tabletest.ArrowSchema(probe), 1200, withSeq)
				sorted := c
				sorted.changes = slices.Clone(c.changes)
				// Stable: the changes of one key keep their arrival order, so
				// the model's winners are the same.
				slices.SortStableFunc(sorted.changes, func(a, b change) int { return cmp.Compare(a.row[0].(int64), b.row[0].(int64)) })
				want := expectedRows(t, tabletest.ArrowSchema(probe), c.expected)
				for mi, m := range spillModes {
					for bi, budget := range []int64{0, spillBudget} {
						var results [2]*merge.Result
						for si, cc := range []spillCase{c, sorted} {
							name := fmt.Sprintf("t%d_%d_%d", mi, bi, si)
							as := createWith(t, e, name, cc, m.props)
							sch, recs, err := cc.changeRecords(as)
							if err != nil {
								t.Fatal(err)
							}
							var nSorted, nHash atomic.Int64
							done := merge.SetReduceHook(func(s bool) {
								if s {
									nSorted.Add(1)
								} else {
									nHash.Add(1)
								}
							})
							opts := []merge.Option{merge.WithDeleteMode(m.del), merge.WithMemoryBudget(budget), merge.WithTempDir(t.TempDir())}
							if withSeq {
								opts = append(opts, merge.WithSequenceColumn("seq"))
							}
							res, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, replay(recs), k.keys, opts...)
							done()
							releaseRecs(recs)
							if err != nil {
								t.Fatalf("%s, budget %d, sorted=%t: %v", m.name, budget, si == 1, err)
							}
							// In memory, the sorted changes must take the sorted path
							// and the shuffled ones the hash path; spilled partitions
							// keep the arrival order within each partition.
							if budget == 0 && si == 1 && (nSorted.Load() == 0 || nHash.Load() != 0) {
								t.Fatalf("%s: sorted changes: %d reductions sorted, %d hashed; want all sorted", m.name, nSorted.Load(), nHash.Load())
							}
							if budget == 0 && si == 0 && nSorted.Load() != 0 {
								t.Fatalf("%s: shuffled changes were taken as sorted", m.name)
							}
							got, err := e.Rows(e.Load(name), scan.At{})
							if err != nil {
								t.Fatal(err)
							}
							if d := diffRows(got, want); d != "" {
								t.Fatalf("%s, budget %d, sorted=%t: table differs from the model: %s", m.name, budget, si == 1, d)
							}
							results[si] = res
						}
						a, b := results[0], results[1]
						if a.Upserts != b.Upserts || a.Deletes != b.Deletes || a.Matched != b.Matched || a.RowsAdded != b.RowsAdded || a.RowsRemoved != b.RowsRemoved {
							t.Fatalf("%s, budget %d: shuffled %+v, sorted %+v: counts differ", m.name, budget,
								[]int64{a.Upserts, a.Deletes, a.Matched, a.RowsAdded, a.RowsRemoved}, []int64{b.Upserts, b.Deletes, b.Matched, b.RowsAdded, b.RowsRemoved})
						}
					}
				}
			})
		}
	}
}

// TestApplySortedKeysCardinality: without a sequence column, two changes
// of one key next to each other in sorted changes are ErrCardinality, as
// they are in any order; with WithInsertsMustBeNew, a sorted insert of a
// key the table holds is ErrInsertExists (the lookup builds the index the
// sorted reduction skipped).
func TestApplySortedKeysCardinality(t *testing.T) {
	e := tabletest.New(t)
	for _, order := range []string{"sorted", "reversed"} {
		name := "t_" + order
		tbl, err := e.Create(name, "id long not null, v string, part int", "", []string{"id"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		as := tabletest.ArrowSchema(tbl)
		initial := [][]any{{int64(1), "a", int64(0)}, {int64(2), "b", int64(0)}, {int64(3), "c", int64(0)}}
		if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(as, initial)); err != nil {
			t.Fatal(err)
		}
		chs := []change{
			{row: []any{int64(1), "x", int64(0)}, kind: merge.UpdateAfter},
			{row: []any{int64(2), "y", int64(0)}, kind: merge.UpdateAfter},
			{row: []any{int64(2), "y", int64(0)}, kind: merge.Delete},
			{row: []any{int64(4), "z", int64(0)}, kind: merge.Insert},
		}
		if order == "reversed" {
			slices.Reverse(chs)
		}
		c := spillCase{changes: chs}
		sch, recs, err := c.changeRecords(as)
		if err != nil {
			t.Fatal(err)
		}
		_, err = merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, replay(recs), []string{"id"})
		releaseRecs(recs)
		if !errors.Is(err, merge.ErrCardinality) {
			t.Fatalf("%s: two changes of key 2: %v, want ErrCardinality", order, err)
		}
		c = spillCase{changes: []change{
			{row: []any{int64(3), "w", int64(0)}, kind: merge.Insert},
			{row: []any{int64(5), "v", int64(0)}, kind: merge.Insert},
		}}
		sch, recs, err = c.changeRecords(as)
		if err != nil {
			t.Fatal(err)
		}
		_, err = merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, replay(recs), []string{"id"}, merge.WithInsertsMustBeNew())
		releaseRecs(recs)
		if !errors.Is(err, merge.ErrInsertExists) {
			t.Fatalf("%s: insert of key 3, which the table holds: %v, want ErrInsertExists", order, err)
		}
		got, err := e.Rows(e.Load(name), scan.At{})
		if err != nil {
			t.Fatal(err)
		}
		if d := diffRows(got, expectedRows(t, as, initial)); d != "" {
			t.Fatalf("%s: the failed applies changed the table: %v", order, got)
		}
	}
}

func boolInt(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
