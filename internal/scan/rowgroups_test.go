package scan_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestLiveWhereSkipsRowGroups reads one data file of ten row groups of 100
// rows (ids ascending) through LiveWhere: a key filter reads the row
// groups whose id range may hold a key, at their positions in the file,
// with the rows deleted since left out; every live row for which the
// filter holds is among them; a filter on a column without statistics
// here (a string) or one that does not bind reads every row, as Live does.
func TestLiveWhereSkipsRowGroups(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{"write.parquet.row-group-limit": "100", "write.delete.mode": "merge-on-read"}
	if _, err := e.Create("t", "id long not null, data string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	var rows [][]any
	for i := range 1000 {
		rows = append(rows, []any{int64(i), fmt.Sprint("d", i)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), rows)); err != nil {
		t.Fatal(err)
	}
	// deleted: id 250 (in the third row group) and 999 (the last one)
	for _, id := range []int64{250, 999} {
		if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, id)); err != nil {
			t.Fatal(err)
		}
	}
	tbl := e.Load("t")
	tasks, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d data files, want 1", len(tasks))
	}
	r, err := scan.NewReader(e.Ctx, tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(filter iceberg.BooleanExpression) (ids, pos []int64) {
		t.Helper()
		_, seq, err := r.LiveWhere(e.Ctx, tasks[0].File, tasks[0].Deletes, []string{"id", "data"}, filter)
		if err != nil {
			t.Fatal(err)
		}
		for b, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, b.Rec.Column(0).(*array.Int64).Int64Values()...)
			pos = append(pos, b.Pos...)
			b.Release()
		}
		return ids, pos
	}
	groups := func(ids, pos []int64) string {
		seen := map[int64]bool{}
		var out []int64
		for i, id := range ids {
			if id != pos[i] {
				t.Fatalf("id %d read at position %d", id, pos[i])
			}
			if g := id / 100; !seen[g] {
				seen[g] = true
				out = append(out, g)
			}
		}
		return fmt.Sprint(out)
	}
	id := iceberg.Reference("id")
	for _, c := range []struct {
		name   string
		filter iceberg.BooleanExpression
		groups string
		rows   int
	}{
		{"no filter", nil, "[0 1 2 3 4 5 6 7 8 9]", 998},
		{"IN of keys in two groups", iceberg.IsIn(id, int64(5), int64(250), int64(251)), "[0 2]", 199},
		{"IN and range", iceberg.NewAnd(iceberg.IsIn(id, int64(5), int64(940)), iceberg.GreaterThanEqual(id, int64(900))), "[9]", 99},
		{"equality in the last group", iceberg.EqualTo(id, int64(998)), "[9]", 99},
		{"range over three groups", iceberg.NewAnd(iceberg.GreaterThanEqual(id, int64(350)), iceberg.LessThan(id, int64(600))), "[3 4 5]", 300},
		{"no key in the file", iceberg.IsIn(id, int64(-5), int64(1000)), "[]", 0},
		{"a column without row group bounds", iceberg.EqualTo(iceberg.Reference("data"), "d5"), "[0 1 2 3 4 5 6 7 8 9]", 998},
		{"does not bind", iceberg.EqualTo(iceberg.Reference("nope"), int64(5)), "[0 1 2 3 4 5 6 7 8 9]", 998},
	} {
		ids, pos := read(c.filter)
		if g := groups(ids, pos); g != c.groups || len(ids) != c.rows {
			t.Errorf("%s: read %d rows of row groups %s, want %d of %s", c.name, len(ids), g, c.rows, c.groups)
		}
		for _, x := range ids {
			if x == 250 || x == 999 {
				t.Errorf("%s: deleted row %d read", c.name, x)
			}
		}
	}
}
