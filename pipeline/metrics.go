package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus metrics of pipeline runs. Build them with
// NewMetrics; the zero value is not usable. Methods are safe for
// concurrent use and do nothing on a nil *Metrics.
type Metrics struct {
	// Builds counts runs by transform and outcome (incremental, full,
	// skipped, error, blocked, aborted).
	Builds *prometheus.CounterVec
	// BuildDuration observes the duration of runs that ran (not blocked).
	BuildDuration *prometheus.HistogramVec
	// RowsAdded counts the rows added to each output.
	RowsAdded *prometheus.CounterVec
	// RowsRemoved counts the rows removed from each output.
	RowsRemoved *prometheus.CounterVec
	// SnapshotsBehind is, per transform and input, how many snapshots of the
	// input the transform has not processed yet, measured after each run.
	SnapshotsBehind *prometheus.GaugeVec
	// LastSuccess is the Unix time of each transform's last successful run.
	LastSuccess *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (when not
// nil), as Prometheus' tsdb does. Registering twice with one registry
// panics, as prometheus.MustRegister does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Builds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_pipeline_builds_total",
			Help: "Runs of pipeline transforms by outcome (incremental, full, skipped, error, blocked, aborted).",
		}, []string{"transform", "outcome"}),
		BuildDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "floe_pipeline_build_duration_seconds",
			Help:    "Duration of runs of pipeline transforms.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 150, 300, 600, 1800},
		}, []string{"transform"}),
		RowsAdded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_pipeline_rows_added_total",
			Help: "Rows committed to outputs of pipeline transforms.",
		}, []string{"transform", "output"}),
		RowsRemoved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_pipeline_rows_removed_total",
			Help: "Rows removed from outputs of pipeline transforms.",
		}, []string{"transform", "output"}),
		SnapshotsBehind: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_pipeline_snapshots_behind",
			Help: "Snapshots of an input committed after the watermark of the transform's output, measured after each run.",
		}, []string{"transform", "input"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "floe_pipeline_last_success_timestamp_seconds",
			Help: "Unix time at which the last successful run of the transform started.",
		}, []string{"transform"}),
	}
	if reg != nil {
		reg.MustRegister(m.Builds, m.BuildDuration, m.RowsAdded, m.RowsRemoved, m.SnapshotsBehind, m.LastSuccess)
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
	if o.Failed() || o.Kind == OutcomeAborted {
		return
	}
	m.LastSuccess.WithLabelValues(s.Name).Set(float64(o.Started.UnixNano()) / 1e9)
	if o.Result == nil {
		return
	}
	for _, out := range o.Result.Outputs {
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
			if in.Behind != nil {
				m.SnapshotsBehind.WithLabelValues(s.Name, in.Name).Set(float64(*in.Behind))
			}
		}
	}
}
