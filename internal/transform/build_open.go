package transform

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/write"
)

// openInputs loads every input and pins the head of its branch: the build
// reads up to it, and records it as the input's next watermark.
func (b *build) openInputs() error {
	for _, spec := range b.t.Inputs {
		if spec.Delta != "" {
			if err := b.openDeltaInput(spec); err != nil {
				return fmt.Errorf("transform %s: input %s: %w", b.t.Name, spec.Name, err)
			}
			continue
		}
		tbl, err := b.r.Catalog.LoadTable(b.ctx, spec.Table)
		if err != nil {
			return fmt.Errorf("transform %s: input %s: %w", b.t.Name, spec.Name, err)
		}
		head, err := write.BranchHead(tbl, spec.Branch)
		if err != nil {
			return fmt.Errorf("transform %s: input %s: %w", b.t.Name, spec.Name, err)
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
	return nil
}

// openDeltaInput opens a Delta input with its storage settings (its
// profile, else the catalog's, with its properties on top) and pins its latest version: the build reads up to it, and records it as
// the input's next watermark (with the table's metaData.id as its UUID, so
// that a table recreated at the location rebuilds).
func (b *build) openDeltaInput(spec InputSpec) error {
	props, err := catalog.SourceStorage(b.r.Catalog, "", spec.Storage, spec.StorageProperties)
	if err != nil {
		return fmt.Errorf("the Delta table %s: %w", spec.Delta, err)
	}
	tbl, err := delta.OpenLocation(b.ctx, spec.Delta, props)
	if err != nil {
		return fmt.Errorf("the Delta table %s: %w", spec.Delta, err)
	}
	snap, err := tbl.LatestSnapshot(b.ctx)
	if err != nil {
		return fmt.Errorf("the Delta table %s: %w", spec.Delta, err)
	}
	d := &deltaInput{tbl: tbl, snap: snap, version: snap.Version()}
	if ci, err := tbl.CommitInfo(b.ctx, d.version); err == nil {
		d.committed = ci.Timestamp
	}
	b.inputs[spec.Name] = &Input{spec: spec, b: b, delta: d}
	b.next.Inputs = append(b.next.Inputs, state.InputState{Name: spec.Name, Table: spec.Table,
		UUID: snap.Metadata().ID, Snapshot: strconv.FormatInt(d.version, 10)})
	return nil
}

// openOutputs loads every output (a missing one is created by its write)
// with the watermark properties its commit must find unchanged, and
// returns why the build cannot be incremental: reason if it is not empty,
// else a missing output or watermark, outputs built at different input
// snapshots, or what compare finds against the last build.
func (b *build) openOutputs(reason string) (string, error) {
	var prev *state.Build
	for _, spec := range b.t.Outputs {
		ident, err := catalog.ParseTableName(spec.Table)
		if err != nil {
			return "", fmt.Errorf("transform %s: output %s: %w", b.t.Name, spec.Name, err)
		}
		o := &Output{spec: spec, b: b, ident: ident, result: OutputResult{Name: spec.Name, Table: spec.Table}}
		b.outputs[spec.Name] = o
		tbl, err := b.r.Catalog.Load(b.ctx, ident)
		if err != nil {
			if !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
				return "", fmt.Errorf("transform %s: output %s: %w", b.t.Name, spec.Name, err)
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
	return reason, nil
}
