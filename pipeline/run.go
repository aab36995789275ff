package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/transform"
)

// Outcome kinds: what one run of a step did.
const (
	OutcomeIncremental = "incremental" // built from what changed
	OutcomeFull        = "full"        // rebuilt in full (Result.Reason says why)
	OutcomeSkipped     = "skipped"     // nothing new: nothing computed or committed
	OutcomeError       = "error"       // failed (Err)
	OutcomeBlocked     = "blocked"     // not run: an upstream step failed
	OutcomeAborted     = "aborted"     // stopped by cancellation before it committed
)

// Outcome is the result of one run of a step.
type Outcome struct {
	Step     string            // the step's name
	Kind     string            // one of the Outcome* constants
	Result   *transform.Result // the build's result (nil unless it ran to the end)
	Err      error             // why it failed, was blocked or aborted
	Started  time.Time         // when the run started
	Duration time.Duration     // how long it ran
}

// Failed reports whether the run failed or was blocked by a failed
// upstream step.
func (o Outcome) Failed() bool { return o.Kind == OutcomeError || o.Kind == OutcomeBlocked }

// Runner runs the steps of pipelines against one catalog. Its fields are
// read-only while it runs; RunStep and RunOnce may be called from several
// goroutines for different steps.
type Runner struct {
	// Catalog holds the steps' tables.
	Catalog *catalog.Catalog
	// Logger receives the engine's and the runner's structured logs
	// (default slog.Default()).
	Logger *slog.Logger
	// Metrics, when not nil, observes every run.
	Metrics *Metrics
	// History, when not nil, records every run for floe status.
	History *History
	// Full forces full rebuilds.
	Full bool
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// RunStep runs one step once and records its outcome (history, metrics,
// log). A run whose context is cancelled before it commits is
// OutcomeAborted; the engine commits each output exactly once or not at
// all, so an aborted run leaves every output as it was or fully committed.
func (r *Runner) RunStep(ctx context.Context, s *Step) Outcome {
	o := Outcome{Step: s.Name, Started: time.Now()}
	log := r.logger()
	res, err := r.build(ctx, s)
	o.Duration = time.Since(o.Started)
	o.Result = res
	switch {
	case err != nil && ctx.Err() != nil:
		// NB: an error while the context is cancelled is taken as the
		// cancellation's doing, whether or not a layer wrapped it with %w.
		o.Kind, o.Err = OutcomeAborted, err
	case err != nil:
		o.Kind, o.Err = OutcomeError, err
	case res.Skipped:
		o.Kind = OutcomeSkipped
	case res.Incremental:
		o.Kind = OutcomeIncremental
	default:
		o.Kind = OutcomeFull
	}
	r.record(ctx, s, o)
	switch o.Kind {
	case OutcomeError:
		log.Error("transform failed", "transform", s.Name, "error", o.Err.Error(), "duration", o.Duration)
	case OutcomeAborted:
		log.Warn("transform stopped before committing", "transform", s.Name, "duration", o.Duration)
	default:
		args := []any{"transform", s.Name, "outcome", o.Kind, "duration", o.Duration}
		if o.Kind == OutcomeFull {
			args = append(args, "reason", res.Reason)
		}
		for _, out := range res.Outputs {
			if out.Committed {
				args = append(args, "output", out.Table, "rows_added", out.RowsAdded, "rows_removed", out.RowsRemoved)
			}
		}
		log.Info("transform done", args...)
	}
	return o
}

// build runs the step's transform or Delta sync.
func (r *Runner) build(ctx context.Context, s *Step) (*transform.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Delta != nil {
		syncer := DeltaSync
		if syncer == nil {
			return nil, fmt.Errorf("transform %s: delta transforms are %w: the Delta Lake sync is not wired into this floe (pipeline.DeltaSync is nil)", s.Name, ErrNotAvailable)
		}
		res, err := syncer.Sync(ctx, DeltaSyncRequest{Spec: *s.Delta, Catalog: r.Catalog, Full: r.Full,
			Logger: r.logger().With("transform", s.Name)})
		if err != nil {
			return nil, fmt.Errorf("transform %s: %w", s.Name, err)
		}
		return res, nil
	}
	if s.Transform == nil {
		return nil, fmt.Errorf("transform %s: nothing to run", s.Name)
	}
	if s.Type == TypeMerge && MergeFunc == nil {
		// The transform fails the same way; failing here spares a build
		// decision (and its log lines) that cannot lead anywhere.
		return nil, fmt.Errorf("transform %s: %w", s.Name, errMergeNotWired)
	}
	tr := &transform.Runner{Catalog: r.Catalog, Logger: r.logger(), Full: r.Full}
	return tr.Build(ctx, s.Transform)
}

// Blocked records (history, metrics, log) that s was not run because its
// upstream step failed, and returns that OutcomeBlocked outcome.
func (r *Runner) Blocked(ctx context.Context, s *Step, upstream string) Outcome {
	o := Outcome{Step: s.Name, Kind: OutcomeBlocked, Started: time.Now(),
		Err: fmt.Errorf("transform %s not run: %w (%s)", s.Name, ErrUpstreamFailed, upstream)}
	r.record(ctx, s, o)
	r.logger().Warn("transform not run: an upstream transform failed", "transform", s.Name, "upstream", upstream)
	return o
}

func (r *Runner) record(ctx context.Context, s *Step, o Outcome) {
	if r.History != nil {
		if err := r.History.Record(o); err != nil {
			r.logger().Warn("cannot record the run", "transform", s.Name, "error", err.Error())
		}
	}
	if r.Metrics != nil {
		r.Metrics.Observe(s, o)
		if r.Catalog != nil && o.Kind != OutcomeAborted {
			// The lag after the run: snapshots of each input not yet processed.
			if st, err := r.stepStatus(context.WithoutCancel(ctx), s); err == nil {
				r.Metrics.ObserveStatus(s, st)
			}
		}
	}
}

// RunOnce runs the steps (every step of p when none are given) once each,
// in dependency order, one at a time. A step whose upstream step failed or
// was blocked is not run (OutcomeBlocked); the others still run. When the
// context is cancelled the step in progress stops before committing and
// the remaining ones are not started. The error wraps ErrRunFailed when a
// step failed or was blocked (naming them), or is the context's error when
// the run was stopped.
func (r *Runner) RunOnce(ctx context.Context, p *Pipeline, steps []*Step) ([]Outcome, error) {
	if steps == nil {
		steps = p.Steps
	}
	failed := map[string]bool{}
	var outcomes []Outcome
	var bad []string
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return outcomes, err
		}
		var o Outcome
		if up := failedUpstream(p, s, failed); up != "" {
			o = r.Blocked(ctx, s, up)
		} else {
			o = r.RunStep(ctx, s)
		}
		outcomes = append(outcomes, o)
		if o.Kind == OutcomeAborted {
			return outcomes, ctx.Err()
		}
		if o.Failed() {
			failed[s.Name] = true
			bad = append(bad, s.Name)
		}
	}
	if len(bad) > 0 {
		return outcomes, fmt.Errorf("%w: %d of %d transforms failed or were not run: %s", ErrRunFailed, len(bad), len(steps), strings.Join(bad, ", "))
	}
	return outcomes, nil
}

// failedUpstream returns the name of a failed upstream step of s, or "".
func failedUpstream(p *Pipeline, s *Step, failed map[string]bool) string {
	for _, u := range p.Upstream(s) {
		if failed[u] {
			return u
		}
	}
	return ""
}
