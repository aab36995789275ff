package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

// checkpointKind tells the three checkpoint layouts apart.
type checkpointKind int

const (
	checkpointClassic   checkpointKind = iota // n.checkpoint.parquet
	checkpointMultiPart                       // n.checkpoint.o.p.parquet
	checkpointV2                              // n.checkpoint.<uuid>.json|parquet
)

// checkpoint is one complete checkpoint: its version and files (the parts of
// a multi-part checkpoint in part order).
type checkpoint struct {
	version int64
	kind    checkpointKind
	files   []FileInfo
}

// logListing is one listing of _delta_log: the commit files by version and the
// complete checkpoints. Log compaction files, checksums and anything else are
// ignored: compactions cannot serve change data and are optional for
// snapshots.
type logListing struct {
	logDir  string
	commits map[int64]FileInfo
	// versions holds the commit versions in ascending order.
	versions []int64
	// checkpoints holds complete checkpoints in ascending version order.
	checkpoints []checkpoint
	// incomplete records, for error messages, checkpoint versions whose
	// multi-part set is incomplete.
	incomplete map[int64]string
}

// latest returns the newest version the log holds.
func (l *logListing) latest() int64 {
	v := int64(-1)
	if n := len(l.versions); n > 0 {
		v = l.versions[n-1]
	}
	if n := len(l.checkpoints); n > 0 && l.checkpoints[n-1].version > v {
		v = l.checkpoints[n-1].version
	}
	return v
}

// earliest returns the oldest version whose snapshot can be rebuilt: 0 when
// the first commit is kept, else the oldest checkpoint followed by unbroken
// commits up to the latest version (-1 when there is none).
func (l *logListing) earliest() int64 {
	gap := l.lastGap()
	if gap == -1 {
		return 0
	}
	for _, cp := range l.checkpoints {
		if cp.version >= gap {
			return cp.version
		}
	}
	return -1
}

// lastGap returns the newest version without a commit file, -1 when
// versions 0 to latest all have one.
func (l *logListing) lastGap() int64 {
	for v := l.latest(); v >= 0; v-- {
		if _, ok := l.commits[v]; !ok {
			return v
		}
	}
	return -1
}

// gapError explains why no version can be read: a commit file is missing
// after the newest checkpoint.
func (l *logListing) gapError(root tableRoot) error {
	gap := l.lastGap()
	// An incomplete checkpoint that would have covered the gap is the
	// likelier culprit: say so first.
	var notes []string
	for v, msg := range l.incomplete {
		if v >= gap {
			notes = append(notes, msg)
		}
	}
	if len(notes) > 0 {
		sort.Strings(notes)
		return fmt.Errorf("%w: table %s: %s, so no version up to the latest (%d) can be rebuilt (the commit file %s of version %d, which the checkpoint would replace, is gone too)",
			ErrVersionNotFound, root, strings.Join(notes, "; "), l.latest(), commitName(gap), gap)
	}
	return fmt.Errorf("%w: table %s: commit file %s of version %d is missing and no checkpoint at or after it covers the gap, so no version up to the latest (%d) can be rebuilt",
		ErrVersionNotFound, root, commitName(gap), gap, l.latest())
}

// contiguous returns the first version in [from, to] without a commit file,
// or -1 when all are present.
func (l *logListing) contiguous(from, to int64) int64 {
	for v := from; v <= to; v++ {
		if _, ok := l.commits[v]; !ok {
			return v
		}
	}
	return -1
}

// checkpointAt returns the complete checkpoint at exactly version v.
func (l *logListing) checkpointAt(v int64) (checkpoint, bool) {
	for i := len(l.checkpoints) - 1; i >= 0; i-- {
		if l.checkpoints[i].version == v {
			return l.checkpoints[i], true
		}
	}
	return checkpoint{}, false
}

// logSegment is what a snapshot at version is built from: an optional
// checkpoint and the commits after it.
type logSegment struct {
	version    int64
	checkpoint *checkpoint
	commits    []FileInfo
	versions   []int64
}

// segment chooses the files of the snapshot at version: the newest complete
// checkpoint at or before it and the commits after the checkpoint, which must
// all be present.
func (t *Table) segment(l *logListing, version int64) (*logSegment, error) {
	latest := l.latest()
	if version > latest {
		return nil, fmt.Errorf("%w: version %d of table %s: the latest version is %d", ErrVersionNotFound, version, t.root, latest)
	}
	if version < 0 {
		return nil, fmt.Errorf("%w: version %d of table %s: versions start at 0", ErrVersionNotFound, version, t.root)
	}
	seg := &logSegment{version: version}
	from := int64(0)
	for i := len(l.checkpoints) - 1; i >= 0; i-- {
		if l.checkpoints[i].version <= version {
			seg.checkpoint = &l.checkpoints[i]
			from = l.checkpoints[i].version + 1
			break
		}
	}
	if seg.checkpoint == nil {
		if _, ok := l.commits[0]; !ok {
			oldest := int64(-1)
			if len(l.versions) > 0 {
				oldest = l.versions[0]
			}
			return nil, fmt.Errorf("%w: version %d of table %s cannot be rebuilt: the log history before version %d was cleaned up and no checkpoint at or before version %d is left%s",
				ErrVersionNotFound, version, t.root, oldest, version, l.incompleteNote(version))
		}
	}
	for v := from; v <= version; v++ {
		fi, ok := l.commits[v]
		if !ok {
			return nil, fmt.Errorf("%w: version %d of table %s: commit file %s is missing%s", ErrVersionNotFound, version, t.root, commitName(v), l.incompleteNote(version))
		}
		seg.commits = append(seg.commits, fi)
		seg.versions = append(seg.versions, v)
	}
	return seg, nil
}

func (l *logListing) incompleteNote(version int64) string {
	var notes []string
	for v, msg := range l.incomplete {
		if v <= version {
			notes = append(notes, msg)
		}
	}
	sort.Strings(notes)
	if len(notes) == 0 {
		return ""
	}
	return " (ignored: " + strings.Join(notes, "; ") + ")"
}

func commitName(v int64) string { return fmt.Sprintf("%020d.json", v) }

// listLog lists _delta_log once.
func (t *Table) listLog(ctx context.Context) (*logListing, error) {
	logDir := t.root.join("_delta_log")
	entries, err := t.fs.List(ctx, logDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no _delta_log directory", ErrNotATable, t.root)
		}
		return nil, fmt.Errorf("delta: list %s: %w", logDir, err)
	}
	l := &logListing{logDir: logDir, commits: map[int64]FileInfo{}, incomplete: map[int64]string{}}
	type partKey struct {
		version int64
		parts   int
	}
	multi := map[partKey]map[int]FileInfo{}
	for _, e := range entries {
		if e.IsDir {
			continue
		}
		name := e.Name
		if len(name) < 21 || name[20] != '.' {
			continue
		}
		v, err := strconv.ParseInt(name[:20], 10, 64)
		if err != nil || !allDigits(name[:20]) {
			continue
		}
		rest := name[21:]
		switch {
		case rest == "json":
			l.commits[v] = e
			l.versions = append(l.versions, v)
		case rest == "checkpoint.parquet":
			l.checkpoints = append(l.checkpoints, checkpoint{version: v, kind: checkpointClassic, files: []FileInfo{e}})
		case strings.HasPrefix(rest, "checkpoint."):
			mid := strings.TrimPrefix(rest, "checkpoint.")
			if part, parts, ok := parseMultiPart(mid); ok {
				k := partKey{v, parts}
				if multi[k] == nil {
					multi[k] = map[int]FileInfo{}
				}
				multi[k][part] = e
			} else if isUUIDCheckpoint(mid) {
				l.checkpoints = append(l.checkpoints, checkpoint{version: v, kind: checkpointV2, files: []FileInfo{e}})
			}
		}
	}
	for k, parts := range multi {
		if len(parts) != k.parts {
			var missing []string
			for p := 1; p <= k.parts; p++ {
				if _, ok := parts[p]; !ok {
					missing = append(missing, fmt.Sprintf("%020d.checkpoint.%010d.%010d.parquet", k.version, p, k.parts))
				}
			}
			if len(missing) > 3 {
				missing = append(missing[:3], fmt.Sprintf("and %d more", len(missing)-3))
			}
			l.incomplete[k.version] = fmt.Sprintf("multi-part checkpoint %d has %d of %d parts, missing %s",
				k.version, len(parts), k.parts, strings.Join(missing, ", "))
			continue
		}
		cp := checkpoint{version: k.version, kind: checkpointMultiPart}
		for p := 1; p <= k.parts; p++ {
			cp.files = append(cp.files, parts[p])
		}
		l.checkpoints = append(l.checkpoints, cp)
	}
	sort.Slice(l.versions, func(i, j int) bool { return l.versions[i] < l.versions[j] })
	// NB: at one version prefer v2 over classic over multi-part; any complete
	// checkpoint is valid, this only makes the choice deterministic.
	sort.SliceStable(l.checkpoints, func(i, j int) bool {
		a, b := l.checkpoints[i], l.checkpoints[j]
		if a.version != b.version {
			return a.version < b.version
		}
		return cpRank(a.kind) < cpRank(b.kind)
	})
	if len(l.versions) == 0 && len(l.checkpoints) == 0 {
		return nil, fmt.Errorf("%w: %s has no commit or checkpoint in _delta_log", ErrNotATable, t.root)
	}
	return l, nil
}

func cpRank(k checkpointKind) int {
	switch k {
	case checkpointV2:
		return 2
	case checkpointClassic:
		return 1
	}
	return 0
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// parseMultiPart parses "0000000001.0000000003.parquet".
func parseMultiPart(s string) (part, parts int, ok bool) {
	if len(s) != 10+1+10+len(".parquet") || s[10] != '.' || !strings.HasSuffix(s, ".parquet") {
		return 0, 0, false
	}
	if !allDigits(s[:10]) || !allDigits(s[11:21]) {
		return 0, 0, false
	}
	p, _ := strconv.Atoi(s[:10])
	n, _ := strconv.Atoi(s[11:21])
	if p < 1 || n < 1 || p > n {
		return 0, 0, false
	}
	return p, n, true
}

// isUUIDCheckpoint matches "<uuid>.json" and "<uuid>.parquet".
func isUUIDCheckpoint(s string) bool {
	var id string
	switch {
	case strings.HasSuffix(s, ".json"):
		id = strings.TrimSuffix(s, ".json")
	case strings.HasSuffix(s, ".parquet"):
		id = strings.TrimSuffix(s, ".parquet")
	default:
		return false
	}
	if len(id) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := id[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
