package pipeline_test

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/tableops"
)

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMergeOnReadScan measures a full scan of a merge-on-read sync
// output after FLOE_BENCH_BUILDS (default 100) small incremental builds
// (each deletes one source row), with automatic compaction off and on, and
// of the same output freshly compacted in full (docs/benchmarks.md,
// section 13); on-large is auto compaction with every file counted as
// large (floe.compaction.min-file-size-bytes 1), so that a file under the
// deleted ratio has its position delete files merged instead of being
// rewritten. The freshly compacted copy is the output of the first of
// the off and on runs selected, compacted in full after that run's scans
// (built with compaction off when neither is selected): the builds run
// once less, and -bench 'compaction=(on|fresh)$' runs them once.
// Besides the scan it reports the CPU time of a scan (cpu-ms/op), the wall
// and CPU time of the builds (build-s, build-cpu-s) and the data and
// delete files left.
func BenchmarkMergeOnReadScan(b *testing.B) {
	builds := 100
	if n, err := strconv.Atoi(os.Getenv("FLOE_BENCH_BUILDS")); err == nil && n > 0 {
		builds = n
	}
	type output struct {
		e                *tabletest.Env
		buildS, buildCPU float64
	}
	build := func(b *testing.B, envTB testing.TB, enabled, large bool) output {
		e := tabletest.New(envTB)
		if _, err := e.Create("src", "id long not null, amount long", "", []string{"id"}, nil); err != nil {
			b.Fatal(err)
		}
		var data [][]any
		for i := 0; i < 2000; i++ {
			data = append(data, []any{int64(i), int64(i % 100)})
		}
		if _, err := tableops.Append(e.Ctx, e.Target("src", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("src")), data)); err != nil {
			b.Fatal(err)
		}
		extra := ""
		if large {
			// Every data file counts as large: the deletes of a file under
			// the deleted ratio are merged, not the file rewritten.
			extra = `, floe.compaction.min-file-size-bytes: "1"`
		}
		f, err := pipeline.Parse("bench.yaml", []byte(fmt.Sprintf(`
transforms:
  - name: copy
    type: sync
    source: ns.src
    destination: ns.copy
    key: [id]
    properties: {write.delete.mode: merge-on-read, write.update.mode: merge-on-read, write.merge.mode: merge-on-read, floe.compaction.enabled: "%v"%s}
`, enabled, extra)))
		if err != nil {
			b.Fatal(err)
		}
		p, err := f.Pipeline()
		if err != nil {
			b.Fatal(err)
		}
		r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
		if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
			b.Fatal(err)
		}
		start, cpu0 := time.Now(), cpuTime()
		for i := 0; i < builds; i++ {
			if _, err := tableops.Delete(e.Ctx, e.Target("src", ""), where("id", int64(i*7%2000))); err != nil {
				b.Fatal(err)
			}
			if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
				b.Fatal(err)
			}
		}
		return output{e: e, buildS: time.Since(start).Seconds(), buildCPU: (cpuTime() - cpu0).Seconds()}
	}
	var kept *output
	for _, mode := range []string{"off", "on", "fresh", "on-large"} {
		b.Run("compaction="+mode, func(sb *testing.B) {
			var o output
			switch {
			case mode == "on-large":
				o = build(sb, sb, true, true)
			case mode != "fresh" || kept == nil:
				// Kept for the fresh run: its files live as long as b.
				o = build(sb, b, mode == "on", false)
				if kept == nil {
					kept = &o
				}
			default:
				o = *kept
			}
			e := o.e
			if mode == "fresh" {
				if _, err := tableops.Compact(e.Ctx, e.Target("copy", "")); err != nil {
					sb.Fatal(err)
				}
			}
			tbl := e.Load("copy")
			fs, _ := tbl.FS(e.Ctx)
			st, err := scan.LoadState(e.Ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
			if err != nil {
				sb.Fatal(err)
			}
			sb.ResetTimer()
			cpu0 := cpuTime()
			for sb.Loop() {
				rows, err := e.Rows(tbl, scan.At{})
				if err != nil {
					sb.Fatal(err)
				}
				if len(rows) != 2000-builds {
					sb.Fatalf("%d rows, want %d", len(rows), 2000-builds)
				}
			}
			cpu := cpuTime() - cpu0
			// After the loop: ResetTimer drops metrics reported before it.
			sb.ReportMetric(float64(cpu.Milliseconds())/float64(sb.N), "cpu-ms/op")
			sb.ReportMetric(float64(len(st.Data)), "data-files")
			sb.ReportMetric(float64(len(st.Deletes)), "delete-files")
			if mode != "fresh" {
				sb.ReportMetric(o.buildS, "build-s")
				sb.ReportMetric(o.buildCPU, "build-cpu-s")
			}
		})
	}
}
