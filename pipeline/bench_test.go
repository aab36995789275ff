package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/tableops"
)

// BenchmarkParse measures validating a pipeline file of 50 transforms
// (the cost of floe run and floe status before any table is read).
func BenchmarkParse(b *testing.B) {
	var src strings.Builder
	src.WriteString("transforms:\n")
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&src, "  - {name: t%d, type: sync, source: ns.s%d, destination: ns.d%d, key: [id], filter: \"status = 'active' AND amount > %d\", columns: [id, amount], every: 15m}\n", i, i, i, i)
	}
	data := []byte(src.String())
	b.ReportAllocs()
	for b.Loop() {
		f, err := pipeline.Parse("bench.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Pipeline(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchEnv is a source of 1,000 rows and a built sync transform.
func benchEnv(b *testing.B) (*tabletest.Env, *pipeline.Pipeline, *pipeline.Runner) {
	e := tabletest.New(b)
	if _, err := e.Create("src", "id long not null, status string, amount long", "", []string{"id"}, nil); err != nil {
		b.Fatal(err)
	}
	var data [][]any
	for i := 0; i < 1000; i++ {
		data = append(data, []any{int64(i), []string{"active", "closed"}[i%2], int64(i % 100)})
	}
	tbl := e.Load("src")
	if _, err := tableops.Append(e.Ctx, e.Target("src", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), data)); err != nil {
		b.Fatal(err)
	}
	f, err := pipeline.Parse("bench.yaml", []byte(`
transforms:
  - {name: active, type: sync, source: ns.src, destination: ns.active, key: [id], filter: "status = 'active'"}
`))
	if err != nil {
		b.Fatal(err)
	}
	p, err := f.Pipeline()
	if err != nil {
		b.Fatal(err)
	}
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	if _, err := r.RunOnce(context.Background(), p, nil); err != nil {
		b.Fatal(err)
	}
	return e, p, r
}

// BenchmarkSkippedRun measures a scheduled run that finds nothing new (the
// cost of each tick of an idle transform: metadata only).
func BenchmarkSkippedRun(b *testing.B) {
	e, p, r := benchEnv(b)
	b.ResetTimer()
	for b.Loop() {
		o := r.RunStep(e.Ctx, p.Steps[0])
		if o.Kind != pipeline.OutcomeSkipped {
			b.Fatalf("%s: %v", o.Kind, o.Err)
		}
	}
}

// BenchmarkStatus measures floe status for one transform.
func BenchmarkStatus(b *testing.B) {
	e, p, r := benchEnv(b)
	b.ResetTimer()
	for b.Loop() {
		st, err := r.Status(e.Ctx, p, nil)
		if err != nil || len(st) != 1 || !st[0].Exists {
			b.Fatal(st, err)
		}
	}
}
