package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/pushdown"
)

// InputStatus is one input of an output's status. Times are commit times
// as the writers of the input stamped them (Iceberg snapshots'
// timestamp-ms, Delta commits' timestamps).
type InputStatus struct {
	Name  string // the input's declared name
	Table string // its table (or Delta location)
	// Upstream is the transform of the pipeline that writes this input
	// ("" for a source table).
	Upstream string
	// Watermark is the last processed snapshot (or Delta version) recorded
	// in the output: an id, state.NoSnapshot, or "" when none.
	Watermark string
	// Head is the input's current snapshot id (or Delta version); "" when
	// it has none.
	Head string
	// HeadAt is the commit time of Head; WatermarkAt that of Watermark
	// (zero when there is none or it is not known any more).
	HeadAt, WatermarkAt time.Time
	// PendingSince is the earliest commit time of the input's snapshots
	// after the watermark (zero when the output is up to date): the time
	// the oldest change missing from the output has waited since.
	PendingSince time.Time
	// Lag is how long that change has waited: the status's time minus
	// PendingSince, 0 when the output is up to date; nil when unknown.
	Lag *time.Duration
	// Behind is how many snapshots (or Delta versions) of the input came
	// after the watermark (all retained ones without a watermark); nil when
	// unknown (the watermark is no longer in the input's history).
	Behind *int64
	// RowsBehind is how many rows those snapshots add or remove, from their
	// summaries (no data is read; a copy-on-write rewrite counts the rows
	// it rewrote); nil when a summary does not say, and for Delta inputs.
	RowsBehind *int64
	// Missing is true when the input table does not exist; Unreadable
	// when it (or the catalog) could not be read.
	Missing, Unreadable bool
}

// OutputStatus is the state of one output of one transform.
type OutputStatus struct {
	Transform string // the step's name
	Type      string // the step's type
	Output    string // the output table
	Exists    bool   // whether the output table exists
	// SnapshotID, BuiltAt and BuiltBy describe the output's current
	// snapshot (the last build that changed its rows): its id, commit time
	// and the floe.transform.name of its summary. Zero when none.
	SnapshotID int64
	BuiltAt    time.Time
	BuiltBy    string
	// BuiltWith is the engine that wrote that snapshot (floe.engine:
	// local or spark; "" for snapshots of older floes or other writers),
	// BuiltSession and BuiltApp the Spark session and application of a
	// Spark build.
	BuiltWith, BuiltSession, BuiltApp string
	// Inputs are the step's inputs, in declaration order.
	Inputs []InputStatus
	// Behind and RowsBehind are the sums of the inputs'; nil when one is
	// unknown.
	Behind, RowsBehind *int64
	// Lag is the largest lag of the inputs; nil when one is unknown.
	Lag *time.Duration
	// EndToEndLag is the largest lag of the source tables upstream of the
	// output, through the chain of transforms that feed its inputs: an
	// output is as stale as the stalest source it depends on. It is read
	// from the floe.source.* summaries of the intermediate outputs (see
	// package transform); nil when unknown.
	EndToEndLag *time.Duration
	// Stalest is the source table EndToEndLag comes from.
	Stalest string
	// WarnAfter and ErrorAfter are the transform's freshness targets;
	// Freshness the level EndToEndLag reaches (FreshNone without targets).
	WarnAfter, ErrorAfter time.Duration
	Freshness             string
	// Note says what the next build will do when it is not incremental,
	// or why the status is incomplete.
	Note string
	// Run is the transform's run history (nil when never run with one).
	Run *RunSummary
}

// Report is the status of a pipeline at one time.
type Report struct {
	Pipeline string    // the pipeline's name
	At       time.Time // when it was read (the time lags are measured at)
	Outputs  []OutputStatus
	// CatalogError is set when the catalog could not be reached or failed
	// on a table that exists (the figures that need it are unknown).
	CatalogError string
	// History is the run history read (nil without one); its Warnings say
	// what was wrong with the history file, if anything.
	History *HistoryData
}

// Status reports the state of every output of the steps (every step of p
// when steps is nil), with the run history of History when set. It reads
// metadata only. Problems with one output (a missing input, an unreadable
// table) are reported in its Note; the error is for a history file that
// cannot be read at all.
func (r *Runner) Status(ctx context.Context, p *Pipeline, steps []*Step) ([]OutputStatus, error) {
	rep, err := r.Report(ctx, p, steps)
	if err != nil {
		return nil, err
	}
	return rep.Outputs, nil
}

// Report is Status with what else a status page shows: the time, the
// catalog's state and the run history.
func (r *Runner) Report(ctx context.Context, p *Pipeline, steps []*Step) (*Report, error) {
	if steps == nil {
		steps = p.Steps
	}
	rep := &Report{Pipeline: p.Name}
	if r.History != nil {
		h, err := r.History.Read()
		if err != nil {
			return nil, err
		}
		rep.History = h
	}
	sr := r.newStatusReader(ctx, p)
	rep.At = sr.now
	sums := rep.History.Summaries()
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		st := sr.stepStatus(s)
		for i := range st {
			if sum, ok := sums[s.Name]; ok {
				st[i].Run = &sum
				if s.Definition != "" && sum.Definition != "" && sum.Definition != s.Definition {
					st[i].Note = joinNotes(st[i].Note, "the transform's definition changed since its last recorded run")
				}
			}
		}
		rep.Outputs = append(rep.Outputs, st...)
	}
	if sr.catalogErr != nil {
		rep.CatalogError = sr.catalogErr.Error()
	}
	return rep, nil
}

func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// now is the time of the runner's clock.
func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now().UTC()
	}
	return time.Now().UTC()
}

// statusReader reads the status of steps at one time, loading each table
// once.
type statusReader struct {
	ctx        context.Context
	r          *Runner
	p          *Pipeline // nil: no chains known
	now        time.Time
	tables     map[string]loaded
	deltas     map[string]*deltaLoaded
	steps      map[string][]OutputStatus
	catalogErr error
}

type loaded struct {
	tbl *table.Table
	err error
}

type deltaLoaded struct {
	tbl    *delta.Table
	latest int64
	err    error
	times  map[int64]time.Time
}

func (r *Runner) newStatusReader(ctx context.Context, p *Pipeline) *statusReader {
	return &statusReader{ctx: ctx, r: r, p: p, now: r.now(), tables: map[string]loaded{},
		deltas: map[string]*deltaLoaded{}, steps: map[string][]OutputStatus{}}
}

// load loads a table once per status.
func (sr *statusReader) load(name string) (*table.Table, error) {
	key := tableKey(name)
	if l, ok := sr.tables[key]; ok {
		return l.tbl, l.err
	}
	var l loaded
	if sr.r.Catalog == nil {
		l.err = errors.New("the catalog is not reachable")
	} else {
		l.tbl, l.err = sr.r.Catalog.LoadTable(sr.ctx, name)
	}
	if l.err != nil && !missing(l.err) && sr.catalogErr == nil && sr.ctx.Err() == nil {
		sr.catalogErr = l.err
	}
	sr.tables[key] = l
	return l.tbl, l.err
}

func missing(err error) bool {
	return errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace)
}

// writer returns the step of the pipeline that writes table name, or nil.
func (sr *statusReader) writer(name string) *Step {
	if sr.p == nil {
		return nil
	}
	key := tableKey(name)
	for _, s := range sr.p.Steps {
		for _, d := range s.Destinations {
			if tableKey(d) == key {
				return s
			}
		}
	}
	return nil
}

// stepStatus reads the status of s's outputs (once per status).
func (sr *statusReader) stepStatus(s *Step) []OutputStatus {
	if st, ok := sr.steps[s.Name]; ok {
		return st
	}
	sr.steps[s.Name] = nil // a cycle guard; pipelines have none
	var st []OutputStatus
	if s.Delta != nil {
		st = []OutputStatus{sr.deltaStatus(s)}
	} else if s.Transform != nil {
		for _, spec := range s.Transform.Outputs {
			st = append(st, sr.outputStatus(s, spec))
		}
	}
	for i := range st {
		o := &st[i]
		o.WarnAfter, o.ErrorAfter = s.WarnAfter, s.ErrorAfter
		lag := o.EndToEndLag
		if lag == nil {
			lag = o.Lag
		}
		o.Freshness = Level(lag, s.WarnAfter, s.ErrorAfter)
	}
	sr.steps[s.Name] = st
	return st
}

// outputStatus reads the status of one output of a transform step.
func (sr *statusReader) outputStatus(s *Step, spec transform.OutputSpec) OutputStatus {
	t := s.Transform
	os := OutputStatus{Transform: s.Name, Type: s.Type, Output: spec.Table}
	var notes []string
	tbl, err := sr.load(spec.Table)
	var prev state.Build
	ok := false
	var head *table.Snapshot
	switch {
	case err != nil && missing(err):
		notes = append(notes, "missing: the next build creates it")
	case err != nil:
		notes = append(notes, err.Error())
	default:
		os.Exists = true
		head = describeHead(&os, tbl, spec.Branch)
		prev, ok = state.Read(tbl.Properties())
		if !ok {
			notes = append(notes, "no watermark: the next build is a full rebuild")
		} else if prev.Transform != "" && prev.Transform != t.Name {
			notes = append(notes, fmt.Sprintf("built by transform %q: the next build is a full rebuild", prev.Transform))
		} else if prev.Transform != "" && prev.SemanticVersion != t.SemanticVersion {
			notes = append(notes, "the semantic version or options changed: the next build is a full rebuild")
		}
	}
	byName := map[string]state.InputState{}
	for _, in := range prev.Inputs {
		byName[in.Name] = in
	}
	if prev.Transform == "" && len(prev.Inputs) == 1 && len(t.Inputs) == 1 {
		byName = map[string]state.InputState{t.Inputs[0].Name: prev.Inputs[0]}
	}
	behind, rows, lag := sum{known: true}, sum{known: true}, lagMax{known: true}
	for _, in := range t.Inputs {
		is := InputStatus{Name: in.Name, Table: in.Table}
		if w := sr.writer(in.Table); w != nil {
			is.Upstream = w.Name
		}
		wm, has := byName[in.Name]
		if has {
			is.Watermark = wm.Snapshot
		}
		hint := summaryTime(head, in.Name, is.Watermark)
		var f figures
		if in.Delta != "" {
			// A Delta input of a sql step: its watermark is a Delta version.
			f = sr.deltaFigures(in.Delta, is.Watermark)
		} else {
			f = sr.icebergFigures(in.Table, in.Branch, is.Watermark, hint)
		}
		f.fill(&is, in.Name, in.Table)
		if f.note != "" {
			notes = append(notes, f.note)
		}
		behind.add(is.Behind)
		rows.add(is.RowsBehind)
		lag.add(is.Lag, in.Table)
		os.Inputs = append(os.Inputs, is)
	}
	os.Behind, os.RowsBehind, os.Lag = behind.ptr(), rows.ptr(), lag.ptr()
	e2e, stalest, note := sr.endToEnd(s, os)
	os.EndToEndLag, os.Stalest = e2e, stalest
	if note != "" {
		notes = append(notes, note)
	}
	os.Note = strings.Join(notes, "; ")
	return os
}

// sum adds optional counts.
type sum struct {
	n     int64
	known bool
}

func (s *sum) add(v *int64) {
	if v == nil {
		s.known = false
		return
	}
	s.n += *v
}

func (s sum) ptr() *int64 {
	if !s.known {
		return nil
	}
	n := s.n
	return &n
}

// lagMax keeps the largest of optional lags and where it comes from.
type lagMax struct {
	d     time.Duration
	from  string
	known bool
	any   bool
}

func (m *lagMax) add(v *time.Duration, from string) {
	if v == nil {
		m.known = false
		return
	}
	if !m.any || *v > m.d {
		m.d, m.from = *v, from
	}
	m.any = true
}

func (m lagMax) ptr() *time.Duration {
	if !m.known || !m.any {
		if m.known {
			var zero time.Duration
			return &zero
		}
		return nil
	}
	d := m.d
	return &d
}

// describeHead fills the output's last build from its branch head.
func describeHead(os *OutputStatus, tbl *table.Table, branch string) *table.Snapshot {
	head, err := write.BranchHead(tbl, branch)
	if err != nil || head == nil {
		return nil
	}
	os.SnapshotID = head.SnapshotID
	os.BuiltAt = time.UnixMilli(head.TimestampMs).UTC()
	if head.Summary != nil {
		os.BuiltBy = head.Summary.Properties[state.PropTransform]
		os.BuiltWith = head.Summary.Properties[pushdown.SummaryEngine]
		os.BuiltSession = head.Summary.Properties[pushdown.SummarySession]
		os.BuiltApp = head.Summary.Properties[pushdown.SummaryApp]
		if os.BuiltApp == "" && os.BuiltWith == string(pushdown.Spark) {
			os.BuiltApp = head.Summary.Properties["spark.app.id"]
		}
	}
	return head
}

// summaryTime is the commit time of input snapshot wm that the output
// snapshot head's summary records (zero when it records another or none).
func summaryTime(head *table.Snapshot, input, wm string) time.Time {
	if head == nil || head.Summary == nil || wm == "" {
		return time.Time{}
	}
	props := head.Summary.Properties
	if props[transform.SourceSummaryKey(input, transform.SummarySourceSnapshotID)] != wm {
		return time.Time{}
	}
	t, _ := transform.ParseSummaryTime(props[transform.SourceSummaryKey(input, transform.SummarySourceCommittedAt)])
	return t
}

// figures are the lag figures of one table after a watermark.
type figures struct {
	missing      bool // the table does not exist
	unreadable   bool // it could not be read
	head         string
	headAt, wmAt time.Time
	pending      pending
	// known is false when the pending snapshots are not known (Behind and
	// Lag unknown); approx when they were judged by commit time.
	known, approx bool
	skewed        bool
	pendingLag    time.Duration
	note          string
}

func (f figures) fill(is *InputStatus, name, tbl string) {
	is.Head, is.HeadAt, is.WatermarkAt = f.head, f.headAt, f.wmAt
	is.Missing, is.Unreadable = f.missing, f.unreadable
	is.Lag = f.lagPtr()
	if !f.known {
		if f.approx {
			is.PendingSince = f.pending.Since
		}
		return
	}
	n := f.pending.Snapshots
	is.Behind = &n
	is.RowsBehind = f.pending.Rows
	is.PendingSince = f.pending.Since
}

// lagPtr is the lag, nil when unknown (also when judged by commit time,
// after a watermark that left the history, the lag is given).
func (f figures) lagPtr() *time.Duration {
	if !f.known && !f.approx {
		return nil
	}
	d := f.pendingLag
	return &d
}

// icebergFigures measures the Iceberg table name (on branch) after the
// watermark wm (an id, state.NoSnapshot, or "" for none: nothing of the
// table is reflected); hint is wm's commit time when known from elsewhere.
func (sr *statusReader) icebergFigures(name, branch, wm string, hint time.Time) (f figures) {
	defer func() { f.setLag(sr.now, name) }()
	tbl, err := sr.load(name)
	if err != nil {
		f.note = fmt.Sprintf("input %s: %v", name, err)
		f.missing, f.unreadable = missing(err), !missing(err)
		return f
	}
	head, err := write.BranchHead(tbl, branch)
	if err != nil {
		f.note = fmt.Sprintf("input %s: %v", name, err)
		return f
	}
	meta := tbl.Metadata()
	if head != nil {
		f.head = strconv.FormatInt(head.SnapshotID, 10)
		f.headAt = time.UnixMilli(head.TimestampMs).UTC()
	}
	if head == nil {
		f.known = true
		return f
	}
	if wm == "" || wm == state.NoSnapshot {
		f.known = true
		f.pending = pendingOf(snapsOf(state.Between(meta, head, nil)))
		return f
	}
	id, err := strconv.ParseInt(wm, 10, 64)
	if err != nil {
		f.note = fmt.Sprintf("input %s: unreadable watermark %q", name, wm)
		return f
	}
	if at, ok := commitTime(meta, id); ok {
		f.wmAt = at
	} else {
		f.wmAt = hint
	}
	if state.Reachable(meta, head, id) {
		f.known = true
		f.pending = pendingOf(snapsOf(state.Between(meta, head, &id)))
		return f
	}
	f.note = fmt.Sprintf("the watermark %d of input %s is no longer in the history of %s (rolled back or expired): the next build is a full rebuild", id, name, name)
	if !f.wmAt.IsZero() {
		// The snapshots committed after the watermark's time are pending.
		f.pending = pendingOf(pendingAfter(meta, head, f.wmAt))
		f.approx = true
	}
	return f
}

// setLag computes the lag of the pending snapshots at now.
func (f *figures) setLag(now time.Time, name string) {
	if !f.known && !f.approx {
		return
	}
	f.pendingLag, f.skewed = lagAt(f.pending.Since, now)
	if f.skewed {
		f.note = joinNotes(f.note, fmt.Sprintf("input %s has a commit stamped %s, after this status's time %s: the writers' clocks disagree; its lag counts as 0",
			name, f.pending.Since.Format(time.RFC3339), now.Format(time.RFC3339)))
	}
}

// deltaFigures measures the Delta table at path after version wm ("" for
// none).
func (sr *statusReader) deltaFigures(path, wm string) (f figures) {
	defer func() { f.setLag(sr.now, path) }()
	d := sr.delta(path)
	if d.err != nil {
		f.note = fmt.Sprintf("delta table %s: %v", path, d.err)
		f.unreadable = true
		return f
	}
	f.head = strconv.FormatInt(d.latest, 10)
	f.headAt, _ = sr.deltaTime(d, d.latest)
	from := int64(-1)
	if wm != "" {
		v, err := strconv.ParseInt(wm, 10, 64)
		if err != nil {
			f.note = fmt.Sprintf("delta table %s: unreadable watermark %q", path, wm)
			return f
		}
		from = v
		f.wmAt, _ = sr.deltaTime(d, v)
	}
	f.known = true
	f.pending.Snapshots = max(d.latest-from, 0)
	// NB: the earliest commit time among the pending versions, reading at
	// most maxDeltaScan commits (their times are in the commit files).
	var times []snap
	for v := from + 1; v <= d.latest && v <= from+maxDeltaScan; v++ {
		if at, ok := sr.deltaTime(d, v); ok {
			times = append(times, snap{ID: v, At: at})
		}
	}
	f.pending.Since = pendingOf(times).Since
	return f
}

// maxDeltaScan bounds the Delta commits read for one lag figure.
const maxDeltaScan = 64

func (sr *statusReader) delta(path string) *deltaLoaded {
	if d, ok := sr.deltas[path]; ok {
		return d
	}
	d := &deltaLoaded{times: map[int64]time.Time{}}
	d.tbl, d.err = delta.Open(sr.ctx, path)
	if d.err == nil {
		d.latest, d.err = d.tbl.LatestVersion(sr.ctx)
	}
	sr.deltas[path] = d
	return d
}

func (sr *statusReader) deltaTime(d *deltaLoaded, v int64) (time.Time, bool) {
	if t, ok := d.times[v]; ok {
		return t, !t.IsZero()
	}
	ci, err := d.tbl.CommitInfo(sr.ctx, v)
	var t time.Time
	if err == nil {
		t = ci.Timestamp.UTC()
	}
	d.times[v] = t
	return t, err == nil
}

// deltaStatus reads the status of a delta step's destination.
func (sr *statusReader) deltaStatus(s *Step) OutputStatus {
	os := OutputStatus{Transform: s.Name, Type: s.Type, Output: s.Delta.Dst}
	is := InputStatus{Name: "delta", Table: s.Delta.Path}
	var notes []string
	tbl, err := sr.load(s.Delta.Dst)
	switch {
	case err != nil && missing(err):
		notes = append(notes, "missing: the next build creates it")
	case err != nil:
		notes = append(notes, err.Error())
	default:
		os.Exists = true
		describeHead(&os, tbl, "")
		wm, ok := deltaWatermark(tbl.Properties())
		if !ok {
			notes = append(notes, "no watermark: the next build is a full rebuild")
			break
		}
		is.Watermark = strconv.FormatInt(wm, 10)
	}
	f := sr.deltaFigures(s.Delta.Path, is.Watermark)
	f.fill(&is, is.Name, s.Delta.Path)
	if f.note != "" {
		notes = append(notes, f.note)
	}
	os.Inputs = []InputStatus{is}
	os.Behind, os.RowsBehind, os.Lag = is.Behind, nil, is.Lag
	os.EndToEndLag, os.Stalest = is.Lag, s.Delta.Path
	os.Note = strings.Join(notes, "; ")
	return os
}

// source is a source table (one no step of the pipeline writes) as some
// output reflects it.
type source struct {
	table, branch string
	delta         bool
	snap          string // snapshot id or Delta version; state.NoSnapshot or "" for nothing of it
}

// endToEnd computes the lag of output os of s from the source tables
// upstream of it. For inputs that are source tables it is their own lag;
// for an input written by another step, the output's watermark on it names
// a snapshot of that step's output, whose summary (or, for its head, its
// watermarks) names the snapshots it reflects of that step's inputs, and
// so on up to the sources. When a link is missing (an output written by an
// older floe, an expired snapshot), it falls back to the largest of the
// output's own lag and the end-to-end lags of the upstream outputs.
func (sr *statusReader) endToEnd(s *Step, os OutputStatus) (*time.Duration, string, string) {
	var srcs []source
	chained, complete := false, true
	for i, in := range s.Transform.Inputs {
		is := os.Inputs[i]
		if in.Delta != "" {
			srcs = append(srcs, source{table: in.Delta, delta: true, snap: is.Watermark})
			continue
		}
		if is.Upstream == "" {
			srcs = append(srcs, source{table: in.Table, branch: in.Branch, snap: is.Watermark})
			continue
		}
		chained = true
		up, ok := sr.sourcesOf(in.Table, in.Branch, is.Watermark, 0)
		if !ok {
			complete = false
			break
		}
		srcs = append(srcs, up...)
	}
	if !chained {
		return os.Lag, stalestInput(os), ""
	}
	if complete {
		m := lagMax{known: true}
		for _, src := range srcs {
			var f figures
			if src.delta {
				f = sr.deltaFigures(src.table, src.snap)
			} else {
				f = sr.icebergFigures(src.table, src.branch, src.snap, time.Time{})
			}
			m.add(f.lagPtr(), src.table)
		}
		if own := os.Lag; own != nil {
			m.add(own, stalestInput(os))
		}
		if p := m.ptr(); p != nil {
			return p, m.from, ""
		}
	}
	// Fallback: the stalest of the output's own lag and the upstream
	// outputs' end-to-end lags.
	m := lagMax{known: true}
	m.add(os.Lag, stalestInput(os))
	for _, is := range os.Inputs {
		if is.Upstream == "" {
			continue
		}
		w := sr.p.Step(is.Upstream)
		for _, uo := range sr.stepStatus(w) {
			if tableKey(uo.Output) == tableKey(is.Table) {
				lag := uo.EndToEndLag
				if lag == nil {
					lag = uo.Lag
				}
				m.add(lag, uo.Stalest)
			}
		}
	}
	if p := m.ptr(); p != nil {
		return p, m.from, "end-to-end lag estimated from the upstream outputs' (a snapshot summary upstream does not say what it reflects)"
	}
	return nil, "", ""
}

// stalestInput names the input with the largest lag.
func stalestInput(os OutputStatus) string {
	best, from := time.Duration(-1), ""
	for _, in := range os.Inputs {
		if in.Lag != nil && *in.Lag > best {
			best, from = *in.Lag, in.Table
		}
	}
	return from
}

// sourcesOf returns the source tables upstream of table name (read on
// branch) as its snapshot snap (an id, state.NoSnapshot or "" for none)
// reflects them. ok is false when a link of the chain is not known.
func (sr *statusReader) sourcesOf(name, branch, snap string, depth int) ([]source, bool) {
	w := sr.writer(name)
	if w == nil {
		return []source{{table: name, branch: branch, snap: snap}}, true
	}
	if depth > len(sr.p.Steps) {
		return nil, false
	}
	nothing := snap == "" || snap == state.NoSnapshot
	var props map[string]string
	head := false
	if !nothing {
		var ok bool
		if props, head, ok = sr.reflected(name, snap); !ok {
			return nil, false
		}
	}
	if w.Delta != nil {
		if nothing {
			return []source{{table: w.Delta.Path, delta: true}}, true
		}
		v, ok := deltaWatermark(props)
		if !ok {
			return nil, false
		}
		return []source{{table: w.Delta.Path, delta: true, snap: strconv.FormatInt(v, 10)}}, true
	}
	at := map[string]string{}
	switch {
	case nothing:
	case head:
		// The table's head reflects the inputs up to its current
		// watermarks: builds after it that changed no rows committed
		// their watermarks without a snapshot.
		if st, ok := state.Read(props); ok {
			for _, in := range st.Inputs {
				at[in.Name] = in.Snapshot
			}
			if st.Transform == "" && len(st.Inputs) == 1 && len(w.Transform.Inputs) == 1 {
				at[w.Transform.Inputs[0].Name] = st.Inputs[0].Snapshot
			}
		}
	default:
		for _, in := range w.Transform.Inputs {
			if v, ok := props[transform.SourceSummaryKey(in.Name, transform.SummarySourceSnapshotID)]; ok {
				at[in.Name] = v
			}
		}
	}
	var out []source
	for _, in := range w.Transform.Inputs {
		v, ok := at[in.Name]
		if !ok && !nothing {
			return nil, false
		}
		if in.Delta != "" {
			out = append(out, source{table: in.Delta, delta: true, snap: v})
			continue
		}
		up, ok := sr.sourcesOf(in.Table, in.Branch, v, depth+1)
		if !ok {
			return nil, false
		}
		out = append(out, up...)
	}
	return out, true
}

// reflected returns what snapshot snap of table name reflects: its
// summary, or the table's properties when snap is the table's head (head
// true).
func (sr *statusReader) reflected(name, snap string) (props map[string]string, head, ok bool) {
	tbl, err := sr.load(name)
	if err != nil {
		return nil, false, false
	}
	id, err := strconv.ParseInt(snap, 10, 64)
	if err != nil {
		return nil, false, false
	}
	if cur, _ := write.BranchHead(tbl, ""); cur != nil && cur.SnapshotID == id {
		return tbl.Properties(), true, true
	}
	s := tbl.Metadata().SnapshotByID(id)
	if s == nil || s.Summary == nil {
		return nil, false, false
	}
	return s.Summary.Properties, false, true
}
