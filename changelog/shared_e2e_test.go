package changelog_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestSharedRewriteAgrees runs random copy-on-write histories of v2 tables
// (appends, updates of one column or of none, deletes, compactions, over
// one or three files per rewrite) and checks that the changelog is the
// same when the old files of a rewrite take the columns it kept from the
// new files (byte-identical chunks, decoded once) as when both files are
// decoded whole, in every view and with a 1-byte memory budget; and that
// columns were shared at all.
func TestSharedRewriteAgrees(t *testing.T) {
	for seed := range uint64(4) {
		part := []string{"", "bucket(3, id)"}[seed%2]
		unique := seed >= 2
		t.Run(fmt.Sprintf("seed=%d part=%q unique=%t", seed, part, unique), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 31))
			e := tabletest.New(t)
			props := iceberg.Properties{"write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write"}
			var ident []string
			schema := "id long, n long, f double, data string, tag string"
			if unique {
				ident, schema = []string{"id"}, "id long not null, n long, f double, data string, tag string"
			}
			tbl, err := e.Create("t", schema, part, ident, props)
			if err != nil {
				t.Fatal(err)
			}
			as := tabletest.ArrowSchema(tbl)
			target := e.Target("t", "")
			next := int64(0)
			row := func() []any {
				id := int64(rng.IntN(80))
				if unique {
					id, next = next, next+1
				}
				var tag any = fmt.Sprintf("t%d", rng.IntN(4))
				if rng.IntN(6) == 0 {
					tag = nil
				}
				return []any{id, int64(rng.IntN(1000)), float64(rng.IntN(50)) / 4, fmt.Sprintf("d%d", rng.IntN(3)), tag}
			}
			updates := 0
			for step := range 9 {
				var err error
				switch k := rng.IntN(6); {
				case step == 0 || k == 0:
					var data [][]any
					for range 300 + rng.IntN(500) {
						data = append(data, row())
					}
					_, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
				case k == 1:
					_, err = tableops.Delete(e.Ctx, target, idMod(int64(7+rng.IntN(20)), 0))
				case k == 2:
					_, err = tableops.Compact(e.Ctx, target)
				default:
					updates++
					m := int64(3 + rng.IntN(30))
					col, val := []string{"data", "tag", "f"}[rng.IntN(3)], fmt.Sprint(rng.IntN(3))
					if col == "data" && rng.IntN(4) == 0 {
						val = "d0" // often the value the row has: an update that changes nothing in some rows
					}
					_, err = tableops.Update(e.Ctx, target, idMod(m, 1), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
						return setColumn(rec, touched, col, val)
					})
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			shared := changelog.SharedColumns()
			sameInEveryView(t, e.Load("t"), unique, "sharing kept columns", "decoding both files whole", changelog.SetShared)
			if updates > 0 && changelog.SharedColumns() == shared {
				t.Errorf("%d updates, and no column of an old file was taken from its rewrite", updates)
			}
		})
	}
}

// sameInEveryView checks that the changelog of tbl is the same, in every
// view (and with a 1-byte memory budget), with a path on as with it off
// (set turns it on or off and returns the restore function).
func sameInEveryView(t *testing.T, tbl *table.Table, unique bool, on, off string, set func(bool) func()) {
	t.Helper()
	views := []changelog.Options{{}, {NetChanges: true}, {MemoryBudget: 1}}
	if unique {
		views = append(views,
			changelog.Options{IdentifierColumns: []string{"id"}},
			changelog.Options{PerKey: changelog.PerKeyNet})
	}
	for _, o := range views {
		got := formattedChanges(t, tbl, o)
		restore := set(false)
		want := formattedChanges(t, tbl, o)
		restore()
		if !slices.Equal(got, want) {
			t.Fatalf("%+v: %s:\n%v\n%s:\n%v", o, on, got, off, want)
		}
		if len(want) == 0 {
			t.Fatal("the history produced no changes")
		}
	}
}
