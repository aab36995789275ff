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
	"github.com/floedata/floe/state"
	"github.com/floedata/floe/write"
)

// InputStatus is one input of an output's status.
type InputStatus struct {
	Name  string // the input's declared name
	Table string // its table (or Delta location)
	// Watermark is the last processed snapshot (or Delta version) recorded
	// in the output: an id, state.NoSnapshot, or "" when none.
	Watermark string
	// Head is the input's current snapshot id (or Delta version); "" when
	// it has none.
	Head string
	// Behind is how many snapshots (or Delta versions) of the input came
	// after the watermark; nil when unknown (no watermark, or the watermark
	// is no longer in the input's history).
	Behind *int64
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
	// Inputs are the step's inputs, in declaration order.
	Inputs []InputStatus
	// Behind is the sum of the inputs' Behind; nil when one is unknown.
	Behind *int64
	// Note says what the next build will do when it is not incremental,
	// or why the status is incomplete.
	Note string
	// Run is the transform's run history (nil when never run with one).
	Run *RunRecord
}

// Status reports the state of every output of the steps (every step of p
// when steps is nil), with the run history of History when set. It reads
// metadata only. Problems with one output (a missing input, an unreadable
// table) are reported in its Note; the error is for a history file that
// cannot be read.
func (r *Runner) Status(ctx context.Context, p *Pipeline, steps []*Step) ([]OutputStatus, error) {
	if steps == nil {
		steps = p.Steps
	}
	var hist map[string]RunRecord
	if r.History != nil {
		h, err := r.History.Load()
		if err != nil {
			return nil, err
		}
		hist = h
	}
	var out []OutputStatus
	for _, s := range steps {
		st, err := r.stepStatus(ctx, s)
		if err != nil {
			return nil, err
		}
		for i := range st {
			if rec, ok := hist[s.Name]; ok {
				st[i].Run = &rec
			}
		}
		out = append(out, st...)
	}
	return out, nil
}

// stepStatus reads the status of s's outputs.
func (r *Runner) stepStatus(ctx context.Context, s *Step) ([]OutputStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.Delta != nil {
		return []OutputStatus{r.deltaStatus(ctx, s)}, nil
	}
	t := s.Transform
	var out []OutputStatus
	for _, spec := range t.Outputs {
		os := OutputStatus{Transform: s.Name, Type: s.Type, Output: spec.Table}
		var notes []string
		tbl, err := r.Catalog.LoadTable(ctx, spec.Table)
		if err != nil {
			if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
				os.Note = "missing: the next build creates it"
			} else {
				os.Note = err.Error()
			}
			out = append(out, os)
			continue
		}
		os.Exists = true
		describeHead(&os, tbl, spec.Branch)
		prev, ok := state.Read(tbl.Properties())
		if !ok {
			notes = append(notes, "no watermark: the next build is a full rebuild")
		} else {
			if prev.Transform != "" && prev.Transform != t.Name {
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
		total, known := int64(0), ok
		for _, in := range t.Inputs {
			is := InputStatus{Name: in.Name, Table: in.Table}
			wm, has := byName[in.Name]
			if has {
				is.Watermark = wm.Snapshot
			}
			note := inputLag(ctx, r.Catalog, in.Table, in.Branch, wm, has, &is)
			if note != "" {
				notes = append(notes, note)
			}
			if is.Behind == nil {
				known = false
			} else {
				total += *is.Behind
			}
			os.Inputs = append(os.Inputs, is)
		}
		if known {
			os.Behind = &total
		}
		os.Note = strings.Join(notes, "; ")
		out = append(out, os)
	}
	return out, nil
}

// describeHead fills the output's last build from its branch head.
func describeHead(os *OutputStatus, tbl *table.Table, branch string) {
	head, err := write.BranchHead(tbl, branch)
	if err != nil || head == nil {
		return
	}
	os.SnapshotID = head.SnapshotID
	os.BuiltAt = time.UnixMilli(head.TimestampMs).UTC()
	if head.Summary != nil {
		os.BuiltBy = head.Summary.Properties[state.PropTransform]
	}
}

// inputLag fills the head and lag of one input; it returns a note when the
// lag is unknown.
func inputLag(ctx context.Context, cat *catalog.Catalog, name, branch string, wm state.InputState, has bool, is *InputStatus) string {
	tbl, err := cat.LoadTable(ctx, name)
	if err != nil {
		return fmt.Sprintf("input %s: %v", is.Name, err)
	}
	head, err := write.BranchHead(tbl, branch)
	if err != nil {
		return fmt.Sprintf("input %s: %v", is.Name, err)
	}
	if head != nil {
		is.Head = strconv.FormatInt(head.SnapshotID, 10)
	}
	if !has {
		return ""
	}
	meta := tbl.Metadata()
	if wm.Snapshot == state.NoSnapshot {
		n := int64(len(state.Between(meta, head, nil)))
		is.Behind = &n
		return ""
	}
	id, ok := wm.SnapshotID()
	if !ok {
		return fmt.Sprintf("input %s: unreadable watermark %q", is.Name, wm.Snapshot)
	}
	if head == nil || !state.Reachable(meta, head, id) {
		return fmt.Sprintf("the watermark %d of input %s is no longer in the history of %s (rolled back or expired): the next build is a full rebuild", id, is.Name, name)
	}
	n := int64(len(state.Between(meta, head, &id)))
	is.Behind = &n
	return ""
}

// deltaStatus reads the status of a delta step's destination.
func (r *Runner) deltaStatus(ctx context.Context, s *Step) OutputStatus {
	os := OutputStatus{Transform: s.Name, Type: s.Type, Output: s.Delta.Dst}
	is := InputStatus{Name: "delta", Table: s.Delta.Path}
	var notes []string
	if dt, err := delta.Open(ctx, s.Delta.Path); err != nil {
		notes = append(notes, fmt.Sprintf("delta table %s: %v", s.Delta.Path, err))
	} else if v, err := dt.LatestVersion(ctx); err != nil {
		notes = append(notes, fmt.Sprintf("delta table %s: %v", s.Delta.Path, err))
	} else {
		is.Head = strconv.FormatInt(v, 10)
	}
	tbl, err := r.Catalog.LoadTable(ctx, s.Delta.Dst)
	switch {
	case err != nil && (errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace)):
		notes = append(notes, "missing: the next build creates it")
	case err != nil:
		notes = append(notes, err.Error())
	default:
		os.Exists = true
		describeHead(&os, tbl, "")
		syncer := DeltaSync
		if syncer == nil {
			notes = append(notes, "delta transforms are "+ErrNotAvailable.Error())
			break
		}
		wm, ok := syncer.Watermark(tbl.Properties())
		if !ok {
			notes = append(notes, "no watermark: the next build is a full rebuild")
			break
		}
		is.Watermark = strconv.FormatInt(wm, 10)
		if is.Head != "" {
			head, _ := strconv.ParseInt(is.Head, 10, 64)
			n := max(head-wm, 0)
			is.Behind = &n
			os.Behind = &n
		}
	}
	os.Inputs = []InputStatus{is}
	os.Note = strings.Join(notes, "; ")
	return os
}
