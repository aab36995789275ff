package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/tableops"
)

// Outcome kinds: what one run of a step did.
const (
	OutcomeIncremental = "incremental" // built from what changed
	OutcomeFull        = "full"        // rebuilt in full (Result.Reason says why)
	OutcomeSkipped     = "skipped"     // nothing new: nothing computed or committed
	OutcomeError       = "error"       // failed (Err)
	OutcomeBlocked     = "blocked"     // not run: an upstream step failed
	OutcomeAborted     = "aborted"     // stopped by cancellation before it committed
	// OutcomeSuperseded: another run (another floe process) committed the
	// step's outputs while this one was building; this run found the work
	// done and committed nothing. It is not a failure.
	OutcomeSuperseded = "superseded"
)

// Outcome is the result of one run of a step.
type Outcome struct {
	Step     string            // the step's name
	Kind     string            // one of the Outcome* constants
	Result   *transform.Result // the build's result (nil unless it ran to the end)
	Err      error             // why it failed, was blocked or aborted
	Started  time.Time         // when the run started
	Duration time.Duration     // how long it ran
	// LagBefore and LagAfter are the step's end-to-end lag (the largest of
	// its outputs') before and after the run; nil when not measured (no
	// History and no Metrics) or unknown.
	LagBefore, LagAfter *time.Duration
	// BytesRead and BytesWritten are read from the snapshot summaries of
	// the inputs' processed ranges (the files they added; a full build: the
	// input's files) and of the snapshots committed; 0 when not measured.
	BytesRead, BytesWritten int64
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
	// Pipeline, when set, is the pipeline of the steps run, for the
	// end-to-end lag through chains of transforms in the history and the
	// metrics (nil: each step's own lag).
	Pipeline *Pipeline
	// Now is the clock lags are measured with (nil = time.Now).
	Now func() time.Time
	// Engine names what runs the builds in the history (default "floe");
	// a build's own engine (local or spark) wins.
	Engine string
	// Push chooses the engine of each build (a step's own Engine wins over
	// Push.Kind); Remote is the Spark engine builds pushed down run on.
	Push   pushdown.Settings
	Remote pushdown.Engine
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
// A run that loses a race with another process building the same step
// (the other committed the outputs first) builds again from what the other
// committed: finding nothing left, it is OutcomeSuperseded.
func (r *Runner) RunStep(ctx context.Context, s *Step) Outcome {
	o := Outcome{Step: s.Name, Started: time.Now()}
	log := r.logger()
	if r.measures() {
		o.LagBefore = r.stepLag(ctx, s)
	}
	res, err := r.build(ctx, s)
	superseded := false
	if err != nil && ctx.Err() == nil && lostRace(err) {
		log.Info("another run committed this transform's outputs first; building what is left", "transform", s.Name, "error", err.Error())
		res2, err2 := r.build(ctx, s)
		switch {
		case err2 == nil && res2.Skipped, err2 != nil && ctx.Err() == nil && lostRace(err2):
			superseded = true
			if err2 == nil {
				res = res2
			}
		default:
			res, err = res2, err2
		}
	}
	o.Duration = time.Since(o.Started)
	o.Result = res
	switch {
	case superseded:
		o.Kind, o.Err = OutcomeSuperseded, err
		if o.Result != nil && o.Result.Skipped {
			o.Err = nil
		}
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
	o = r.record(ctx, s, o)
	switch o.Kind {
	case OutcomeError:
		log.Error("transform failed", "transform", s.Name, "error", o.Err.Error(), "duration", o.Duration)
	case OutcomeAborted:
		log.Warn("transform stopped before committing", "transform", s.Name, "duration", o.Duration)
	case OutcomeSuperseded:
		log.Info("transform done by another run", "transform", s.Name, "outcome", o.Kind, "duration", o.Duration)
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
		if o.LagAfter != nil {
			args = append(args, "lag", o.LagAfter.Round(time.Second).String())
		}
		log.Info("transform done", args...)
	}
	return o
}

// lostRace reports whether a build failed because another build committed
// its output first: the watermark it started from moved, or the output it
// was creating was created in between.
func lostRace(err error) bool {
	return errors.Is(err, commit.ErrWatermarkMoved) || errors.Is(err, tableops.ErrTableExists)
}

// measures reports whether runs are measured (lags, bytes) for the
// history or the metrics.
func (r *Runner) measures() bool {
	return r.Catalog != nil && (r.History != nil || r.Metrics != nil)
}

// stepLag is the largest end-to-end lag of s's outputs now; nil when
// unknown.
func (r *Runner) stepLag(ctx context.Context, s *Step) *time.Duration {
	sr := r.newStatusReader(context.WithoutCancel(ctx), r.Pipeline)
	return stepLagOf(sr.stepStatus(s))
}

func stepLagOf(st []OutputStatus) *time.Duration {
	m := lagMax{known: true}
	for _, o := range st {
		lag := o.EndToEndLag
		if lag == nil {
			lag = o.Lag
		}
		m.add(lag, o.Output)
	}
	if len(st) == 0 {
		return nil
	}
	return m.ptr()
}

// build runs the step's transform or Delta sync.
func (r *Runner) build(ctx context.Context, s *Step) (*transform.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Delta != nil {
		push := r.Push
		if s.Engine != "" {
			push.Kind = s.Engine
		}
		res, err := syncDelta(ctx, deltaSyncRequest{Spec: *s.Delta, Catalog: r.Catalog, Full: r.Full,
			Logger: r.logger().With("transform", s.Name), Push: push, Remote: r.Remote})
		if err != nil {
			return nil, fmt.Errorf("transform %s: %w", s.Name, err)
		}
		return res, nil
	}
	if s.Transform == nil {
		return nil, fmt.Errorf("transform %s: nothing to run", s.Name)
	}
	push := r.Push
	if s.Engine != "" {
		push.Kind = s.Engine
	}
	tr := &transform.Runner{Catalog: r.Catalog, Logger: r.logger(), Full: r.Full, EngineSettings: push, Engine: r.Remote}
	return tr.Build(ctx, s.Transform)
}

// Blocked records (history, metrics, log) that s was not run because its
// upstream step failed, and returns that OutcomeBlocked outcome.
func (r *Runner) Blocked(ctx context.Context, s *Step, upstream string) Outcome {
	o := Outcome{Step: s.Name, Kind: OutcomeBlocked, Started: time.Now(),
		Err: fmt.Errorf("transform %s not run: %w (%s)", s.Name, ErrUpstreamFailed, upstream)}
	o = r.record(ctx, s, o)
	r.logger().Warn("transform not run: an upstream transform failed", "transform", s.Name, "upstream", upstream)
	return o
}

func (r *Runner) record(ctx context.Context, s *Step, o Outcome) Outcome {
	if r.measures() && o.Kind != OutcomeAborted && o.Kind != OutcomeBlocked {
		// The lag after the run, and the bytes its snapshots say it read
		// and wrote.
		sr := r.newStatusReader(context.WithoutCancel(ctx), r.Pipeline)
		st := sr.stepStatus(s)
		o.LagAfter = stepLagOf(st)
		o.BytesRead, o.BytesWritten = sr.bytesOf(s, o.Result)
		r.Metrics.ObserveStatus(s, st)
	}
	r.Metrics.Observe(s, o)
	if r.History != nil {
		if err := r.History.Record(r.runRecord(s, o)); err != nil {
			r.logger().Warn("cannot record the run", "transform", s.Name, "error", err.Error())
		}
	}
	return o
}

// runRecord is the history's record of an outcome.
func (r *Runner) runRecord(s *Step, o Outcome) RunRecord {
	rec := RunRecord{Transform: s.Name, Start: o.Started.UTC(), End: o.Started.Add(o.Duration).UTC(), Outcome: o.Kind,
		Engine: r.Engine, BytesRead: o.BytesRead, BytesWritten: o.BytesWritten, Definition: s.Definition,
		LagBefore: seconds(o.LagBefore), LagAfter: seconds(o.LagAfter)}
	if rec.Engine == "" {
		rec.Engine = "floe"
	}
	if o.Err != nil && o.Kind != OutcomeSuperseded {
		rec.Error = o.Err.Error()
	}
	if res := o.Result; res != nil {
		rec.Reason = res.Reason
		if res.Engine != "" {
			rec.Engine = res.Engine
		}
		rec.EngineReason, rec.SparkRemote, rec.SparkSession, rec.SparkApp = res.EngineReason, res.Remote, res.SparkSession, res.SparkApp
		for _, in := range res.Inputs {
			rec.Inputs = append(rec.Inputs, RunInput{Name: in.Name, Table: in.Table, From: in.Start, To: in.End, Snapshots: in.Snapshots})
		}
		for _, out := range res.Outputs {
			rec.Outputs = append(rec.Outputs, RunOutput{Table: out.Table, Committed: out.Committed, SnapshotID: out.SnapshotID,
				RowsAdded: out.RowsAdded, RowsRemoved: out.RowsRemoved, Attempts: out.Attempts, AnswerLost: out.AnswerLost})
			if out.Committed {
				rec.RowsAdded += out.RowsAdded
				rec.RowsRemoved += out.RowsRemoved
			}
			rec.CommitAttempts += out.Attempts
		}
	}
	return rec
}

func seconds(d *time.Duration) *float64 {
	if d == nil {
		return nil
	}
	s := d.Seconds()
	return &s
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
	if r.Pipeline == nil {
		rc := *r
		rc.Pipeline = p
		r = &rc
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

// bytesOf reads from snapshot summaries the bytes a build read and wrote:
// the sizes of the files the inputs' processed snapshots added (on a full
// build, all the files of the inputs' snapshots read) and of the files the
// committed snapshots added. Delta inputs are not counted.
func (sr *statusReader) bytesOf(s *Step, res *transform.Result) (read, written int64) {
	if res == nil || res.Skipped {
		return 0, 0
	}
	for _, out := range res.Outputs {
		if !out.Committed || out.SnapshotID == 0 {
			continue
		}
		if tbl, err := sr.load(out.Table); err == nil {
			if snap := tbl.Metadata().SnapshotByID(out.SnapshotID); snap != nil {
				written += summaryInt(snap, "added-files-size")
			}
		}
	}
	if s.Delta != nil {
		return 0, written
	}
	for _, in := range res.Inputs {
		end, err := strconv.ParseInt(in.End, 10, 64)
		if err != nil {
			continue // NONE: an empty input
		}
		tbl, err := sr.load(in.Table)
		if err != nil {
			continue
		}
		meta := tbl.Metadata()
		last := meta.SnapshotByID(end)
		if last == nil {
			continue
		}
		if in.Start == "" {
			read += summaryInt(last, "total-files-size")
			continue
		}
		var start *int64
		if id, err := strconv.ParseInt(in.Start, 10, 64); err == nil {
			start = &id
		}
		for _, snap := range state.Between(meta, last, start) {
			read += summaryInt(snap, "added-files-size")
		}
	}
	return read, written
}

// summaryInt reads an integer of a snapshot's summary (0 when absent).
func summaryInt(s *table.Snapshot, key string) int64 {
	if s.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(s.Summary.Properties[key], 10, 64)
	return n
}

// PendingSince returns the earliest commit time of the changes of s's
// inputs not yet in its outputs (zero when they are up to date), for
// Scheduler.Pending. It is an error when that is not known.
func (r *Runner) PendingSince(ctx context.Context, s *Step) (time.Time, error) {
	sr := r.newStatusReader(ctx, r.Pipeline)
	var since time.Time
	for _, o := range sr.stepStatus(s) {
		for _, in := range o.Inputs {
			if in.Lag == nil {
				return time.Time{}, fmt.Errorf("transform %s: the lag of input %s is not known: %s", s.Name, in.Name, o.Note)
			}
			if !in.PendingSince.IsZero() && (since.IsZero() || in.PendingSince.Before(since)) {
				since = in.PendingSince
			}
		}
	}
	return since, nil
}
