package changelog

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/rows"
)

// collide hashes every row to 0.
func collide(rec arrow.RecordBatch, _ []int, _ []uint64) []uint64 {
	return make([]uint64, rec.NumRows())
}

// TestRowGroups checks that rows share a group exactly when their keys
// are equal (NULL equal to NULL, NaN to NaN, -0 to 0), with the real hash
// and with hashes that always collide, where only the byte comparison
// tells rows apart.
func TestRowGroups(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	negZero := math.Copysign(0, -1)
	a := arrowtest.Record(sch, [][]any{
		{1, "a", 1.5}, {1, "a", 1.5}, {1, "b", 1.5}, {nil, "a", 1.5},
		{nil, "a", 1.5}, {1, nil, nil}, {2, "a", math.NaN()}, {2, "a", 0.0},
	})
	defer a.Release()
	b := arrowtest.Record(sch, [][]any{
		{2, "a", math.NaN()}, {2, "a", negZero}, {1, nil, nil}, {1, "a", 1.5}, {3, "", 0.0}, {3, nil, 0.0},
	})
	defer b.Release()
	recs := []arrow.RecordBatch{a, b}
	for _, tc := range []struct {
		name string
		hash func(arrow.RecordBatch, []int, []uint64) []uint64
		cols []int
	}{
		{"HashKeys all columns", nil, []int{0, 1, 2}},
		{"colliding all columns", collide, []int{0, 1, 2}},
		{"colliding id only", collide, []int{0}},
		{"HashKeys string only", nil, []int{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newRowGroups(recs, tc.cols, 0)
			if tc.hash != nil {
				g.hash = tc.hash
			}
			type row struct {
				key   string
				group int32
			}
			var got []row
			for bi, rec := range recs {
				for i := 0; i < int(rec.NumRows()); i++ {
					got = append(got, row{string(rows.AppendKey(nil, rec, tc.cols, i)), g.add(bi, i)})
				}
			}
			distinct := map[string]bool{}
			for _, x := range got {
				distinct[x.key] = true
				for _, y := range got {
					if (x.key == y.key) != (x.group == y.group) {
						t.Fatalf("keys %q and %q: groups %d and %d", x.key, y.key, x.group, y.group)
					}
				}
			}
			if g.len() != len(distinct) {
				t.Fatalf("%d groups for %d distinct keys", g.len(), len(distinct))
			}
			na := int(a.NumRows())
			if len(tc.cols) == 3 {
				// NaN equals NaN and -0 equals 0 in keys, as in Iceberg.
				if got[6].group != got[na].group || got[7].group != got[na+1].group {
					t.Fatalf("NaN or -0 rows not grouped with their equals: %v", got)
				}
			}
			// Adding a row again finds its group, never a new one.
			if again := g.add(1, 3); again != got[na+3].group {
				t.Fatalf("row (1,3) added again went to group %d, want %d", again, got[na+3].group)
			}
		})
	}
}
