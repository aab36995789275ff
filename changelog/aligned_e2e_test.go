package changelog_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestAlignedPairingAgrees runs random copy-on-write histories of v2
// tables (no row lineage, so every rewrite is paired by value: appends,
// deletes, updates, overwrites and compactions over files of hundreds of
// rows; duplicate rows and NULLs in one, unique ids in the other; a
// double column holding NaN, -0 and 0) and checks that the changelog is
// the same with the pairer's aligned path as with the hash path alone, in
// every view and with a 1-byte memory budget too.
func TestAlignedPairingAgrees(t *testing.T) {
	floats := []any{math.NaN(), math.Copysign(0, -1), 0.0, 1.5, nil}
	for seed := range uint64(4) {
		part := []string{"", "bucket(3, id)"}[seed%2]
		unique := seed >= 2
		t.Run(fmt.Sprintf("seed=%d part=%q unique=%t", seed, part, unique), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 29))
			e := tabletest.New(t)
			props := iceberg.Properties{"write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write"}
			var ident []string
			schema := "id long, f double, data string"
			if unique {
				ident, schema = []string{"id"}, "id long not null, f double, data string"
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
				id := int64(rng.IntN(60))
				if unique {
					id, next = next, next+1
				}
				// f follows id, so that rows equal under the comparison (NaN
				// equal to NaN, -0 to 0) print alike whichever cancels.
				return []any{id, floats[id%int64(len(floats))], data}
			}
			for step := range 8 {
				var err error
				switch k := rng.IntN(6); {
				case step == 0 || k == 0:
					var data [][]any
					for range 200 + rng.IntN(400) {
						data = append(data, row())
					}
					_, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
				case k == 1:
					_, err = tableops.Delete(e.Ctx, target, idMod(int64(5+rng.IntN(20)), 0))
				case k == 2:
					_, err = tableops.Compact(e.Ctx, target)
				case k == 3 && !unique:
					m := int64(3 + rng.IntN(3))
					var data [][]any
					for range 5 + rng.IntN(30) {
						r := row()
						r[0] = r[0].(int64) - r[0].(int64)%m
						r[1] = floats[r[0].(int64)%int64(len(floats))]
						data = append(data, r)
					}
					_, err = tableops.Overwrite(e.Ctx, target, idMod(m, 0), tabletest.Seq(as, data))
				default:
					m, val := int64(4+rng.IntN(30)), fmt.Sprintf("u%d", rng.IntN(3))
					_, err = tableops.Update(e.Ctx, target, idMod(m, 1), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
						return setColumn(rec, touched, "data", val)
					})
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			tbl = e.Load("t")
			views := []changelog.Options{{}, {NetChanges: true}, {MemoryBudget: 1}}
			if unique {
				views = append(views,
					changelog.Options{IdentifierColumns: []string{"id"}},
					changelog.Options{PerKey: changelog.PerKeyNet})
			}
			for _, o := range views {
				before := changelog.AlignedRows()
				aligned := formattedChanges(t, tbl, o)
				if !o.NetChanges && changelog.AlignedRows() == before {
					t.Errorf("%+v: no row was cancelled on the aligned path", o)
				}
				restore := changelog.SetAlignedPairing(false)
				hashed := formattedChanges(t, tbl, o)
				restore()
				if !slices.Equal(aligned, hashed) {
					t.Fatalf("%+v: aligned pairing:\n%v\nhash pairing only:\n%v", o, aligned, hashed)
				}
				if len(hashed) == 0 {
					t.Fatal("the history produced no changes")
				}
			}
		})
	}
}
