package pipeline_test

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/faultcat"
	"github.com/floedata/floe/pipeline"
)

// TestAnswerLostSurfaced: a build whose commit landed but whose answer the
// catalog lost (floe found it by its commit id) reports it in the output's
// result (transform.OutputResult.AnswerLost), in the run history
// (answer_lost), in floe_pipeline_commit_answer_lost_total, and logs a
// warning; the build succeeds, committed once.
func TestAnswerLostSurfaced(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, 5}, []any{2, 500})
	p := loadPipeline(t, "transforms:\n  - {name: copy, type: filter, source: ns.orders, destination: ns.copy}\n")
	hist := pipeline.OpenHistory(p.StatusFile)
	var logs bytes.Buffer
	r := &pipeline.Runner{Catalog: e.Cat, Logger: slog.New(slog.NewTextHandler(&logs, nil)), History: hist,
		Metrics: pipeline.NewMetrics(prometheus.NewRegistry())}
	inj := faultcat.New(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.After, Nth: 1})
	e.Cat.Wrap(catalog.Wrap{Catalog: inj.Wrap})
	outs, err := r.RunOnce(e.Ctx, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(inj.Hits()) != 1 {
		t.Fatalf("the fault did not fire: %v", inj.Hits())
	}
	if len(outs) != 1 || outs[0].Result == nil || len(outs[0].Result.Outputs) != 1 {
		t.Fatalf("outcomes %+v", outs)
	}
	if o := outs[0].Result.Outputs[0]; !o.Committed || !o.AnswerLost {
		t.Fatalf("output result %+v: want committed with the answer lost", o)
	}
	if got := testutil.ToFloat64(r.Metrics.CommitAnswerLost.WithLabelValues("copy", "ns.copy")); got != 1 {
		t.Fatalf("floe_pipeline_commit_answer_lost_total = %v, want 1", got)
	}
	d, err := hist.Read()
	if err != nil || len(d.Records) != 1 || len(d.Records[0].Outputs) != 1 || !d.Records[0].Outputs[0].AnswerLost {
		t.Fatalf("history %+v %v: want the output's answer_lost", d, err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "answer to the output's commit was lost") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
	if len(e.rowsOf("copy")) != 2 || len(e.Load("copy").Metadata().Snapshots()) != 1 {
		t.Fatal("the output is not the source's rows committed once")
	}
}
