package tableops

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/state"
)

// ExpireOptions configure ExpireSnapshots, as Spark's expire_snapshots
// procedure and PyIceberg's expire_snapshots take them.
type ExpireOptions struct {
	// OlderThan expires snapshots committed before this time (zero: the
	// table's history.expire.max-snapshot-age-ms, by default 5 days ago).
	OlderThan time.Time
	// RetainLast keeps at least this many ancestors of each branch head
	// whatever their age (0: the table's history.expire.min-snapshots-to-keep,
	// by default 1).
	RetainLast int
	// Force expires snapshots that watermarks of known outputs still need
	// (their next builds then rebuild in full).
	Force bool
	// DryRun computes and reports, and commits nothing.
	DryRun bool
}

// Hold is a watermark of another table (an output floe built) on this
// table: the snapshots its next incremental build reads.
type Hold struct {
	Output    string  // the output table holding the watermark
	Transform string  // the transform that wrote it ("" for a bare watermark)
	Input     string  // the transform's input name
	Watermark string  // the snapshot id, or state.NoSnapshot
	Needs     []int64 // snapshots of this table the next build reads, oldest first
}

func (h Hold) String() string {
	s := h.Output
	if h.Transform != "" {
		s += fmt.Sprintf(" (transform %q)", h.Transform)
	}
	return s + " at watermark " + h.Watermark
}

// ExpireOutcome says what ExpireSnapshots did (or would do, on a dry run).
type ExpireOutcome struct {
	Expired []int64 // snapshots removed, oldest first
	// Kept are snapshots that would have expired but that a watermark
	// needs, kept because Force was off; KeptFor says which watermarks.
	Kept    []int64
	KeptFor []Hold
	// Forced lists the watermarks whose snapshots were expired anyway.
	Forced      []Hold
	RefsRemoved []string // tags and branches past their max-ref-age
	// FilesKept reports that the expired snapshots' files were left in
	// place: the table was registered with a path root, so its files belong
	// to whoever wrote them.
	FilesKept bool
	Table     *table.Table
}

// ExpireSnapshots removes old snapshots as Iceberg's expire-snapshots does
// (iceberg-go's ExpireSnapshots decides which: not referenced by a branch
// or tag, older than OlderThan, beyond RetainLast per branch), then deletes
// the files only they referenced. A snapshot that a watermark of a known
// output needs (the outputs floe built from this table, found by their
// watermark properties in the same catalog) is kept unless Force, and the
// outcome says which output holds it.
func ExpireSnapshots(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o ExpireOptions) (*ExpireOutcome, error) {
	name := catalog.FormatName(ident)
	if o.RetainLast < 0 {
		return nil, fmt.Errorf("expire snapshots of %s: --retain-last must be at least 1", name)
	}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	var opts []table.ExpireSnapshotsOpt
	if !o.OlderThan.IsZero() {
		age := time.Since(o.OlderThan)
		if age < 0 {
			age = 0
		}
		opts = append(opts, table.WithOlderThan(age))
	}
	if o.RetainLast > 0 {
		opts = append(opts, table.WithRetainLast(o.RetainLast))
	}
	probe := tbl.NewTransaction()
	if err := probe.ExpireSnapshots(append(opts, table.WithPostCommit(false))...); err != nil {
		return nil, fmt.Errorf("expire snapshots of %s: %w", name, err)
	}
	staged, err := probe.StagedTable()
	if err != nil {
		return nil, fmt.Errorf("expire snapshots of %s: %w", name, err)
	}
	out := &ExpireOutcome{Table: tbl}
	for n := range tbl.Metadata().Refs() {
		if _, ok := refOf(staged.Metadata(), n); !ok {
			out.RefsRemoved = append(out.RefsRemoved, n)
		}
	}
	sort.Strings(out.RefsRemoved)
	var candidates []int64
	for _, s := range snapshotsInOrder(tbl.Metadata()) {
		if staged.Metadata().SnapshotByID(s.SnapshotID) == nil {
			candidates = append(candidates, s.SnapshotID)
		}
	}
	if len(candidates) == 0 && len(out.RefsRemoved) == 0 {
		return out, nil
	}
	holds, err := Holds(ctx, cat, ident, tbl)
	if err != nil {
		return nil, fmt.Errorf("expire snapshots of %s: find the watermarks on it: %w", name, err)
	}
	keep := map[int64]bool{}
	for _, h := range holds {
		hit := false
		for _, id := range h.Needs {
			if slices.Contains(candidates, id) {
				hit = true
				if !o.Force {
					keep[id] = true
				}
			}
		}
		if hit {
			if o.Force {
				out.Forced = append(out.Forced, h)
			} else {
				out.KeptFor = append(out.KeptFor, h)
			}
		}
	}
	for _, id := range candidates {
		if keep[id] {
			out.Kept = append(out.Kept, id)
		} else {
			out.Expired = append(out.Expired, id)
		}
	}
	if o.DryRun || (len(out.Expired) == 0 && len(out.RefsRemoved) == 0) {
		return out, nil
	}
	meta := tbl.Metadata()
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID())}
	var updates []table.Update
	for n, r := range meta.Refs() {
		id := r.SnapshotID
		reqs = append(reqs, table.AssertRefSnapshotID(n, &id))
	}
	for _, n := range out.RefsRemoved {
		updates = append(updates, table.NewRemoveSnapshotRefUpdate(n))
	}
	var remove table.Update
	if len(out.Expired) > 0 {
		remove = table.NewRemoveSnapshotsUpdate(out.Expired, true)
		updates = append(updates, remove)
	}
	if _, _, err := cat.Iceberg().CommitTable(ctx, ident, reqs, updates); err != nil {
		return nil, fmt.Errorf("expire snapshots of %s: %w", name, err)
	}
	post, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("expired snapshots of %s but could not reload it: %w", name, err)
	}
	out.Table = post
	rooted, err := cat.HasPathRoot(ctx, ident)
	if err != nil {
		return out, err
	}
	out.FilesKept = rooted
	if remove != nil && !rooted {
		// The files only the expired snapshots referenced.
		if err := remove.PostCommit(ctx, tbl, post); err != nil {
			return out, fmt.Errorf("expired %d snapshots of %s but could not delete all of their files (remove-orphans cleans up later): %w", len(out.Expired), name, err)
		}
	}
	return out, nil
}

// snapshotsInOrder returns the snapshots oldest first.
func snapshotsInOrder(meta table.Metadata) []table.Snapshot {
	snaps := slices.Clone(meta.Snapshots())
	sort.SliceStable(snaps, func(i, j int) bool {
		if snaps[i].SequenceNumber != snaps[j].SequenceNumber {
			return snaps[i].SequenceNumber < snaps[j].SequenceNumber
		}
		return snaps[i].TimestampMs < snaps[j].TimestampMs
	})
	return snaps
}

// Holds finds the watermarks on the table src (loaded as tbl) held by the
// other tables of the catalog: outputs whose floe build state names src as
// an input (same name, same table UUID), and tables with a bare
// watermark.source-snapshot-id that is one of src's snapshots (as code
// written after the seeds leaves it). Each hold lists the snapshots the
// output's next incremental build reads: the watermark itself (its files
// give the rows the next snapshot removed) and every snapshot after it up
// to the head of the input's branch.
func Holds(ctx context.Context, cat *catalog.Catalog, src table.Identifier, tbl *table.Table) ([]Hold, error) {
	srcName := catalog.FormatName(src)
	uuid := tbl.Metadata().TableUUID().String()
	tables, err := allTables(ctx, cat, nil)
	if err != nil {
		return nil, err
	}
	var holds []Hold
	for _, id := range tables {
		if slices.Equal(id, src) {
			continue
		}
		other, err := cat.Load(ctx, id)
		if err != nil {
			continue // dropped meanwhile, or unreadable: it holds nothing floe can honour
		}
		b, ok := state.Read(other.Properties())
		if !ok {
			continue
		}
		for _, in := range b.Inputs {
			bare := b.Transform == "" && in.Table == ""
			switch {
			case bare:
				wm, ok := in.SnapshotID()
				if !ok || tbl.Metadata().SnapshotByID(wm) == nil {
					continue
				}
			case !sameTable(in.Table, srcName):
				continue
			case in.UUID != "" && in.UUID != uuid:
				continue // a former table of that name: the next build rebuilds anyway
			}
			needs := neededBy(tbl.Metadata(), in)
			if len(needs) == 0 {
				continue
			}
			holds = append(holds, Hold{Output: catalog.FormatName(id), Transform: b.Transform, Input: in.Name, Watermark: in.Snapshot, Needs: needs})
		}
	}
	return holds, nil
}

func sameTable(recorded, name string) bool {
	a, err1 := catalog.ParseName(recorded)
	b, err2 := catalog.ParseName(name)
	if err1 != nil || err2 != nil {
		return recorded == name
	}
	return slices.Equal(a, b)
}

// neededBy lists the snapshots the next incremental build from input state
// in reads; none when it cannot be incremental (the watermark is no longer
// an ancestor of the branch head: that build rebuilds in full anyway).
func neededBy(meta table.Metadata, in state.InputState) []int64 {
	branch := in.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	ref, ok := refOf(meta, branch)
	if !ok {
		return nil
	}
	head := meta.SnapshotByID(ref.SnapshotID)
	if head == nil {
		return nil
	}
	var wm *int64
	if id, ok := in.SnapshotID(); ok {
		if !state.Reachable(meta, head, id) {
			return nil
		}
		wm = &id
	} else if in.Snapshot != state.NoSnapshot {
		return nil
	}
	var out []int64
	if wm != nil && meta.SnapshotByID(*wm) != nil {
		out = append(out, *wm)
	}
	for _, s := range state.Between(meta, head, wm) {
		out = append(out, s.SnapshotID)
	}
	return out
}

// allTables lists every table of the catalog, in every namespace (nested
// ones included; catalogs differ in whether listing the top level returns
// them, so namespaces are deduplicated).
func allTables(ctx context.Context, cat *catalog.Catalog, _ table.Identifier) ([]table.Identifier, error) {
	seen := map[string]bool{}
	var nss []table.Identifier
	var walk func(parent table.Identifier) error
	walk = func(parent table.Identifier) error {
		children, err := cat.ListNamespaces(ctx, parent)
		if err != nil {
			return err
		}
		for _, ns := range children {
			key := catalog.FormatName(ns)
			if seen[key] || len(ns) <= len(parent) {
				continue
			}
			seen[key] = true
			nss = append(nss, ns)
			_ = walk(ns) // a catalog without nested namespaces may refuse the question

		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	var out []table.Identifier
	for _, ns := range nss {
		ids, err := cat.ListTables(ctx, ns)
		if err != nil {
			return nil, err
		}
		out = append(out, ids...)
	}
	return out, nil
}

// DescribeHolds renders holds for messages: "shop.active (transform "x") at
// watermark 123 needs 3 snapshots: 1, 2, 3".
func DescribeHolds(holds []Hold, among []int64) string {
	var parts []string
	for _, h := range holds {
		var ids []string
		for _, id := range h.Needs {
			if among == nil || slices.Contains(among, id) {
				ids = append(ids, fmt.Sprint(id))
			}
		}
		parts = append(parts, fmt.Sprintf("%s needs %s", h, strings.Join(ids, ", ")))
	}
	return strings.Join(parts, "; ")
}
