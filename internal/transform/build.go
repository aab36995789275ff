package transform

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/tableops"
)

// Runner builds transforms against a catalog.
type Runner struct {
	Catalog *catalog.Catalog
	// Logger receives one line per build decision and commit (default: slog.Default()).
	Logger *slog.Logger
	// Full forces full rebuilds.
	Full bool
	// EngineSettings choose the engine of each build (default: local);
	// Engine is the remote engine builds chosen for Spark run on (see
	// package pushdown).
	EngineSettings pushdown.Settings
	Engine         pushdown.Engine
}

// Result describes one build.
type Result struct {
	Transform   string
	Incremental bool
	Reason      string // why the build is not incremental ("" when it is)
	Skipped     bool   // nothing new since the last build: nothing was computed or committed
	Inputs      []InputRange
	Outputs     []OutputResult
	Started     time.Time
	Duration    time.Duration
	// Engine is the engine that ran the build (local or spark) and
	// EngineReason why it was chosen ("" when it was the default).
	Engine       string `json:",omitempty"`
	EngineReason string `json:",omitempty"`
	// Remote, SparkSession and SparkApp name the Spark Connect server,
	// session and application of a build Spark ran.
	Remote       string `json:",omitempty"`
	SparkSession string `json:",omitempty"`
	SparkApp     string `json:",omitempty"`
}

// InputRange is the range of one input a build processed.
type InputRange struct {
	Name, Table string
	Start       string // the watermark it started from ("" on a full build, NONE for an empty input)
	End         string // the snapshot it read up to (NONE for an empty input)
	Snapshots   int    // snapshots in range
}

type build struct {
	ctx         context.Context
	r           *Runner
	t           *Transform
	log         *slog.Logger
	inputs      map[string]*Input
	outputs     map[string]*Output
	incremental bool
	reason      string
	next        state.Build
	engine      pushdown.Decision
	extra       map[string]string // snapshot summary entries set by compute (SetSummary)
}

// Build runs one build of t: it decides whether the build can be
// incremental, skips it when nothing changed, runs compute and commits
// every output once with the new watermarks. Errors leave each output
// either unchanged or committed with watermarks that match its data.
func (r *Runner) Build(ctx context.Context, t *Transform) (*Result, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	log := r.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("transform", t.Name)
	// NB: manifests are immutable: the steps of one build (the net
	// changes of each input load the states before and after every
	// change, nearly the same manifests) decode each one once, and the
	// next build of t in this process starts from what this one read
	// (manifestStore).
	mc := takeManifests(t.Name)
	defer keepManifests(t.Name, mc)
	ctx = scan.WithManifestCache(ctx, mc)
	b := &build{ctx: ctx, r: r, t: t, log: log, inputs: map[string]*Input{}, outputs: map[string]*Output{}}
	res := &Result{Transform: t.Name, Started: time.Now()}
	b.next = state.Build{Transform: t.Name, SemanticVersion: t.SemanticVersion}
	if err := b.openInputs(); err != nil {
		return nil, err
	}
	reason := ""
	if r.Full {
		reason = "a full rebuild was asked for"
	}
	reason, err := b.openOutputs(reason)
	if err != nil {
		return nil, err
	}
	b.decide(reason)
	res.Inputs = b.ranges()
	res.Incremental, res.Reason = b.incremental, b.reason
	if b.incremental && b.nothingNew() {
		res.Skipped = true
		res.Duration = time.Since(res.Started)
		log.Info("nothing new since the last build; nothing committed")
		return res, nil
	}
	if b.incremental {
		log.Info("incremental build", "inputs", describeRanges(res.Inputs))
	} else {
		log.Info("full rebuild", "reason", b.reason)
	}
	pushed, err := b.chooseEngine(res)
	if err != nil {
		return nil, err
	}
	cctx := &Context{Context: ctx, b: b}
	if !pushed {
		if err := t.Compute(cctx); err != nil {
			return nil, fmt.Errorf("transform %s: %w", t.Name, err)
		}
	}
	// Compute may have turned the build into a full rebuild (Rebuild).
	res.Incremental, res.Reason = b.incremental, b.reason
	if res.Outputs, err = b.commitOutputs(); err != nil {
		return nil, err
	}
	res.Duration = time.Since(res.Started)
	return res, nil
}

// decide makes the build incremental when nothing gave a reason not to.
func (b *build) decide(reason string) {
	b.incremental = reason == ""
	b.reason = reason
	for _, in := range b.inputs {
		in.incremental = b.incremental
	}
}

// ranges are the input ranges the build reads: from each watermark
// (exclusive) to the pinned head when incremental, the head alone when not.
func (b *build) ranges() []InputRange {
	var out []InputRange
	for _, in := range b.next.Inputs {
		rng := InputRange{Name: in.Name, Table: in.Table, End: in.Snapshot}
		if i := b.inputs[in.Name]; b.incremental && i.delta != nil {
			rng.Start = state.NoSnapshot
			if i.start != nil {
				rng.Start = strconv.FormatInt(*i.start, 10)
				rng.Snapshots = int(max(i.delta.version-*i.start, 0))
			}
		} else if b.incremental {
			rng.Start = state.NoSnapshot
			if i.start != nil {
				rng.Start = strconv.FormatInt(*i.start, 10)
			}
			rng.Snapshots = len(state.Between(i.tbl.Metadata(), i.head, i.start))
		}
		out = append(out, rng)
	}
	return out
}

// commitOutputs commits every output once, in declaration order: what
// compute wrote, or the new watermarks alone for an output it did not
// write.
func (b *build) commitOutputs() ([]OutputResult, error) {
	var out []OutputResult
	for _, spec := range b.t.Outputs {
		o := b.outputs[spec.Name]
		if err := o.finish(b.ctx); err != nil {
			return nil, fmt.Errorf("transform %s: %w", b.t.Name, err)
		}
		if o.result.Committed && o.result.SnapshotID != 0 {
			o.autoCompact(b.ctx)
		}
		out = append(out, o.result)
		if o.result.Committed {
			b.log.Info("committed output", "output", o.spec.Table, "operation", o.result.Operation,
				"snapshot", o.result.SnapshotID, "rows_added", o.result.RowsAdded, "rows_removed", o.result.RowsRemoved)
		}
		if o.result.AnswerLost {
			b.log.Warn("the catalog's answer to the output's commit was lost; floe reloaded the table and found the commit: it landed once", "output", o.spec.Table)
		}
	}
	return out, nil
}

func describeRanges(rs []InputRange) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%s (%s..%s, %d snapshots)", r.Name, r.Start, r.End, r.Snapshots))
	}
	return strings.Join(parts, "; ")
}

func sameInputs(a, b state.Build) bool {
	if len(a.Inputs) != len(b.Inputs) {
		return false
	}
	for i := range a.Inputs {
		if a.Inputs[i] != b.Inputs[i] {
			return false
		}
	}
	return a.Transform == b.Transform && a.SemanticVersion == b.SemanticVersion
}

// compare decides whether the build can continue from prev; it returns
// the reason for a full rebuild, or "".
func (b *build) compare(prev state.Build) string {
	t := b.t
	if prev.Transform != "" && prev.Transform != t.Name {
		return fmt.Sprintf("the outputs were built by transform %q", prev.Transform)
	}
	if prev.Transform != "" && prev.SemanticVersion != t.SemanticVersion {
		return fmt.Sprintf("the semantic version changed from %d to %d", prev.SemanticVersion, t.SemanticVersion)
	}
	byName := map[string]state.InputState{}
	for _, in := range prev.Inputs {
		byName[in.Name] = in
	}
	if prev.Transform == "" && len(prev.Inputs) == 1 && len(t.Inputs) == 1 {
		// A watermark written by hand following the seeds: one input.
		byName = map[string]state.InputState{t.Inputs[0].Name: prev.Inputs[0]}
	} else if len(prev.Inputs) != len(t.Inputs) {
		return fmt.Sprintf("the inputs changed (were %d, now %d)", len(prev.Inputs), len(t.Inputs))
	}
	for _, cur := range b.next.Inputs {
		p, ok := byName[cur.Name]
		if !ok {
			return fmt.Sprintf("input %s is new", cur.Name)
		}
		if p.Table != "" && (p.Table != cur.Table || p.Branch != cur.Branch) {
			return fmt.Sprintf("input %s now reads %s (branch %q), it read %s (branch %q)", cur.Name, cur.Table, cur.Branch, p.Table, p.Branch)
		}
		if p.UUID != "" && p.UUID != cur.UUID {
			return fmt.Sprintf("input %s's table %s was replaced by another table", cur.Name, cur.Table)
		}
		in := b.inputs[cur.Name]
		if in.delta != nil {
			wm, ok := p.SnapshotID()
			switch {
			case !ok:
				return fmt.Sprintf("the watermark of input %s is unreadable (%q)", cur.Name, p.Snapshot)
			case wm > in.delta.version:
				return fmt.Sprintf("the watermark %d of input %s is after the Delta table's latest version %d", wm, cur.Name, in.delta.version)
			}
			// NB: whether the Change Data Feed covers the range is known
			// when it is read (DeltaChanges): the transform rebuilds then.
			in.start = &wm
			continue
		}
		if p.Snapshot == state.NoSnapshot {
			if in.head != nil {
				return fmt.Sprintf("input %s had no snapshot at the last build", cur.Name)
			}
			continue
		}
		wm, ok := p.SnapshotID()
		if !ok {
			return fmt.Sprintf("the watermark of input %s is unreadable (%q)", cur.Name, p.Snapshot)
		}
		if in.head == nil {
			return fmt.Sprintf("input %s has no snapshot any more (its watermark was %d)", cur.Name, wm)
		}
		meta := in.tbl.Metadata()
		if !state.Reachable(meta, in.head, wm) {
			return fmt.Sprintf("the watermark %d of input %s is no longer in the history of its branch (rolled back, rewritten or expired)", wm, cur.Name)
		}
		in.start = &wm
		if t.ReadMode == AppendOnly {
			for _, s := range state.Between(meta, in.head, &wm) {
				if s.Summary == nil {
					continue
				}
				switch s.Summary.Operation {
				case table.OpAppend, table.OpReplace:
				default:
					return fmt.Sprintf("input %s has snapshot %d (operation %s) since the last build; append-only transforms rebuild on overwrites and deletes", cur.Name, s.SnapshotID, s.Summary.Operation)
				}
			}
		}
	}
	return ""
}

// nothingNew reports whether every input's head is its watermark.
func (b *build) nothingNew() bool {
	for _, in := range b.inputs {
		if in.delta != nil {
			if in.start == nil || *in.start != in.delta.version {
				return false
			}
			continue
		}
		if in.head == nil {
			continue
		}
		if in.start == nil || *in.start != in.head.SnapshotID {
			return false
		}
	}
	return true
}

// conform converts rows to the output's schema with rowfile's rules.
func conform(ctx context.Context, name string, rows array.RecordReader, target *arrow.Schema) (iter.Seq2[arrow.RecordBatch, error], error) {
	r, err := rowfile.FromRecords(ctx, name, rows.Schema(), streamOf(rows), rowfile.ReadOptions{Target: target})
	if err != nil {
		return nil, err
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		defer r.Close()
		for rec, err := range r.All() {
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}, nil
}

// autoCompact compacts, in a second commit after the build's, the files of
// a merge-on-read output the build's snapshot touched that are over the
// output's compaction thresholds (tableops.CompactionPolicy). It never
// fails the build: an error is logged as a warning and recorded in the
// output's result.
func (o *Output) autoCompact(ctx context.Context) {
	t := tableops.Target{Catalog: o.b.r.Catalog, Ident: o.ident, Branch: o.spec.Branch}
	out, err := tableops.CompactWith(ctx, t, tableops.CompactOptions{Auto: true, MergeOnReadOnly: true, Snapshot: o.result.SnapshotID,
		SnapshotProperties: o.commitOptions().SnapshotProperties})
	if err != nil {
		o.result.CompactionError = err.Error()
		o.b.log.Warn("automatic compaction of the output failed; the build's commit stands", "output", o.spec.Table, "error", err.Error())
		return
	}
	if out.SnapshotID != 0 {
		o.result.CompactionSnapshotID = out.SnapshotID
		o.b.log.Info("compacted output", "output", o.spec.Table, "snapshot", out.SnapshotID, "rows_rewritten", out.RowsRemoved)
	}
}
