//go:build cgo

package duckdb_test

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strconv"
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

// BenchmarkRowLocal compares an incremental build of a row-local keyed
// query after an update of 0.1% of the source's rows (one contiguous id
// range, so one of the source's files) with a full rebuild of the same
// query, in one run. FLOE_SQL_BENCH_ROWS sets the source's size (default
// 1M rows, in 10 files of a merge-on-read table; the destination is
// merge-on-read too).
//
//	go test ./sqltx/duckdb -run '^$' -bench RowLocal -benchtime 3x
func BenchmarkRowLocal(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FLOE_SQL_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	e := &env{Env: tabletest.New(b)}
	if _, err := e.Create("src", srcSchema, "", []string{"id"}, iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}); err != nil {
		b.Fatal(err)
	}
	tbl := e.Load("src")
	sch := tabletest.ArrowSchema(tbl)
	const files = 10
	for f := range files {
		lo, hi := f*n/files, (f+1)*n/files
		if _, err := tableops.Append(e.Ctx, e.Target("src", ""), func() iter.Seq2[arrow.RecordBatch, error] {
			return genRows(sch, lo, hi)
		}); err != nil {
			b.Fatal(err)
		}
	}
	q := "SELECT id, upper(cat) AS ucat, amount * 2 AS a2, CASE WHEN amount > 50 THEN 'big' ELSE 'small' END AS size FROM ns.src WHERE flag"
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
	update := func() {
		round++
		lo := int64((round * 7919 * touched) % (n - touched))
		pred := &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
			a := rec.Column(0).(*array.Int64)
			out := make([]bool, rec.NumRows())
			for i := range out {
				out[i] = a.Value(i) >= lo && a.Value(i) < lo+int64(touched)
			}
			return out, nil
		}}
		_, err := tableops.Update(e.Ctx, e.Target("src", ""), pred, func(_ context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
			var data [][]any
			for i, k := range keep {
				if k {
					r := arrowtest.RowValues(rec, i)
					r[2] = int64(round % 100)
					r[3] = round%2 == 0
					data = append(data, r)
				}
			}
			return tabletest.Record(rec.Schema(), data)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name string
		full bool
	}{{"incremental", false}, {"full", true}} {
		b.Run(fmt.Sprintf("%s/rows=%d/touched=%d", mode.name, n, touched), func(b *testing.B) {
			r := &transform.Runner{Catalog: e.Cat, Full: mode.full, Logger: quiet}
			for range b.N {
				b.StopTimer()
				update()
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

var quiet = slog.New(slog.DiscardHandler)

// genRows makes the rows with ids [lo, hi) of the benchmark's source.
func genRows(sch *arrow.Schema, lo, hi int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		const batch = 64 * 1024
		for start := lo; start < hi; start += batch {
			end := min(start+batch, hi)
			bld := array.NewRecordBuilder(memory.DefaultAllocator, sch)
			ids := bld.Field(0).(*array.Int64Builder)
			cat := bld.Field(1).(*array.StringBuilder)
			amt := bld.Field(2).(*array.Int64Builder)
			flag := bld.Field(3).(*array.BooleanBuilder)
			for i := start; i < end; i++ {
				ids.Append(int64(i))
				cat.Append([]string{"a", "b", "c"}[i%3])
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

// BenchmarkGroupBy compares an incremental build of a GROUP BY query
// (count, sum, min, max by cat; 10k groups of 100 rows, each group's rows
// contiguous in id) after an update of 0.1% of the source's rows (one
// contiguous id range: 10 groups) with a full rebuild, in one run. The
// incremental build reads the touched groups' rows only (cat IN (...) on
// the scan prunes the files by their statistics), so its cost follows the
// groups touched. FLOE_SQL_BENCH_ROWS sets the source's size (default 1M
// rows, in 50 files of a merge-on-read table).
//
//	go test ./sqltx/duckdb -run '^$' -bench GroupBy -benchtime 3x
func BenchmarkGroupBy(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("FLOE_SQL_BENCH_ROWS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		n = v
	}
	const perGroup = 100
	e := &env{Env: tabletest.New(b)}
	mor := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	if _, err := e.Create("src", srcSchema, "", []string{"id"}, mor); err != nil {
		b.Fatal(err)
	}
	sch := tabletest.ArrowSchema(e.Load("src"))
	const files = 50
	for f := range files {
		lo, hi := f*n/files, (f+1)*n/files
		if _, err := tableops.Append(e.Ctx, e.Target("src", ""), func() iter.Seq2[arrow.RecordBatch, error] {
			return genGroupRows(sch, lo, hi, perGroup)
		}); err != nil {
			b.Fatal(err)
		}
	}
	q := "SELECT cat, count(*) AS n, sum(amount) AS total, min(amount) AS lo, max(amount) AS hi FROM ns.src GROUP BY cat"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bench", Query: q, Dst: "ns.dst", Keys: []string{"cat"},
		Properties: map[string]string{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := (&transform.Runner{Catalog: e.Cat, Logger: quiet}).Build(e.Ctx, tr); err != nil {
		b.Fatal(err)
	}
	round := 0
	update := func(touched int) {
		round++
		lo := int64((round * 7919 * touched) % (n - touched))
		lo -= lo % perGroup
		pred := &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
			a := rec.Column(0).(*array.Int64)
			out := make([]bool, rec.NumRows())
			for i := range out {
				out[i] = a.Value(i) >= lo && a.Value(i) < lo+int64(touched)
			}
			return out, nil
		}}
		_, err := tableops.Update(e.Ctx, e.Target("src", ""), pred, func(_ context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
			var data [][]any
			for i, k := range keep {
				if k {
					r := arrowtest.RowValues(rec, i)
					r[2] = int64(round % 1000)
					data = append(data, r)
				}
			}
			return tabletest.Record(rec.Schema(), data)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []struct {
		name    string
		full    bool
		touched int
	}{{"incremental", false, n / 1000}, {"incremental", false, n / 100}, {"full", true, n / 1000}} {
		b.Run(fmt.Sprintf("%s/rows=%d/groups=%d/touched-groups=%d", mode.name, n, n/perGroup, mode.touched/perGroup), func(b *testing.B) {
			r := &transform.Runner{Catalog: e.Cat, Full: mode.full, Logger: quiet}
			for range b.N {
				b.StopTimer()
				update(mode.touched)
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

// genGroupRows makes the rows with ids [lo, hi) of BenchmarkGroupBy's
// source: cat is the group, perGroup consecutive ids each.
func genGroupRows(sch *arrow.Schema, lo, hi, perGroup int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		const batch = 64 * 1024
		for start := lo; start < hi; start += batch {
			end := min(start+batch, hi)
			bld := array.NewRecordBuilder(memory.DefaultAllocator, sch)
			ids := bld.Field(0).(*array.Int64Builder)
			cat := bld.Field(1).(*array.StringBuilder)
			amt := bld.Field(2).(*array.Int64Builder)
			flag := bld.Field(3).(*array.BooleanBuilder)
			for i := start; i < end; i++ {
				ids.Append(int64(i))
				cat.Append(fmt.Sprintf("g%06d", i/perGroup))
				amt.Append(int64(i % 1000))
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
