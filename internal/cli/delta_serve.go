package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pipeline"
)

// deltaMetrics gives floe delta sync --every the metrics of floe run: the
// sync is a pipeline of one delta transform named after the Iceberg table.
type deltaMetrics struct {
	step    *pipeline.Step
	metrics *pipeline.Metrics
	cat     *catalog.Catalog
	mon     *pipeline.Monitor
}

// serveDeltaMetrics starts serving the metrics of a delta sync at addr
// ("" = none); stop stops serving.
func serveDeltaMetrics(ctx context.Context, cat *catalog.Catalog, path, table, addr string, log *slog.Logger) (*deltaMetrics, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	step := &pipeline.Step{Name: table, Type: pipeline.TypeDelta, Sources: []string{path}, Destinations: []string{table},
		Delta: &pipeline.DeltaSpec{Name: table, Path: path, Dst: table}}
	p, err := pipeline.New("delta sync "+table, []*pipeline.Step{step})
	if err != nil {
		return nil, nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := pipeline.NewMetrics(reg)
	mon := &pipeline.Monitor{Pipeline: p, Runner: &pipeline.Runner{Catalog: cat, Pipeline: p}, Metrics: m, Logger: log}
	f := serveFlags{metricsAddr: addr, statusEvery: pipeline.DefaultMonitorEvery}
	stop, err := f.start(ctx, mon, reg, log)
	if err != nil {
		return nil, nil, err
	}
	return &deltaMetrics{step: step, metrics: m, cat: cat, mon: mon}, stop, nil
}

// wrap observes every run of run.
func (d *deltaMetrics) wrap(run syncRun) syncRun {
	if d == nil {
		return run
	}
	return func(ctx context.Context, log *slog.Logger) (*deltasync.Result, error) {
		o := pipeline.Outcome{Step: d.step.Name, Started: time.Now()}
		res, err := run(ctx, log)
		o.Duration = time.Since(o.Started)
		switch {
		case err != nil && ctx.Err() != nil:
			o.Kind, o.Err = pipeline.OutcomeAborted, err
		case err != nil:
			o.Kind, o.Err = pipeline.OutcomeError, err
		case res.Migrated:
			o.Kind = pipeline.OutcomeFull
		case !res.Committed:
			o.Kind = pipeline.OutcomeSkipped
		default:
			o.Kind = pipeline.OutcomeIncremental
		}
		if res != nil {
			ident, _ := catalog.ParseTableName(d.step.Name)
			o.Result = &transform.Result{Transform: d.step.Name, Incremental: !res.Migrated, Skipped: !res.Committed,
				Outputs: []transform.OutputResult{pipeline.DeltaOutput(context.WithoutCancel(ctx), d.cat, ident, res)}}
		}
		d.metrics.Observe(d.step, o)
		// The lag after the run, as floe run measures it.
		d.mon.Sample(context.WithoutCancel(ctx))
		return res, err
	}
}
