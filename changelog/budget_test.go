package changelog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestBudgetsAgree runs random copy-on-write and merge-on-read histories
// (duplicate rows, NULLs, deletes, updates, appends, partitioned and not)
// and checks that replaying the changelog of the whole history on an
// empty table gives the table's rows, and that the changelog is the same
// with the default memory budget, where rewrites are paired in memory, and
// with a 1-byte budget, where the pairer's window holds only the batches
// being matched and every grouped batch spills: carry-over removal must
// not depend on where rows meet.
func TestBudgetsAgree(t *testing.T) {
	for seed := range uint64(4) {
		part := []string{"", "bucket(3, id)"}[seed%2]
		mode := []string{"copy-on-write", "merge-on-read"}[seed/2%2]
		t.Run(fmt.Sprintf("seed=%d part=%q mode=%s", seed, part, mode), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			e := tabletest.New(t)
			props := iceberg.Properties{"write.delete.mode": mode, "write.update.mode": mode}
			tbl, err := e.Create("t", "id long, data string", part, nil, props)
			if err != nil {
				t.Fatal(err)
			}
			as := tabletest.ArrowSchema(tbl)
			target := e.Target("t", "")
			row := func() []any {
				var data any = fmt.Sprintf("d%d", rng.IntN(4))
				if rng.IntN(7) == 0 {
					data = nil
				}
				return []any{int64(rng.IntN(40)), data}
			}
			for step := range 8 {
				var err error
				switch k := rng.IntN(4); {
				case step == 0 || k == 0:
					var data [][]any
					for range 30 + rng.IntN(60) {
						data = append(data, row())
					}
					_, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
				case k == 1:
					m := int64(2 + rng.IntN(5))
					_, err = tableops.Delete(e.Ctx, target, idMod(m, 0))
				default:
					m, val := int64(2+rng.IntN(4)), fmt.Sprintf("u%d", step)
					_, err = tableops.Update(e.Ctx, target, idMod(m, 1), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
						return setColumn(rec, touched, "data", val)
					})
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			tbl = e.Load("t")
			// Replaying the whole history's changes on the empty table gives
			// the final rows.
			live, err := e.Rows(tbl, scan.At{})
			if err != nil {
				t.Fatal(err)
			}
			for _, budget := range []int64{0, 1} {
				if got := replay(t, tbl, budget); !slices.Equal(got, live) {
					t.Fatalf("budget %d: replaying the changelog gives\n%v\nthe table holds\n%v", budget, got, live)
				}
			}
			for _, o := range []changelog.Options{{}, {NetChanges: true}} {
				inMemory := formattedChanges(t, tbl, o)
				o.MemoryBudget = 1
				spilled := formattedChanges(t, tbl, o)
				if !slices.Equal(inMemory, spilled) {
					t.Fatalf("net=%t: default budget:\n%v\n1-byte budget:\n%v", o.NetChanges, inMemory, spilled)
				}
				if len(inMemory) == 0 {
					t.Fatal("the history produced no changes")
				}
			}
			// Partitions processed by one worker and by several give the
			// same rows in the same order, and the same error (duplicate
			// identifiers, with updates or per-key views).
			for _, o := range []changelog.Options{{}, {NetChanges: true}, {IdentifierColumns: []string{"id"}},
				{IdentifierColumns: []string{"id"}, PerKey: changelog.PerKeyLatest}} {
				for _, budget := range []int64{0, 1} {
					o.MemoryBudget = budget
					restore := changelog.SetProcessWorkers(1)
					one, oneErr := orderedChanges(t, tbl, o)
					changelog.SetProcessWorkers(4)
					four, fourErr := orderedChanges(t, tbl, o)
					restore()
					if !slices.Equal(one, four) || oneErr != fourErr {
						t.Fatalf("%+v: one worker:\n%v\n%s\nfour workers:\n%v\n%s", o, one, oneErr, four, fourErr)
					}
					if len(one) == 0 && oneErr == "" {
						t.Fatalf("%+v: no changes", o)
					}
				}
			}
		})
	}
}

// orderedChanges renders the changelog of the whole history as rows in
// the order read, and the error that ended it ("" for none).
func orderedChanges(t *testing.T, tbl *table.Table, o changelog.Options) ([]string, string) {
	t.Helper()
	_, seq, err := changelog.Scan(context.Background(), tbl, o)
	if err != nil {
		return nil, err.Error()
	}
	var out []string
	for rec, err := range seq {
		if err != nil {
			return out, err.Error()
		}
		for i := range int(rec.NumRows()) {
			out = append(out, rows.FormatRow(rec, i))
		}
		rec.Release()
	}
	return out, ""
}

// idMod selects the rows whose id is r modulo m.
func idMod(m, r int64) *tableops.Predicate {
	return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		ids := rec.Column(0).(*array.Int64)
		out := make([]bool, ids.Len())
		for i := range out {
			out[i] = ids.IsValid(i) && ids.Value(i)%m == r
		}
		return out, nil
	}}
}

// formattedChanges renders the changelog of the whole history as sorted rows
// (data and metadata columns).
func formattedChanges(t *testing.T, tbl *table.Table, o changelog.Options) []string {
	t.Helper()
	_, seq, err := changelog.Scan(context.Background(), tbl, o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := rows.FormatSorted(seq)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// replay applies the changelog of the whole history to an empty table:
// the rows inserted and not deleted, sorted.
func replay(t *testing.T, tbl *table.Table, budget int64) []string {
	t.Helper()
	sch, seq, err := changelog.Scan(context.Background(), tbl, changelog.Options{MemoryBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	n := sch.NumFields() - 3
	data := arrow.NewSchema(sch.Fields()[:n], nil)
	cols := make([]int, n)
	for i := range cols {
		cols[i] = i
	}
	count := map[string]int{}
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		kinds := rec.Column(n).(*array.String)
		d := rows.Project(rec, data, cols)
		for i := range int(rec.NumRows()) {
			if kinds.Value(i) == changelog.Delete {
				count[rows.FormatRow(d, i)]--
			} else {
				count[rows.FormatRow(d, i)]++
			}
		}
		d.Release()
		rec.Release()
	}
	var out []string
	for r, c := range count {
		if c < 0 {
			t.Fatalf("row %s deleted %d more times than inserted", r, -c)
		}
		for range c {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}
