//go:build cgo

package duckdb_test

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/tableops"
)

// benchDims is the size of BenchmarkJoin's dimension.
const benchDims = 10_000

// BenchmarkJoin compares incremental builds of a keyed left join of a
// fact (merge-on-read, files of rowsPerFile rows, sorted by its dimension
// key dim_id) with a 10k-row dimension on fact.dim_id = dim.id, after an
// update of 0.1% of the fact and after an update of one dimension row
// (n/10k fact rows join it), with a full rebuild of the same query, in
// one run, for each size of benchSizes.
//
//	FLOE_SQL_BENCH_ROWS=1000000,10000000 go test ./sqltx/duckdb -run '^$' -bench Join -benchtime 3x
func BenchmarkJoin(b *testing.B) {
	q := "SELECT s.id, s.amount * 2 AS a2, d.label, d.weight FROM ns.src s LEFT JOIN ns.dim d ON d.id = s.dim_id WHERE s.flag"
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) { benchJoin(b, n, q, "id") })
	}
}

// BenchmarkGroupByJoin is BenchmarkJoin's set-up and changes for a GROUP
// BY over the inner join, by the dimension's label (one group per
// dimension row; rule group-by-join, key label): a dimension update
// touches two groups, the fact update those of ~n/1000 fact rows.
//
//	FLOE_SQL_BENCH_ROWS=1000000 go test ./sqltx/duckdb -run '^$' -bench GroupByJoin -benchtime 3x
func BenchmarkGroupByJoin(b *testing.B) {
	q := "SELECT d.label, count(*) AS n, sum(s.amount) AS total, max(s.amount) AS hi FROM ns.src s JOIN ns.dim d ON d.id = s.dim_id WHERE s.flag GROUP BY d.label"
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) { benchJoin(b, n, q, "label") })
	}
}

func benchJoin(b *testing.B, n int, q, key string) {
	mor := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	e := &env{Env: tabletest.New(b)}
	if _, err := e.Create("src", "id long not null, dim_id long, amount long, flag boolean", "", []string{"id"}, mor); err != nil {
		b.Fatal(err)
	}
	if _, err := e.Create("dim", "id long not null, label string, weight long", "", []string{"id"}, mor); err != nil {
		b.Fatal(err)
	}
	appendFiles(b, e, "src", n, func(sch *arrow.Schema, lo, hi int) iter.Seq2[arrow.RecordBatch, error] {
		return genFactRows(sch, lo, hi, n)
	})
	var drows [][]any
	for i := range benchDims {
		drows = append(drows, []any{int64(i), fmt.Sprintf("d%d", i), int64(i % 7)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("dim", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("dim")), drows)); err != nil {
		b.Fatal(err)
	}
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bench", Query: q, Dst: "ns.dst", Keys: []string{key}, Properties: benchDstProps()})
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
		id := int64(round * 7919 % benchDims)
		if _, err := tableops.Update(e.Ctx, e.Target("dim", ""), ids(id, id+1), set(1, func() any { return fmt.Sprintf("r%d", round) })); err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name   string
		full   bool
		update func()
	}{{"incremental-fact", false, updateFact}, {"incremental-dim", false, updateDim}, {"full", true, updateFact}} {
		b.Run(fmt.Sprintf("%s/dims=%d", mode.name, benchDims), func(b *testing.B) { benchBuilds(b, e, tr, mode.full, mode.update) })
	}
}

// genFactRows makes the rows with ids [lo, hi) of BenchmarkJoin's fact of
// n rows: dim_id grows with id (the fact is sorted by it, n/benchDims
// rows per dimension row), amount and flag as genRows makes them.
func genFactRows(sch *arrow.Schema, lo, hi, n int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		const batch = 64 * 1024
		for start := lo; start < hi; start += batch {
			end := min(start+batch, hi)
			bld := array.NewRecordBuilder(memory.DefaultAllocator, sch)
			ids := bld.Field(0).(*array.Int64Builder)
			dim := bld.Field(1).(*array.Int64Builder)
			amt := bld.Field(2).(*array.Int64Builder)
			flag := bld.Field(3).(*array.BooleanBuilder)
			for i := start; i < end; i++ {
				ids.Append(int64(i))
				dim.Append(int64(i * benchDims / n))
				amt.Append(int64(i % 100))
				flag.Append(i%2 == 0)
			}
			rec := bld.NewRecordBatch()
			bld.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
}
