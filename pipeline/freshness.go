package pipeline

import (
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/state"
)

// Freshness levels of an output, from its lag and its transform's targets.
const (
	FreshNone    = ""        // the transform has no freshness target
	FreshOK      = "ok"      // within its targets
	FreshWarn    = "warn"    // past warn_after
	FreshError   = "error"   // past error_after
	FreshUnknown = "unknown" // the lag cannot be measured (see the note)
)

// Level is the freshness level of lag against the targets warn and errAfter
// (0 = no such target); lag nil means unknown.
func Level(lag *time.Duration, warn, errAfter time.Duration) string {
	if warn <= 0 && errAfter <= 0 {
		return FreshNone
	}
	switch {
	case lag == nil:
		return FreshUnknown
	case errAfter > 0 && *lag >= errAfter:
		return FreshError
	case warn > 0 && *lag >= warn:
		return FreshWarn
	}
	return FreshOK
}

// snap is what lag figures need of one snapshot of an input: its commit
// time and, when its summary says, the rows it added or removed.
type snap struct {
	ID   int64
	At   time.Time
	Rows int64
	// NoRows is true when the summary does not count the rows.
	NoRows bool
}

// pending are the figures of the snapshots of an input not yet reflected
// in an output.
type pending struct {
	Snapshots int64
	// Rows is the rows the pending snapshots add or remove; nil when one
	// of them does not say.
	Rows *int64
	// Since is the earliest commit time among the pending snapshots (zero
	// when none is pending). The earliest, not the first: with writers'
	// clocks skewed, a later snapshot may carry an earlier time, and the
	// change it holds has waited since then.
	Since time.Time
}

// pendingOf sums up the pending snapshots.
func pendingOf(snaps []snap) pending {
	p := pending{Snapshots: int64(len(snaps))}
	var rows int64
	known := true
	for _, s := range snaps {
		if p.Since.IsZero() || s.At.Before(p.Since) {
			p.Since = s.At
		}
		if s.NoRows {
			known = false
		}
		rows += s.Rows
	}
	if known {
		p.Rows = &rows
	}
	return p
}

// lagAt is how long a change pending since since has waited at now: 0
// when nothing is pending, and 0 (skewed true) when since is after now
// (the writer's clock is ahead of ours).
func lagAt(since, now time.Time) (lag time.Duration, skewed bool) {
	if since.IsZero() {
		return 0, false
	}
	if since.After(now) {
		return 0, true
	}
	return now.Sub(since), false
}

// snapOf reads the commit time and row counts of an Iceberg snapshot.
func snapOf(s *table.Snapshot) snap {
	out := snap{ID: s.SnapshotID, At: time.UnixMilli(s.TimestampMs).UTC()}
	if s.Summary == nil {
		out.NoRows = true
		return out
	}
	props := s.Summary.Properties
	counted := false
	for _, k := range []string{"added-records", "deleted-records", "added-position-deletes", "added-equality-deletes"} {
		if v, ok := props[k]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				out.NoRows = true
				return out
			}
			out.Rows += n
			counted = true
		}
	}
	// NB: a snapshot that changed no rows (a schema or property change, an
	// empty commit) has no counts: it has nothing pending either, unless
	// it replaced files.
	if !counted && (s.Summary.Operation == table.OpOverwrite || s.Summary.Operation == table.OpDelete) {
		out.NoRows = true
	}
	return out
}

// snapsOf converts Iceberg snapshots.
func snapsOf(ss []*table.Snapshot) []snap {
	out := make([]snap, len(ss))
	for i, s := range ss {
		out[i] = snapOf(s)
	}
	return out
}

// commitTime returns the commit time of snapshot id of an Iceberg table:
// from the snapshot when it is retained, else from the snapshot log.
func commitTime(meta table.Metadata, id int64) (time.Time, bool) {
	if s := meta.SnapshotByID(id); s != nil {
		return time.UnixMilli(s.TimestampMs).UTC(), true
	}
	for e := range meta.SnapshotLogs() {
		if e.SnapshotID == id {
			return time.UnixMilli(e.TimestampMs).UTC(), true
		}
	}
	return time.Time{}, false
}

// pendingAfter lists the snapshots pending after a watermark that is no
// longer in the history, judged by commit time: head and its retained
// ancestors committed after at, and the snapshot log's entries after at
// whose snapshots expired (their rows unknown).
func pendingAfter(meta table.Metadata, head *table.Snapshot, at time.Time) []snap {
	var out []snap
	seen := map[int64]bool{}
	for _, s := range state.Between(meta, head, nil) {
		seen[s.SnapshotID] = true
		if time.UnixMilli(s.TimestampMs).After(at) {
			out = append(out, snapOf(s))
		}
	}
	for e := range meta.SnapshotLogs() {
		ts := time.UnixMilli(e.TimestampMs).UTC()
		if !seen[e.SnapshotID] && meta.SnapshotByID(e.SnapshotID) == nil && ts.After(at) {
			out = append(out, snap{ID: e.SnapshotID, At: ts, NoRows: true})
		}
	}
	return out
}
