package pipeline

import (
	"errors"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floedata/floe/internal/commit"
)

// Metrics are the Prometheus metrics of pipeline runs. Build them with
// NewMetrics; the zero value is not usable. Methods are safe for
// concurrent use and do nothing on a nil *Metrics.
//
// The lag gauges are set after every run and, with a Monitor, every time
// it samples the status: they move between runs, while a build is stuck,
// and in floe serve, which runs no builds.
type Metrics struct {
	// Builds counts runs by transform and outcome (incremental, full,
	// skipped, error, blocked, aborted, superseded).
	Builds *prometheus.CounterVec
	// EngineBuilds counts the builds each engine ran (local, spark), by
	// transform.
	EngineBuilds *prometheus.CounterVec
	// LastBuildInfo is 1 for the engine, Spark application and Spark
	// session of each transform's last build (an info metric: one series
	// per transform).
	LastBuildInfo *prometheus.GaugeVec
	// BuildDuration observes the duration of runs that ran (not blocked).
	BuildDuration *prometheus.HistogramVec
	// RowsAdded counts the rows added to each output.
	RowsAdded *prometheus.CounterVec
	// RowsRemoved counts the rows removed from each output.
	RowsRemoved *prometheus.CounterVec
	// BytesRead and BytesWritten count the bytes of the files builds read
	// and wrote, as snapshot summaries say.
	BytesRead, BytesWritten *prometheus.CounterVec
	// CommitRetries counts commit attempts beyond the first: each is a
	// conflict with another writer that floe retried.
	CommitRetries *prometheus.CounterVec
	// CommitConflicts counts runs that lost a race with another build of
	// the same transform (superseded runs, and failures from too many
	// concurrent commits).
	CommitConflicts *prometheus.CounterVec
	// CommitUnknown counts commits whose outcome is unknown (the catalog's
	// answer was lost and could not be found again: the commit may or may
	// not have happened; see commit.ErrOutcomeUnknown).
	CommitUnknown *prometheus.CounterVec
	// CommitAnswerLost counts commits whose answer was lost and that floe
	// then found on the table by their commit id (committed once).
	CommitAnswerLost *prometheus.CounterVec
	// SnapshotsBehind is, per transform and input, how many snapshots of the
	// input the transform has not processed yet.
	SnapshotsBehind *prometheus.GaugeVec
	// RowsBehind is, per transform and input, how many rows those
	// snapshots add or remove (from their summaries).
	RowsBehind *prometheus.GaugeVec
	// InputLag is, per transform and input, how long the oldest change of
	// the input missing from the outputs has waited, in seconds.
	InputLag *prometheus.GaugeVec
	// OutputLag is, per transform and output, the end-to-end lag: the
	// largest lag of the source tables upstream, in seconds.
	OutputLag *prometheus.GaugeVec
	// Freshness is, per transform and output, 0 ok, 1 warn, 2 error, -1
	// unknown (only for transforms with freshness targets).
	Freshness *prometheus.GaugeVec
	// LastSuccess is the Unix time of each transform's last successful run.
	LastSuccess *prometheus.GaugeVec
	// StatusTime is the Unix time of the last status sample; StatusUp is 1
	// when the catalog answered it, 0 when not.
	StatusTime, StatusUp prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (when not
// nil), as Prometheus' tsdb does. Registering twice with one registry
// panics, as prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	m := &Metrics{
		Builds: counter("floe_pipeline_builds_total",
			"Runs of pipeline transforms by outcome (incremental, full, skipped, error, blocked, aborted, superseded).", "transform", "outcome"),
		EngineBuilds: counter("floe_pipeline_engine_builds_total",
			"Builds of pipeline transforms by the engine that ran them (local, spark).", "transform", "engine"),
		LastBuildInfo: gauge("floe_pipeline_last_build_info",
			"1 for the engine (local, spark), Spark application and Spark session of the transform's last build.", "transform", "engine", "spark_app", "spark_session"),
		BuildDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "floe_pipeline_build_duration_seconds",
			Help:    "Duration of runs of pipeline transforms.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 150, 300, 600, 1800},
		}, []string{"transform"}),
		RowsAdded:     counter("floe_pipeline_rows_added_total", "Rows committed to outputs of pipeline transforms.", "transform", "output"),
		RowsRemoved:   counter("floe_pipeline_rows_removed_total", "Rows removed from outputs of pipeline transforms.", "transform", "output"),
		BytesRead:     counter("floe_pipeline_bytes_read_total", "Bytes of the input files builds read, from snapshot summaries.", "transform"),
		BytesWritten:  counter("floe_pipeline_bytes_written_total", "Bytes of the files builds committed, from snapshot summaries.", "transform"),
		CommitRetries: counter("floe_pipeline_commit_retries_total", "Commit attempts beyond the first (conflicts with other writers, retried).", "transform", "output"),
		CommitConflicts: counter("floe_pipeline_commit_conflicts_total",
			"Runs that lost a race with another build of the same transform: superseded, or failed after too many concurrent commits.", "transform"),
		CommitUnknown: counter("floe_pipeline_commit_unknown_total",
			"Commits whose outcome is unknown: the catalog's answer was lost, the commit may or may not have happened.", "transform"),
		CommitAnswerLost: counter("floe_pipeline_commit_answer_lost_total",
			"Commits whose answer from the catalog was lost, found on the table by their commit id afterwards (committed once).", "transform", "output"),
		SnapshotsBehind: gauge("floe_pipeline_snapshots_behind",
			"Snapshots of an input committed after the watermark of the transform's output.", "transform", "input"),
		RowsBehind: gauge("floe_pipeline_rows_behind",
			"Rows the snapshots of an input after the watermark add or remove, from their summaries.", "transform", "input"),
		InputLag: gauge("floe_pipeline_lag_seconds",
			"How long the oldest change of an input missing from the transform's outputs has waited (0: up to date).", "transform", "input"),
		OutputLag: gauge("floe_pipeline_end_to_end_lag_seconds",
			"Largest lag of the source tables upstream of an output, through chains of transforms.", "transform", "output"),
		Freshness: gauge("floe_pipeline_freshness",
			"Freshness of an output against its transform's targets: 0 ok, 1 warn, 2 error, -1 unknown.", "transform", "output"),
		LastSuccess: gauge("floe_pipeline_last_success_timestamp_seconds",
			"Unix time at which the last successful run of the transform started.", "transform"),
		StatusTime: prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_pipeline_status_timestamp_seconds",
			Help: "Unix time of the last status sample of the pipeline."}),
		StatusUp: prometheus.NewGauge(prometheus.GaugeOpts{Name: "floe_pipeline_catalog_up",
			Help: "1 when the catalog answered the last status sample, 0 when it did not."}),
	}
	if reg != nil {
		reg.MustRegister(m.Builds, m.EngineBuilds, m.LastBuildInfo, m.BuildDuration, m.RowsAdded, m.RowsRemoved, m.BytesRead, m.BytesWritten,
			m.CommitRetries, m.CommitConflicts, m.CommitUnknown, m.CommitAnswerLost, m.SnapshotsBehind, m.RowsBehind, m.InputLag,
			m.OutputLag, m.Freshness, m.LastSuccess, m.StatusTime, m.StatusUp)
	}
	return m
}

// Observe records one run of s.
func (m *Metrics) Observe(s *Step, o Outcome) {
	if m == nil {
		return
	}
	m.Builds.WithLabelValues(s.Name, o.Kind).Inc()
	if o.Kind == OutcomeBlocked {
		return
	}
	m.BuildDuration.WithLabelValues(s.Name).Observe(o.Duration.Seconds())
	if o.Kind == OutcomeSuperseded || errors.Is(o.Err, commit.ErrTooManyConflicts) {
		m.CommitConflicts.WithLabelValues(s.Name).Inc()
	}
	if errors.Is(o.Err, commit.ErrOutcomeUnknown) {
		m.CommitUnknown.WithLabelValues(s.Name).Inc()
	}
	if o.Failed() || o.Kind == OutcomeAborted {
		return
	}
	m.LastSuccess.WithLabelValues(s.Name).Set(float64(o.Started.UnixNano()) / 1e9)
	m.BytesRead.WithLabelValues(s.Name).Add(float64(o.BytesRead))
	m.BytesWritten.WithLabelValues(s.Name).Add(float64(o.BytesWritten))
	if o.Result == nil {
		return
	}
	if r := o.Result; !r.Skipped {
		engine := r.Engine
		if engine == "" {
			engine = "local"
		}
		m.EngineBuilds.WithLabelValues(s.Name, engine).Inc()
		m.LastBuildInfo.DeletePartialMatch(prometheus.Labels{"transform": s.Name})
		m.LastBuildInfo.WithLabelValues(s.Name, engine, r.SparkApp, r.SparkSession).Set(1)
	}
	for _, out := range o.Result.Outputs {
		if out.Attempts > 1 {
			m.CommitRetries.WithLabelValues(s.Name, out.Table).Add(float64(out.Attempts - 1))
		}
		if out.AnswerLost {
			m.CommitAnswerLost.WithLabelValues(s.Name, out.Table).Inc()
		}
		if !out.Committed {
			continue
		}
		m.RowsAdded.WithLabelValues(s.Name, out.Table).Add(float64(out.RowsAdded))
		m.RowsRemoved.WithLabelValues(s.Name, out.Table).Add(float64(out.RowsRemoved))
	}
}

// ObserveStatus sets the lag gauges of s from its status.
func (m *Metrics) ObserveStatus(s *Step, st []OutputStatus) {
	if m == nil {
		return
	}
	for _, o := range st {
		for _, in := range o.Inputs {
			setOpt(m.SnapshotsBehind.WithLabelValues(s.Name, in.Name), in.Behind)
			setOpt(m.RowsBehind.WithLabelValues(s.Name, in.Name), in.RowsBehind)
			setDur(m.InputLag.WithLabelValues(s.Name, in.Name), in.Lag)
		}
		lag := o.EndToEndLag
		if lag == nil {
			lag = o.Lag
		}
		setDur(m.OutputLag.WithLabelValues(s.Name, o.Output), lag)
		if o.Freshness != FreshNone {
			m.Freshness.WithLabelValues(s.Name, o.Output).Set(freshnessValue(o.Freshness))
		}
	}
}

// ObserveReport sets the gauges of every step of a status report.
func (m *Metrics) ObserveReport(p *Pipeline, rep *Report) {
	if m == nil {
		return
	}
	by := map[string][]OutputStatus{}
	for _, o := range rep.Outputs {
		by[o.Transform] = append(by[o.Transform], o)
	}
	for name, st := range by {
		if s := p.Step(name); s != nil {
			m.ObserveStatus(s, st)
		}
	}
	m.StatusTime.Set(float64(rep.At.UnixNano()) / 1e9)
	if rep.CatalogError == "" {
		m.StatusUp.Set(1)
	} else {
		m.StatusUp.Set(0)
	}
}

func freshnessValue(level string) float64 {
	switch level {
	case FreshOK:
		return 0
	case FreshWarn:
		return 1
	case FreshError:
		return 2
	}
	return -1
}

// setOpt sets g to *v; an unknown value (nil) removes nothing but sets
// NaN, so that a stale figure is not mistaken for a current one.
func setOpt(g prometheus.Gauge, v *int64) {
	if v == nil {
		g.Set(nan)
		return
	}
	g.Set(float64(*v))
}

var nan = math.NaN()

func setDur(g prometheus.Gauge, d *time.Duration) {
	if d == nil {
		g.Set(nan)
		return
	}
	g.Set(d.Seconds())
}
