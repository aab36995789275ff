package changelog

import (
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/scan"
)

// Range is a resolved changelog range: the snapshots whose changes are
// reported, oldest first, each with its ordinal. Replace snapshots
// (compactions, manifest rewrites) change no rows and get no ordinal.
type Range struct {
	Snapshots []*table.Snapshot
	Start     *int64 // exclusive start, nil = from the first snapshot
	End       *int64 // inclusive end, nil = empty range
}

// resolveRange turns the options into a range, following Iceberg's
// SparkChangelogScanBuilder and BaseIncrementalScan exactly, with the
// branch head of opts.Ref in place of main's current snapshot.
func resolveRange(tbl *table.Table, o *Options) (*Range, error) {
	if err := checkRangeOptions(o); err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	name := scan.FormatIdent(tbl.Identifier())
	head, ref, err := branchHead(meta, o.Ref, name)
	if err != nil {
		return nil, err
	}
	lookup := func(id int64) *table.Snapshot { return meta.SnapshotByID(id) }
	start, end, empty, err := snapshotBounds(o, head, lookup)
	if err != nil {
		return nil, err
	}
	if empty {
		return &Range{}, nil
	}

	// BaseIncrementalScan.planFiles
	if start == nil && end == nil && head == nil {
		return &Range{}, nil
	}
	var to *table.Snapshot
	if end != nil {
		to = lookup(*end)
		if to == nil {
			return nil, fmt.Errorf("%w: Cannot find the end snapshot: %d (table %s; it never existed or has expired)", ErrInvalidRange, *end, name)
		}
	} else {
		if head == nil {
			return nil, fmt.Errorf("%w: End snapshot is not set and table has no current snapshot (table %s, branch %s)", ErrInvalidRange, name, ref)
		}
		to = head
	}
	snaps, err := snapshotsAfter(to, start, lookup)
	if err != nil {
		return nil, err
	}
	endID := to.SnapshotID
	return &Range{Snapshots: withoutReplaces(snaps), Start: start, End: &endID}, nil
}

// checkRangeOptions refuses the combinations of bounds Iceberg refuses.
func checkRangeOptions(o *Options) error {
	if o.StartSnapshotID != nil && o.StartTimestampMs != nil {
		return fmt.Errorf("%w: Cannot set both start-snapshot-id and start-timestamp for changelogs", ErrInvalidOptions)
	}
	if o.EndSnapshotID != nil && o.EndTimestampMs != nil {
		return fmt.Errorf("%w: Cannot set both end-snapshot-id and end-timestamp for changelogs", ErrInvalidOptions)
	}
	if o.StartTimestampMs != nil && o.EndTimestampMs != nil && !(*o.StartTimestampMs < *o.EndTimestampMs) {
		return fmt.Errorf("%w: Cannot set start-timestamp to be greater than end-timestamp for changelogs", ErrInvalidOptions)
	}
	return nil
}

// branchHead returns the snapshot branch or tag ref ("" = main) points at
// (nil for an empty table's main) and the ref's name.
func branchHead(meta table.Metadata, ref, name string) (*table.Snapshot, string, error) {
	if ref == "" {
		ref = table.MainBranch
	}
	var head *table.Snapshot
	found := false
	for n, r := range meta.Refs() {
		if n == ref {
			found = true
			head = meta.SnapshotByID(r.SnapshotID)
		}
	}
	if !found && ref != table.MainBranch {
		return nil, ref, fmt.Errorf("%w: table %s has no branch or tag %q", ErrInvalidRange, name, ref)
	}
	return head, ref, nil
}

// snapshotBounds returns the range's exclusive start and inclusive end
// snapshot ids, the timestamp bounds resolved against the head's history
// as SparkChangelogScanBuilder does; empty reports a range with nothing in
// it.
func snapshotBounds(o *Options, head *table.Snapshot, lookup func(int64) *table.Snapshot) (start, end *int64, empty bool, err error) {
	headAncestors := func() []*table.Snapshot {
		if head == nil {
			return nil
		}
		return ancestors(head, lookup)
	}
	start, end = o.StartSnapshotID, o.EndSnapshotID
	if o.StartTimestampMs != nil {
		ts := *o.StartTimestampMs
		if head == nil || ts > head.TimestampMs {
			return nil, nil, true, nil
		}
		s, err := oldestAncestorAfter(headAncestors(), ts)
		if err != nil {
			return nil, nil, false, err
		}
		switch {
		case s == nil:
			start = nil
		case s.TimestampMs == ts:
			id := s.SnapshotID
			start = &id
		default:
			start = s.ParentSnapshotID
		}
	}
	if o.EndTimestampMs != nil {
		end = nil
		for _, s := range headAncestors() {
			if s.TimestampMs <= *o.EndTimestampMs {
				id := s.SnapshotID
				end = &id
				break
			}
		}
		if (start == nil && end == nil) || (start != nil && end != nil && *start == *end) {
			return nil, nil, true, nil
		}
	}
	return start, end, false, nil
}

// snapshotsAfter lists to and its ancestors after start (exclusive; nil:
// back to the oldest ancestor still in the metadata), newest first. start
// must be the parent of one of them: otherwise the range cannot be read
// and a consumer must rebuild (ErrRebuildNeeded).
func snapshotsAfter(to *table.Snapshot, start *int64, lookup func(int64) *table.Snapshot) ([]*table.Snapshot, error) {
	chain := ancestors(to, lookup)
	if start == nil {
		// Without a start the range reaches the oldest ancestor still in
		// the metadata; if history was expired, earlier changes are lost.
		return chain, nil
	}
	for i, s := range chain {
		if s.ParentSnapshotID != nil && *s.ParentSnapshotID == *start {
			return chain[:i+1], nil
		}
	}
	why := "it is not in the history of the end snapshot (rolled back, on another branch, or a later snapshot)"
	if lookup(*start) == nil {
		why = "it is not in the table's metadata (expired, or never existed) and no retained ancestor has it as parent"
	}
	return nil, fmt.Errorf("%w: %w: Starting snapshot (exclusive) %d is not a parent ancestor of end snapshot %d: %s; a consumer that processed up to %d must rebuild from the current state",
		ErrInvalidRange, ErrRebuildNeeded, *start, to.SnapshotID, why, *start)
}

// withoutReplaces returns snaps (newest first) oldest first, without the
// replace snapshots (compactions, manifest rewrites), which change no rows.
func withoutReplaces(snaps []*table.Snapshot) []*table.Snapshot {
	out := make([]*table.Snapshot, 0, len(snaps))
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if s.Summary != nil && s.Summary.Operation == table.OpReplace {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ancestors lists s and its ancestors, newest first, stopping at the first
// parent that is no longer in the metadata.
func ancestors(s *table.Snapshot, lookup func(int64) *table.Snapshot) []*table.Snapshot {
	var out []*table.Snapshot
	seen := map[int64]bool{}
	for s != nil && !seen[s.SnapshotID] {
		seen[s.SnapshotID] = true
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = lookup(*s.ParentSnapshotID)
	}
	return out
}

// oldestAncestorAfter is Iceberg's SnapshotUtil.oldestAncestorAfter over
// the given ancestry (newest first).
func oldestAncestorAfter(chain []*table.Snapshot, ts int64) (*table.Snapshot, error) {
	if len(chain) == 0 {
		return nil, nil
	}
	var last *table.Snapshot
	for _, s := range chain {
		if s.TimestampMs < ts {
			return last, nil
		} else if s.TimestampMs == ts {
			return s, nil
		}
		last = s
	}
	if last != nil && last.ParentSnapshotID == nil {
		return last, nil
	}
	return nil, fmt.Errorf("%w: %w: Cannot find snapshot older than %s (history before the oldest retained snapshot has expired)",
		ErrInvalidRange, ErrRebuildNeeded, javaLocalDateTime(ts))
}

// javaLocalDateTime formats epoch millis as Java's LocalDateTime.toString
// does in UTC, as Iceberg's DateTimeUtil.formatTimestampMillis.
func javaLocalDateTime(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	s := t.Format("2006-01-02T15:04")
	if t.Second() != 0 || t.Nanosecond() != 0 {
		s += t.Format(":05")
		if t.Nanosecond() != 0 {
			s += fmt.Sprintf(".%03d", t.Nanosecond()/1e6)
		}
	}
	return s
}
