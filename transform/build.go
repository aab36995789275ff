package transform

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/rowfile"
	"github.com/floedata/floe/state"
	"github.com/floedata/floe/write"
)

// Runner builds transforms against a catalog.
type Runner struct {
	Catalog *catalog.Catalog
	// Logger receives one line per build decision and commit (default: slog.Default()).
	Logger *slog.Logger
	// Full forces full rebuilds.
	Full bool
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
	b := &build{ctx: ctx, r: r, t: t, log: log, inputs: map[string]*Input{}, outputs: map[string]*Output{}}
	res := &Result{Transform: t.Name, Started: time.Now()}
	b.next = state.Build{Transform: t.Name, SemanticVersion: t.SemanticVersion}
	for _, spec := range t.Inputs {
		tbl, err := r.Catalog.LoadTable(ctx, spec.Table)
		if err != nil {
			return nil, fmt.Errorf("transform %s: input %s: %w", t.Name, spec.Name, err)
		}
		head, err := write.BranchHead(tbl, spec.Branch)
		if err != nil {
			return nil, fmt.Errorf("transform %s: input %s: %w", t.Name, spec.Name, err)
		}
		b.inputs[spec.Name] = &Input{spec: spec, b: b, tbl: tbl, head: head}
		snap := state.NoSnapshot
		if head != nil {
			snap = strconv.FormatInt(head.SnapshotID, 10)
		}
		b.next.Inputs = append(b.next.Inputs, state.InputState{Name: spec.Name, Table: spec.Table,
			UUID: tbl.Metadata().TableUUID().String(), Branch: spec.Branch, Snapshot: snap})
	}
	sort.Slice(b.next.Inputs, func(i, j int) bool { return b.next.Inputs[i].Name < b.next.Inputs[j].Name })
	var prev *state.Build
	reason := ""
	if r.Full {
		reason = "a full rebuild was asked for"
	}
	for _, spec := range t.Outputs {
		ident, err := catalog.ParseTableName(spec.Table)
		if err != nil {
			return nil, fmt.Errorf("transform %s: output %s: %w", t.Name, spec.Name, err)
		}
		o := &Output{spec: spec, b: b, ident: ident, result: OutputResult{Name: spec.Name, Table: spec.Table}}
		b.outputs[spec.Name] = o
		tbl, err := r.Catalog.Load(ctx, ident)
		if err != nil {
			if !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
				return nil, fmt.Errorf("transform %s: output %s: %w", t.Name, spec.Name, err)
			}
			if reason == "" {
				reason = fmt.Sprintf("output %s does not exist", spec.Table)
			}
			// NB: the watermark keys must still be absent when this build
			// commits: another build that created the output first wins.
			o.expect = state.Expect(nil, b.next.Keys())
			continue
		}
		o.tbl = tbl
		o.expect = state.Expect(tbl.Properties(), b.next.Keys())
		st, ok := state.Read(tbl.Properties())
		switch {
		case reason != "":
		case !ok:
			reason = fmt.Sprintf("output %s has no watermark", spec.Table)
		case prev != nil && !sameInputs(*prev, st):
			reason = fmt.Sprintf("outputs were last built at different input snapshots (an earlier build stopped between outputs; %s differs)", spec.Table)
		default:
			prev = &st
		}
	}
	if reason == "" && prev != nil {
		reason = b.compare(*prev)
	}
	b.incremental = reason == ""
	b.reason = reason
	for _, in := range b.inputs {
		in.incremental = b.incremental
	}
	for _, in := range b.next.Inputs {
		rng := InputRange{Name: in.Name, Table: in.Table, End: in.Snapshot}
		if b.incremental {
			i := b.inputs[in.Name]
			rng.Start = state.NoSnapshot
			if i.start != nil {
				rng.Start = strconv.FormatInt(*i.start, 10)
			}
			rng.Snapshots = len(state.Between(i.tbl.Metadata(), i.head, i.start))
		}
		res.Inputs = append(res.Inputs, rng)
	}
	res.Incremental, res.Reason = b.incremental, reason
	if b.incremental && b.nothingNew() {
		res.Skipped = true
		res.Duration = time.Since(res.Started)
		log.Info("nothing new since the last build; nothing committed")
		return res, nil
	}
	if b.incremental {
		log.Info("incremental build", "inputs", describeRanges(res.Inputs))
	} else {
		log.Info("full rebuild", "reason", reason)
	}
	cctx := &Context{Context: ctx, b: b}
	if err := t.Compute(cctx); err != nil {
		return nil, fmt.Errorf("transform %s: %w", t.Name, err)
	}
	// Compute may have turned the build into a full rebuild (Rebuild).
	res.Incremental, res.Reason = b.incremental, b.reason
	for _, spec := range t.Outputs {
		o := b.outputs[spec.Name]
		if err := o.finish(ctx); err != nil {
			return nil, fmt.Errorf("transform %s: %w", t.Name, err)
		}
		res.Outputs = append(res.Outputs, o.result)
		if o.result.Committed {
			log.Info("committed output", "output", o.spec.Table, "operation", o.result.Operation,
				"snapshot", o.result.SnapshotID, "rows_added", o.result.RowsAdded, "rows_removed", o.result.RowsRemoved)
		}
	}
	res.Duration = time.Since(res.Started)
	return res, nil
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
