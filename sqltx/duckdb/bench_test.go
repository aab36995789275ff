//go:build cgo

package duckdb_test

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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

// benchSizes are the source sizes of the SQL benchmarks:
// FLOE_SQL_BENCH_ROWS, a comma-separated list (default 1000000). Each
// size's tables are built once per run, then its incremental and full
// builds run against them, so that their ratio comes from one run.
func benchSizes(b *testing.B) []int {
	s := os.Getenv("FLOE_SQL_BENCH_ROWS")
	if s == "" {
		return []int{1_000_000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 10_000 {
			b.Fatalf("FLOE_SQL_BENCH_ROWS %q: want sizes of at least 10000 rows, comma-separated", s)
		}
		out = append(out, v)
	}
	return out
}

// rowsPerFile is the size of a source data file in the SQL benchmarks: a
// table ten times larger has ten times the files, as a writer with a
// target file size gives (at 1M rows, 10 files).
const rowsPerFile = 100_000

// appendFiles appends the rows [0, n) that gen makes to ns.<name>, one
// data file (and commit) per rowsPerFile rows.
func appendFiles(b *testing.B, e *env, name string, n int, gen func(sch *arrow.Schema, lo, hi int) iter.Seq2[arrow.RecordBatch, error]) {
	sch := tabletest.ArrowSchema(e.Load(name))
	for lo := 0; lo < n; lo += rowsPerFile {
		hi := min(lo+rowsPerFile, n)
		if _, err := tableops.Append(e.Ctx, e.Target(name, ""), func() iter.Seq2[arrow.RecordBatch, error] {
			return gen(sch, lo, hi)
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the CPU time (user and system) the process has used so far:
// DuckDB's threads and the Go runtime's included.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchBuilds runs b.N builds of tr (full ones when full), each after
// update (not timed), and reports the CPU seconds a build used (cpu-s/op)
// beside the wall time: the machine is shared, and CPU time is what the
// load changes least. Each build runs under the pprof label build=<the
// benchmark's name>, so that a -cpuprofile of the run can be cut to the
// timed builds (go tool pprof -tagfocus build=incremental). With
// FLOE_SQL_BENCH_FRESH set, each build starts without the manifests the
// process kept from the last one, as the build of a one-shot process
// (floe run --once) does.
func benchBuilds(b *testing.B, e *env, tr *transform.Transform, full bool, update func()) {
	r := &transform.Runner{Catalog: e.Cat, Full: full, Logger: quiet}
	fresh := os.Getenv("FLOE_SQL_BENCH_FRESH") != ""
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		update()
		if fresh {
			transform.DropRetainedManifests()
		}
		b.StartTimer()
		c0 := cpuTime(b)
		var res *transform.Result
		var err error
		pprof.Do(e.Ctx, pprof.Labels("build", b.Name()), func(ctx context.Context) { res, err = r.Build(ctx, tr) })
		cpu += cpuTime(b) - c0
		if err != nil {
			b.Fatal(err)
		}
		if res.Incremental == full {
			b.Fatalf("incremental %v: %s", res.Incremental, res.Reason)
		}
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

var quiet = slog.New(slog.DiscardHandler)

// benchDstProps are the properties of the benchmarks' destinations:
// merge-on-read, and no automatic compaction after a build unless
// FLOE_SQL_BENCH_COMPACT is set. The compaction is a maintenance commit
// after the build's own (it bin-packs the destination's small files, and
// every data file under 75% of the 512 MiB target counts as small, the
// destination's one big file included), so it rewrites the whole
// destination every few builds whatever the change; the benchmarks
// measure the build, and FLOE_SQL_BENCH_COMPACT=1 that cost with it.
func benchDstProps() map[string]string {
	p := map[string]string{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "write.merge.mode": "merge-on-read"}
	if os.Getenv("FLOE_SQL_BENCH_COMPACT") == "" {
		p["floe.compaction.enabled"] = "false"
	}
	return p
}

// BenchmarkRowLocal compares an incremental build of a row-local keyed
// query after an update of 0.1% of the source's rows (one contiguous id
// range, so one of the source's files) with a full rebuild of the same
// query, in one run, for each size of benchSizes (merge-on-read source in
// files of rowsPerFile rows, merge-on-read destination).
//
//	FLOE_SQL_BENCH_ROWS=1000000,10000000 go test ./sqltx/duckdb -run '^$' -bench RowLocal -benchtime 3x
func BenchmarkRowLocal(b *testing.B) {
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) { benchRowLocal(b, n) })
	}
}

func benchRowLocal(b *testing.B, n int) {
	e := &env{Env: tabletest.New(b)}
	if _, err := e.Create("src", srcSchema, "", []string{"id"}, iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}); err != nil {
		b.Fatal(err)
	}
	appendFiles(b, e, "src", n, genRows)
	q := "SELECT id, upper(cat) AS ucat, amount * 2 AS a2, CASE WHEN amount > 50 THEN 'big' ELSE 'small' END AS size FROM ns.src WHERE flag"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bench", Query: q, Dst: "ns.dst", Keys: []string{"id"}, Properties: benchDstProps()})
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
		b.Run(fmt.Sprintf("%s/touched=%d", mode.name, touched), func(b *testing.B) { benchBuilds(b, e, tr, mode.full, update) })
	}
}

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

// BenchmarkGroupBy compares incremental builds of a GROUP BY query
// (count, sum, min, max by cat; groups of 100 rows, each group's rows
// contiguous in id) after an update of 10, 100 and 1,000 groups'
// rows (one contiguous id range each) with a full rebuild, in one
// run, for each size of benchSizes (merge-on-read source in files of
// rowsPerFile rows). The incremental build reads the touched groups'
// rows only (cat IN (...) on the scan prunes the files by their
// statistics), so its cost follows the groups touched.
//
//	FLOE_SQL_BENCH_ROWS=1000000,10000000 go test ./sqltx/duckdb -run '^$' -bench GroupBy -benchtime 3x
func BenchmarkGroupBy(b *testing.B) {
	for _, n := range benchSizes(b) {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) { benchGroupBy(b, n) })
	}
}

func benchGroupBy(b *testing.B, n int) {
	const perGroup = 100
	e := &env{Env: tabletest.New(b)}
	mor := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	if _, err := e.Create("src", srcSchema, "", []string{"id"}, mor); err != nil {
		b.Fatal(err)
	}
	appendFiles(b, e, "src", n, func(sch *arrow.Schema, lo, hi int) iter.Seq2[arrow.RecordBatch, error] {
		return genGroupRows(sch, lo, hi, perGroup)
	})
	q := "SELECT cat, count(*) AS n, sum(amount) AS total, min(amount) AS lo, max(amount) AS hi FROM ns.src GROUP BY cat"
	tr, _, err := sqltx.New(e.Ctx, sqltx.Spec{Name: "bench", Query: q, Dst: "ns.dst", Keys: []string{"cat"}, Properties: benchDstProps()})
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
		name   string
		full   bool
		groups int
	}{{"incremental", false, 10}, {"incremental", false, 100}, {"incremental", false, 1000}, {"full", true, 10}} {
		b.Run(fmt.Sprintf("%s/groups=%d/touched-groups=%d", mode.name, n/perGroup, mode.groups), func(b *testing.B) {
			benchBuilds(b, e, tr, mode.full, func() { update(mode.groups * perGroup) })
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
