package tableops

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/state"
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
	// place on purpose, for the reason FilesKeptWhy: the table was
	// registered with a path root (its files belong to whoever wrote
	// them), or it sets gc.enabled=false.
	FilesKept    bool
	FilesKeptWhy string
	// FilesDeleted counts the files deleted after the expiry committed;
	// CleanupErr, when set, says why some of the expired snapshots' files
	// stay (the expiry itself is committed; remove-orphans cleans up).
	FilesDeleted int
	CleanupErr   error
	// CommitID and AnswerLost are the commit's (see commit.Outcome).
	CommitID   string
	AnswerLost bool
	Table      *table.Table
}

// ExpireSnapshots removes old snapshots as Iceberg's expire-snapshots does
// (iceberg-go's ExpireSnapshots decides which: not referenced by a branch
// or tag, older than OlderThan, beyond RetainLast per branch), in one
// commit through package commit (computed again on the fresh table when
// another writer commits first; a lost answer resolved by the commit id),
// then deletes the files only they referenced. A snapshot that a watermark
// of a known output needs (the outputs floe built from this table, found
// by their watermark properties in the same catalog) is kept unless Force,
// and the outcome says which output holds it.
//
// Files are deleted only once the commit is known to have landed, and only
// files that no snapshot the table keeps holds live, that lie under the
// table's location and that no other table of the catalog references (see
// deletableFiles). After an unknown outcome or a failure nothing is
// deleted.
func ExpireSnapshots(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o ExpireOptions) (*ExpireOutcome, error) {
	name := catalog.FormatName(ident)
	if o.RetainLast < 0 {
		return nil, fmt.Errorf("expire snapshots of %s: --retain-last must be at least 1", name)
	}
	var out *ExpireOutcome
	// The snapshots planned to expire by any attempt, and the table the
	// last attempt was computed on.
	planned := map[int64]table.Snapshot{}
	var pre *table.Table
	var c checked
	res, err := commit.RunUpdates(ctx, cat, ident, commit.Options{}, c.wrap(func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		plan, err := planExpiry(ctx, cat, ident, tbl, o)
		if err != nil {
			return nil, nil, err
		}
		out = plan
		if o.DryRun || (len(plan.Expired) == 0 && len(plan.RefsRemoved) == 0) {
			return nil, nil, nil
		}
		pre = tbl
		meta := tbl.Metadata()
		for _, id := range plan.Expired {
			if s := meta.SnapshotByID(id); s != nil {
				planned[id] = *s
			}
		}
		var reqs []table.Requirement
		for n, r := range meta.Refs() {
			id := r.SnapshotID
			reqs = append(reqs, table.AssertRefSnapshotID(n, &id))
		}
		var ups []table.Update
		for _, n := range plan.RefsRemoved {
			ups = append(ups, table.NewRemoveSnapshotRefUpdate(n))
		}
		if len(plan.Expired) > 0 {
			ups = append(ups, table.NewRemoveSnapshotsUpdate(plan.Expired, false))
		}
		return reqs, ups, nil
	}))
	if err != nil {
		return nil, c.fail("expire snapshots of "+name, err)
	}
	out.Table, out.CommitID, out.AnswerLost = res.Table, res.CommitID, res.AnswerLost
	if !res.Committed {
		return out, nil
	}
	// The expiry is known to have landed: only now may files go, judged on
	// a table loaded after the commit.
	var post *table.Table
	err = afterCommit(ctx, func() (err error) {
		post, err = cat.Load(ctx, ident)
		return err
	})
	if err != nil {
		out.CleanupErr = fmt.Errorf("expired snapshots of %s but could not reload it to find the files only they used; those files stay (remove-orphans cleans up later): %w", name, err)
		return out, nil
	}
	out.Table = post
	var removed []table.Snapshot
	out.Expired = nil
	for _, s := range snapshotsInOrder(pre.Metadata()) {
		if _, ok := planned[s.SnapshotID]; ok && post.Metadata().SnapshotByID(s.SnapshotID) == nil {
			removed = append(removed, s)
			out.Expired = append(out.Expired, s.SnapshotID)
		}
	}
	for id, s := range planned {
		if pre.Metadata().SnapshotByID(id) == nil && post.Metadata().SnapshotByID(id) == nil {
			removed = append(removed, s) // planned by an earlier attempt only
			out.Expired = append(out.Expired, id)
		}
	}
	if len(removed) == 0 {
		return out, nil
	}
	rooted, err := cat.HasPathRoot(ctx, ident)
	switch {
	case err != nil:
		out.CleanupErr = fmt.Errorf("expired %d snapshots of %s but could not tell whether it was registered with --path-root; their files stay: %w", len(removed), name, err)
		return out, nil
	case rooted:
		out.FilesKept, out.FilesKeptWhy = true, name+" was registered with --path-root, its files belong to whoever wrote them"
		return out, nil
	case !gcEnabled(post.Properties()):
		out.FilesKept, out.FilesKeptWhy = true, name+" sets gc.enabled=false"
		return out, nil
	}
	var del []string
	err = afterCommit(ctx, func() error {
		files, err := expiredFiles(ctx, pre, removed, post)
		if err == nil {
			del, err = deletableFiles(ctx, cat, ident, post, files)
		}
		return err
	})
	if err == nil {
		out.FilesDeleted, err = removeFiles(ctx, post, del)
	}
	if err != nil {
		out.CleanupErr = fmt.Errorf("expired %d snapshots of %s but could not delete all of their files (remove-orphans cleans up later): %w", len(removed), name, err)
	}
	return out, nil
}

// gcEnabled reads Iceberg's gc.enabled (default true).
func gcEnabled(p iceberg.Properties) bool {
	v, ok := p[table.GCEnabledKey]
	return !ok || strings.EqualFold(v, "true")
}

// planExpiry computes on tbl what the expiry removes and keeps (see
// ExpireSnapshots).
func planExpiry(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, tbl *table.Table, o ExpireOptions) (*ExpireOutcome, error) {
	name := catalog.FormatName(ident)
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
		if _, ok := refOf(staged.Table, n); !ok {
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
	head := meta.SnapshotByName(branch)
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
