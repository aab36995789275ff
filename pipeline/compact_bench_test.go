package pipeline_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/tableops"
)

// BenchmarkMergeOnReadScan measures a full scan of a merge-on-read sync
// output after FLOE_BENCH_BUILDS (default 100) small incremental builds
// (each deletes one source row), with automatic compaction off and on, and
// of the same output freshly compacted in full (docs/benchmarks.md,
// section 13).
func BenchmarkMergeOnReadScan(b *testing.B) {
	builds := 100
	if n, err := strconv.Atoi(os.Getenv("FLOE_BENCH_BUILDS")); err == nil && n > 0 {
		builds = n
	}
	for _, mode := range []string{"off", "on", "fresh"} {
		b.Run("compaction="+mode, func(b *testing.B) {
			e := tabletest.New(b)
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
			enabled := mode == "on"
			f, err := pipeline.Parse("bench.yaml", []byte(fmt.Sprintf(`
transforms:
  - name: copy
    type: sync
    source: ns.src
    destination: ns.copy
    key: [id]
    properties: {write.delete.mode: merge-on-read, write.update.mode: merge-on-read, write.merge.mode: merge-on-read, floe.compaction.enabled: "%v"}
`, enabled)))
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
			for i := 0; i < builds; i++ {
				if _, err := tableops.Delete(e.Ctx, e.Target("src", ""), where("id", int64(i*7%2000))); err != nil {
					b.Fatal(err)
				}
				if _, err := r.RunOnce(e.Ctx, p, nil); err != nil {
					b.Fatal(err)
				}
			}
			if mode == "fresh" {
				if _, err := tableops.Compact(e.Ctx, e.Target("copy", "")); err != nil {
					b.Fatal(err)
				}
			}
			tbl := e.Load("copy")
			fs, _ := tbl.FS(e.Ctx)
			st, err := scan.LoadState(e.Ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				rows, err := e.Rows(tbl, scan.At{})
				if err != nil {
					b.Fatal(err)
				}
				if len(rows) != 2000-builds {
					b.Fatalf("%d rows, want %d", len(rows), 2000-builds)
				}
			}
			// After the loop: ResetTimer drops metrics reported before it.
			b.ReportMetric(float64(len(st.Data)), "data-files")
			b.ReportMetric(float64(len(st.Deletes)), "delete-files")
		})
	}
}
