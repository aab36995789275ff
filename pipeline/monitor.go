package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/floedata/floe/catalog"
)

// DefaultMonitorEvery is how often a Monitor samples the status.
const DefaultMonitorEvery = 30 * time.Second

// Monitor samples the status of a pipeline on a schedule, without running
// builds: for a status page, for lag metrics that move between runs (and
// while a build is stuck), and for a readiness check. It reads metadata
// only. Its methods are safe for concurrent use.
type Monitor struct {
	// Pipeline is what is sampled. Required.
	Pipeline *Pipeline
	// Runner reads the status (its Catalog, History, Now and Pipeline).
	// When its Catalog is nil, Open is called at each sample until it
	// succeeds.
	Runner *Runner
	// Open opens the catalog (nil: Runner.Catalog is used as it is).
	Open func(ctx context.Context) (*catalog.Catalog, error)
	// Every is the time between samples (0 = DefaultMonitorEvery).
	Every time.Duration
	// Metrics, when not nil, gets the lag gauges of every sample.
	Metrics *Metrics
	// Logger gets a warning when the catalog stops or starts answering
	// (nil = slog.Default()).
	Logger *slog.Logger

	mu      sync.Mutex
	cat     *catalog.Catalog
	last    *Report
	sampled bool
	failing bool
}

// Run samples until ctx is cancelled; the first sample is taken at once.
func (m *Monitor) Run(ctx context.Context) {
	every := m.Every
	if every <= 0 {
		every = DefaultMonitorEvery
	}
	for {
		m.Sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// Sample reads the status now and keeps it as the last report.
func (m *Monitor) Sample(ctx context.Context) *Report {
	rep := m.read(ctx)
	m.mu.Lock()
	m.last, m.sampled = rep, true
	wasFailing := m.failing
	m.failing = rep.CatalogError != ""
	m.mu.Unlock()
	log := m.Logger
	if log == nil {
		log = slog.Default()
	}
	switch {
	case rep.CatalogError != "" && !wasFailing:
		log.Warn("status: the catalog does not answer", "error", rep.CatalogError)
	case rep.CatalogError == "" && wasFailing:
		log.Info("status: the catalog answers again")
	}
	if m.Metrics != nil {
		m.Metrics.ObserveReport(m.Pipeline, rep)
	}
	return rep
}

func (m *Monitor) read(ctx context.Context) *Report {
	r := Runner{}
	if m.Runner != nil {
		r = *m.Runner
	}
	if r.Pipeline == nil {
		r.Pipeline = m.Pipeline
	}
	var openErr error
	if r.Catalog == nil && m.Open != nil {
		m.mu.Lock()
		cat := m.cat
		m.mu.Unlock()
		if cat == nil {
			cat, openErr = m.Open(ctx)
			if openErr == nil {
				m.mu.Lock()
				m.cat = cat
				m.mu.Unlock()
			}
		}
		r.Catalog = cat
	}
	rep, err := r.Report(ctx, m.Pipeline, nil)
	if err != nil {
		// The history cannot be read: report without it.
		r.History = nil
		rep2, err2 := r.Report(ctx, m.Pipeline, nil)
		if err2 != nil {
			return &Report{Pipeline: m.Pipeline.Name, At: r.now(), CatalogError: err2.Error()}
		}
		rep = rep2
		rep.History = &HistoryData{Warnings: []string{err.Error()}}
	}
	if openErr != nil {
		rep.CatalogError = fmt.Sprintf("cannot open the catalog: %v", openErr)
	}
	return rep
}

// Last returns the last report (nil before the first sample).
func (m *Monitor) Last() *Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// Ready reports whether the last sample reached the catalog; why says
// what is wrong when not.
func (m *Monitor) Ready() (ready bool, why string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case !m.sampled:
		return false, "no status sampled yet"
	case m.last.CatalogError != "":
		return false, "catalog: " + m.last.CatalogError
	}
	return true, ""
}

// Close closes a catalog the monitor opened.
func (m *Monitor) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cat != nil {
		m.cat.Close()
		m.cat = nil
	}
}
