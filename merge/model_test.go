package merge_test

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// TestApplyChangelogModel: for every write mode, applying the per-key
// changelog of (Si, Sj] of a randomly changed source to a copy of the
// source at Si gives exactly the rows of Sj.
func TestApplyChangelogModel(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("FLOE_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (rerun with FLOE_MODEL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	e := tabletest.New(t)
	if _, err := e.Create("src", "id long not null, data string, part int", "part", []string{"id"},
		iceberg.Properties{"format-version": "2", "write.delete.mode": "merge-on-read", "write.update.mode": "copy-on-write"}); err != nil {
		t.Fatal(err)
	}
	src := e.Target("src", "")
	var snaps []int64
	next := int64(1)
	live := map[int64]bool{}
	for step := 0; step < 8; step++ {
		tbl := e.Load("src")
		as := tabletest.ArrowSchema(tbl)
		var o *tableops.Outcome
		var err error
		ids := make([]int64, 0, len(live))
		for id := range live {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
		switch r := rng.IntN(4); {
		case r == 0 || len(ids) < 2:
			var data [][]any
			for n := 1 + rng.IntN(5); n > 0; n-- {
				data = append(data, []any{next, fmt.Sprint("v", next), int64(rng.IntN(3))})
				live[next] = true
				next++
			}
			o, err = tableops.Append(e.Ctx, src, tabletest.Seq(as, data))
		case r == 1:
			id := ids[rng.IntN(len(ids))]
			delete(live, id)
			o, err = tableops.Delete(e.Ctx, src, tabletest.ColEq("id", false, id))
		default:
			id := ids[rng.IntN(len(ids))]
			part := strconv.Itoa(rng.IntN(3))
			o, err = tableops.Update(e.Ctx, src, tabletest.ColEq("id", false, id), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
				return setCol(rec, touched, "part", part)
			})
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if o.SnapshotID != 0 {
			snaps = append(snaps, o.SnapshotID)
		}
	}
	srcTbl := e.Load("src")
	modes := []struct {
		name  string
		props iceberg.Properties
		del   merge.DeleteMode
	}{
		{"cow", iceberg.Properties{"format-version": "2"}, merge.DeleteAuto},
		{"mor-v2", iceberg.Properties{"format-version": "2", "write.merge.mode": "merge-on-read"}, merge.DeleteAuto},
		{"mor-v3", iceberg.Properties{"format-version": "3", "write.merge.mode": "merge-on-read"}, merge.DeleteAuto},
		{"equality", iceberg.Properties{"format-version": "2"}, merge.DeleteEquality},
	}
	pairs := 0
	for i := 0; i < len(snaps) && pairs < 12; i++ {
		for j := i + 1; j < len(snaps) && pairs < 12; j += 1 + rng.IntN(3) {
			pairs++
			start, end := snaps[i], snaps[j]
			want, err := e.Rows(srcTbl, scan.At{SnapshotID: &end})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range modes {
				name := fmt.Sprintf("dst_%d_%d_%s", i, j, strings.ReplaceAll(m.name, "-", "_"))
				part := "part"
				if rng.IntN(2) == 0 {
					part = ""
				}
				if _, err := e.Create(name, "id long not null, data string, part int", part, nil, m.props); err != nil {
					t.Fatal(err)
				}
				// The copy at Si.
				_, seq, err := scan.Rows(e.Ctx, srcTbl, scan.Options{At: scan.At{SnapshotID: &start}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tableops.Append(e.Ctx, e.Target(name, ""), func() iter.Seq2[arrow.RecordBatch, error] { return seq }); err != nil {
					t.Fatal(err)
				}
				sch, ch, err := changelog.Scan(e.Ctx, srcTbl, changelog.Options{StartSnapshotID: &start, EndSnapshotID: &end, PerKey: changelog.PerKeyLatest})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, ch, []string{"id"}, merge.WithDeleteMode(m.del)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got, err := e.Rows(e.Load(name), scan.At{})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Fatalf("%s: applying changelog(%d..%d] gives\n%v\nwant\n%v", name, i, j, got, want)
				}
			}
		}
	}
}

func setCol(rec arrow.RecordBatch, touched []bool, col, val string) (arrow.RecordBatch, error) {
	sel, err := rows.Select(context.Background(), rec, touched)
	if err != nil {
		return nil, err
	}
	defer sel.Release()
	idx := sel.Schema().FieldIndices(col)[0]
	b := array.NewInt32Builder(memory.DefaultAllocator)
	defer b.Release()
	n, _ := strconv.Atoi(val)
	for i := 0; i < int(sel.NumRows()); i++ {
		b.Append(int32(n))
	}
	arr := b.NewArray()
	defer arr.Release()
	cols := append([]arrow.Array{}, sel.Columns()...)
	cols[idx] = arr
	return array.NewRecordBatch(sel.Schema(), cols, sel.NumRows()), nil
}
