//go:build cgo

package duckdb_test

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/tableops"
)

// BenchmarkJoin compares incremental builds of a keyed left join of a
// fact (FLOE_SQL_BENCH_ROWS rows, default 1M, 10 files, merge-on-read)
// with a 10k-row dimension, after an update of 0.1% of the fact and
// after an update of one dimension row (100 fact rows join it), with a
// full rebuild of the same query, in one run.
//
//	go test ./sqltx/duckdb -run '^$' -bench Join -benchtime 3x
func BenchmarkJoin(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FLOE_SQL_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	const dims = 10_000
	mor := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	e := &env{Env: tabletest.New(b)}
	if _, err := e.Create("src", srcSchema, "", []string{"id"}, mor); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Create("dim", "id long not null, label string, weight long", "", []string{"id"}, mor); err != nil {
		b.Fatal(err)
	}
	sch := tabletest.ArrowSchema(e.Load("src"))
	const files = 10
	for f := range files {
		lo, hi := f*n/files, (f+1)*n/files
		if _, err := tableops.Append(e.Ctx, e.Target("src", ""), func() iter.Seq2[arrow.RecordBatch, error] {
			return genRows(sch, lo, hi)
		}); err != nil {
			b.Fatal(err)
		}
	}
	var drows [][]any
	for i := range dims {
		drows = append(drows, []any{int64(i), fmt.Sprintf("d%d", i), int64(i % 7)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("dim", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("dim")), drows)); err != nil {
		b.Fatal(err)
	}
	q := "SELECT s.id, s.amount * 2 AS a2, d.label, d.weight FROM ns.src s LEFT JOIN ns.dim d ON d.id = s.id % 10000 WHERE s.flag"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bench", Query: q, Dst: "ns.dst", Keys: []string{"id"},
		Properties: map[string]string{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := (&transform.Runner{Catalog: e.Cat, Logger: quiet}).Build(e.Ctx, tr); err != nil {
		b.Fatal(err)
	}
	touched := n / 1000
	round := 0
	ids := func(lo, hi int64) *tableops.Predicate {
		return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
			a := rec.Column(0).(*array.Int64)
			out := make([]bool, rec.NumRows())
			for i := range out {
				out[i] = a.Value(i) >= lo && a.Value(i) < hi
			}
			return out, nil
		}}
	}
	set := func(col int, v func() any) func(_ context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
		return func(_ context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
			var data [][]any
			for i, k := range keep {
				if k {
					r := arrowtest.RowValues(rec, i)
					r[col] = v()
					data = append(data, r)
				}
			}
			return tabletest.Record(rec.Schema(), data)
		}
	}
	updateFact := func() {
		round++
		lo := int64((round * 7919 * touched) % (n - touched))
		if _, err := tableops.Update(e.Ctx, e.Target("src", ""), ids(lo, lo+int64(touched)), set(2, func() any { return int64(round % 100) })); err != nil {
			b.Fatal(err)
		}
	}
	updateDim := func() {
		round++
		id := int64(round * 7919 % dims)
		if _, err := tableops.Update(e.Ctx, e.Target("dim", ""), ids(id, id+1), set(1, func() any { return fmt.Sprintf("r%d", round) })); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name   string
		full   bool
		update func()
	}{{"incremental-fact", false, updateFact}, {"incremental-dim", false, updateDim}, {"full", true, updateFact}} {
		b.Run(fmt.Sprintf("%s/rows=%d/dims=%d", mode.name, n, dims), func(b *testing.B) {
			r := &transform.Runner{Catalog: e.Cat, Full: mode.full, Logger: quiet}
			for range b.N {
				b.StopTimer()
				mode.update()
				b.StartTimer()
				res, err := r.Build(e.Ctx, tr)
				if err != nil {
					b.Fatal(err)
				}
				if res.Incremental == mode.full {
					b.Fatalf("incremental %v: %s", res.Incremental, res.Reason)
				}
			}
		})
	}
}
