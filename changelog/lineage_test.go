package changelog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestLineageAgrees runs random copy-on-write histories of v3 tables
// (appends, deletes, updates, overwrites and compactions; duplicate rows
// and NULLs in one, unique ids in the other; partitioned and not) and
// checks that the changelog computed from row lineage equals the one
// computed by comparing the old and new files' values, in every view, and
// that the lineage path was taken. (v2 tables and rewrites without lineage
// take the value path: TestBudgetsAgree, TestModel and the fixtures.)
func TestLineageAgrees(t *testing.T) {
	for seed := range uint64(4) {
		part := []string{"", "bucket(3, id)"}[seed%2]
		unique := seed >= 2
		t.Run(fmt.Sprintf("seed=%d part=%q unique=%t", seed, part, unique), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 23))
			e := tabletest.New(t)
			props := iceberg.Properties{"format-version": "3", "write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write"}
			var ident []string
			if unique {
				ident = []string{"id"}
			}
			schema := "id long, data string"
			if unique {
				schema = "id long not null, data string"
			}
			tbl, err := e.Create("t", schema, part, ident, props)
			if err != nil {
				t.Fatal(err)
			}
			as := tabletest.ArrowSchema(tbl)
			target := e.Target("t", "")
			next := int64(0)
			row := func() []any {
				var data any = fmt.Sprintf("d%d", rng.IntN(3))
				if rng.IntN(7) == 0 {
					data = nil
				}
				id := int64(rng.IntN(40))
				if unique {
					id, next = next, next+1
				}
				return []any{id, data}
			}
			for step := range 10 {
				var err error
				switch k := rng.IntN(6); {
				case step == 0 || k == 0:
					var data [][]any
					for range 30 + rng.IntN(60) {
						data = append(data, row())
					}
					_, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
				case k == 1:
					_, err = tableops.Delete(e.Ctx, target, idMod(int64(2+rng.IntN(5)), 0))
				case k == 2:
					_, err = tableops.Compact(e.Ctx, target)
				case k == 3 && !unique:
					// An overwrite of the rows of one residue: deletes and
					// inserts in one rewrite, some rows written anew with
					// the values they had.
					m := int64(2 + rng.IntN(3))
					var data [][]any
					for range 5 + rng.IntN(10) {
						r := row()
						r[0] = r[0].(int64) - r[0].(int64)%m
						data = append(data, r)
					}
					_, err = tableops.Overwrite(e.Ctx, target, idMod(m, 0), tabletest.Seq(as, data))
				default:
					m, val := int64(2+rng.IntN(4)), fmt.Sprintf("u%d", rng.IntN(3))
					_, err = tableops.Update(e.Ctx, target, idMod(m, 1), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
						return setColumn(rec, touched, "data", val)
					})
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			tbl = e.Load("t")
			views := []changelog.Options{{}, {NetChanges: true}}
			if unique {
				views = append(views,
					changelog.Options{IdentifierColumns: []string{"id"}},
					changelog.Options{PerKey: changelog.PerKeyNet},
					changelog.Options{PerKey: changelog.PerKeyLatest})
			}
			for _, o := range views {
				before := changelog.LineageRewrites()
				withLineage := formattedChanges(t, tbl, o)
				used := changelog.LineageRewrites() - before
				restore := changelog.SetLineage(false)
				byValue := formattedChanges(t, tbl, o)
				restore()
				if !slices.Equal(withLineage, byValue) {
					t.Fatalf("%+v: from row lineage:\n%v\ncomparing values:\n%v", o, withLineage, byValue)
				}
				if len(byValue) == 0 {
					t.Fatal("the history produced no changes")
				}
				if !o.NetChanges && used == 0 {
					t.Errorf("%+v: no rewrite was computed from row lineage", o)
				}
			}
		})
	}
}
