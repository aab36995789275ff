package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// DefaultBatchSize is the number of rows per Arrow batch when WithBatchSize
// is not given.
const DefaultBatchSize = 64 * 1024

// Table is a Delta table at a location. It holds no snapshot: every call
// lists the log again, so it sees commits made since Open. It caches the
// commit information it reads, since a commit never changes once written
// (open a new Table if a table is deleted and recreated at the same place).
// A Table is safe for concurrent use.
type Table struct {
	root      tableRoot
	fs        FileSystem
	mem       memory.Allocator
	batchSize int

	mu      sync.Mutex
	commits map[int64]CommitInfo // commit infos read so far (commits never change)
}

// Option configures Open.
type Option func(*Table)

// WithFileSystem reads the table through fs instead of the local disk. It is
// required for locations with a scheme other than file://.
func WithFileSystem(fs FileSystem) Option { return func(t *Table) { t.fs = fs } }

// WithAllocator allocates Arrow memory from mem (default memory.DefaultAllocator).
func WithAllocator(mem memory.Allocator) Option { return func(t *Table) { t.mem = mem } }

// WithBatchSize sets the maximum number of rows per Arrow batch produced by
// Scan and Changes (default DefaultBatchSize).
func WithBatchSize(n int) Option { return func(t *Table) { t.batchSize = n } }

// Open opens the Delta table at location, a local path, a file:// URI or,
// with WithFileSystem, any URI the file system understands. It lists the log
// once and fails with ErrNotATable when there is no Delta log there.
func Open(ctx context.Context, location string, opts ...Option) (*Table, error) {
	root, err := parseRoot(location)
	if err != nil {
		return nil, err
	}
	t := &Table{root: root, mem: memory.DefaultAllocator, batchSize: DefaultBatchSize, commits: map[int64]CommitInfo{}}
	for _, o := range opts {
		o(t)
	}
	if t.batchSize <= 0 {
		t.batchSize = DefaultBatchSize
	}
	if t.fs == nil {
		if root.scheme != "" {
			return nil, fmt.Errorf("%w: no file system for %q locations (table %s): pass WithFileSystem", ErrUnsupportedFeature, root.scheme, root)
		}
		t.fs = LocalFS{}
	}
	if _, err := t.listLog(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// Location returns the normalized table root.
func (t *Table) Location() string { return t.root.String() }

// LatestVersion returns the newest committed version.
func (t *Table) LatestVersion(ctx context.Context) (int64, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return 0, err
	}
	return l.latest(), nil
}

// FileLocation resolves a path from the log (add.path, remove.path,
// cdc.path) to a location of the table's FileSystem: relative paths are
// percent-decoded and joined to the root; absolute URIs must lie under the
// root, else the error wraps ErrPathEscapesRoot.
func (t *Table) FileLocation(path string) (string, error) { return t.root.resolve(path) }

// EarliestVersion returns the oldest version whose snapshot can still be
// rebuilt (0 unless log cleanup removed the first commits).
func (t *Table) EarliestVersion(ctx context.Context) (int64, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return 0, err
	}
	e := l.earliest()
	if e < 0 {
		return 0, l.gapError(t.root)
	}
	return e, nil
}

// Snapshot returns the table at version, rebuilt from the newest checkpoint at
// or before it and the commits after it. It fails with ErrVersionNotFound for
// a version after the latest or whose history was cleaned up, and with
// ErrUnsupportedFeature when the protocol at that version needs a reader
// feature this package lacks.
func (t *Table) Snapshot(ctx context.Context, version int64) (*Snapshot, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return nil, err
	}
	return t.snapshotFrom(ctx, l, version, true)
}

// LatestSnapshot returns the snapshot at the latest version.
func (t *Table) LatestSnapshot(ctx context.Context) (*Snapshot, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return nil, err
	}
	return t.snapshotFrom(ctx, l, l.latest(), true)
}

// Metadata returns the metaData action in force at version and its parsed
// schema, replaying only the protocol and metaData actions (no file list),
// so it is cheap on large tables. Errors are those of Snapshot.
func (t *Table) Metadata(ctx context.Context, version int64) (Metadata, *StructType, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return Metadata{}, nil, err
	}
	s, err := t.snapshotFrom(ctx, l, version, false)
	if err != nil {
		return Metadata{}, nil, err
	}
	return s.metadata, s.schema, nil
}

func (t *Table) snapshotFrom(ctx context.Context, l *logListing, version int64, filesToo bool) (*Snapshot, error) {
	seg, err := t.segment(l, version)
	if err != nil {
		return nil, err
	}
	st, err := t.replay(ctx, seg, filesToo)
	if err != nil {
		return nil, err
	}
	return t.newSnapshot(st)
}

// CommitInfo returns the commit information of version: its timestamp (see
// CommitInfo.Timestamp for the rule) and operation.
func (t *Table) CommitInfo(ctx context.Context, version int64) (CommitInfo, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return CommitInfo{}, err
	}
	return t.commitInfo(ctx, l, version)
}

// Commits returns the commit information of versions start to end inclusive.
// Every commit file must be present.
func (t *Table) Commits(ctx context.Context, start, end int64) ([]CommitInfo, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return nil, err
	}
	if end < start {
		return nil, fmt.Errorf("%w: end version %d is before start version %d", ErrInvalidRange, end, start)
	}
	out := make([]CommitInfo, 0, end-start+1)
	for v := start; v <= end; v++ {
		ci, err := t.commitInfo(ctx, l, v)
		if err != nil {
			return nil, err
		}
		out = append(out, ci)
	}
	return out, nil
}

func (t *Table) cacheCommitInfo(ci CommitInfo) {
	t.mu.Lock()
	t.commits[ci.Version] = ci
	t.mu.Unlock()
}

// commitInfo reads the commitInfo action of version v, or falls back to the
// file modification time. In-commit timestamps require commitInfo to be the
// first action, and writers put it first, so reading usually stops at the
// first line.
func (t *Table) commitInfo(ctx context.Context, l *logListing, v int64) (CommitInfo, error) {
	t.mu.Lock()
	ci, ok := t.commits[v]
	t.mu.Unlock()
	if ok {
		return ci, nil
	}
	fi, ok := l.commits[v]
	if !ok {
		if v > l.latest() || v < 0 {
			return CommitInfo{}, fmt.Errorf("%w: version %d of table %s: the latest version is %d", ErrVersionNotFound, v, t.root, l.latest())
		}
		if cp, ok := l.checkpointAt(v); ok {
			// NB: the commit was cleaned up but its checkpoint is kept; its
			// file time is the best timestamp left.
			return CommitInfo{Version: v, Timestamp: cp.files[0].ModTime.UTC(), TimestampSource: TimestampFileModification}, nil
		}
		return CommitInfo{}, fmt.Errorf("%w: version %d of table %s: commit file %s is missing", ErrVersionNotFound, v, t.root, commitName(v))
	}
	raw, err := t.readCommitInfoAction(ctx, fi)
	if err != nil {
		return CommitInfo{}, err
	}
	ci = newCommitInfo(v, raw, fi.ModTime)
	t.cacheCommitInfo(ci)
	return ci, nil
}

// readCommitInfoAction reads the lines of a commit file up to its
// commitInfo action (nil when it has none).
func (t *Table) readCommitInfoAction(ctx context.Context, fi FileInfo) (*rawCommitInfo, error) {
	f, err := t.openFile(ctx, fi.Location, "commit file "+fi.Name+" of table "+t.root.String())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(io.NewSectionReader(f, 0, f.Size()))
	for line := 1; ; line++ {
		l, err := r.ReadBytes('\n')
		if len(l) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil, nil
			}
			return nil, fmt.Errorf("delta: read %s: %w", fi.Location, err)
		}
		l = bytes.TrimSpace(l)
		if !bytes.HasPrefix(l, []byte(`{"commitInfo"`)) {
			continue
		}
		var a action
		if err := json.Unmarshal(l, &a); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorruptLog, fi.Location, line, describeJSONError(err))
		}
		return a.CommitInfo, nil
	}
}

// VersionAtOrAfter returns the first version committed at or after ts (the
// version a change-data start timestamp resolves to). A ts before the
// earliest retained commit gives the earliest version; a ts after the latest
// commit fails with ErrTimestampOutOfRange.
func (t *Table) VersionAtOrAfter(ctx context.Context, ts time.Time) (int64, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return 0, err
	}
	v, err := t.firstAtOrAfter(ctx, l, ts)
	if err != nil {
		return 0, err
	}
	if v > l.latest() {
		last, _ := t.commitInfo(ctx, l, l.latest())
		return 0, fmt.Errorf("%w: timestamp %s is after the latest commit of table %s (version %d at %s)",
			ErrTimestampOutOfRange, fmtTime(ts), t.root, l.latest(), fmtTime(last.Timestamp))
	}
	return v, nil
}

// VersionAtOrBefore returns the last version committed at or before ts (the
// version a change-data end timestamp, or time travel, resolves to). A ts
// before the earliest retained commit fails with ErrTimestampOutOfRange.
func (t *Table) VersionAtOrBefore(ctx context.Context, ts time.Time) (int64, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return 0, err
	}
	return t.lastAtOrBefore(ctx, l, ts)
}

// firstAtOrAfter binary-searches the earliest..latest commit timestamps for
// the first one >= ts and returns latest+1 when there is none.
//
// NB: the search assumes commit timestamps increase with the version, which
// In-Commit Timestamps guarantee and writer clocks give in practice. When they
// do not (a hand-edited or skewed log), the result is a version where the
// search crossed ts, as in Spark's In-Commit Timestamp lookup; delta-rs
// instead filters commits one by one, which can leave holes in the range.
func (t *Table) firstAtOrAfter(ctx context.Context, l *logListing, ts time.Time) (int64, error) {
	lo := l.earliest()
	if lo < 0 {
		return 0, l.gapError(t.root)
	}
	hi := l.latest() + 1
	for lo < hi {
		mid := lo + (hi-lo)/2
		ci, err := t.commitInfo(ctx, l, mid)
		if err != nil {
			return 0, err
		}
		if !ci.Timestamp.Before(ts) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// lastAtOrBefore returns the last version with timestamp <= ts, or an
// ErrTimestampOutOfRange error when even the earliest version is later.
func (t *Table) lastAtOrBefore(ctx context.Context, l *logListing, ts time.Time) (int64, error) {
	earliest := l.earliest()
	if earliest < 0 {
		return 0, l.gapError(t.root)
	}
	lo, hi := earliest, l.latest()+1
	for lo < hi { // first version with timestamp > ts
		mid := lo + (hi-lo)/2
		ci, err := t.commitInfo(ctx, l, mid)
		if err != nil {
			return 0, err
		}
		if ci.Timestamp.After(ts) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == earliest {
		first, _ := t.commitInfo(ctx, l, earliest)
		return 0, fmt.Errorf("%w: timestamp %s is before the earliest retained commit of table %s (version %d at %s)",
			ErrTimestampOutOfRange, fmtTime(ts), t.root, earliest, fmtTime(first.Timestamp))
	}
	return lo - 1, nil
}

func fmtTime(ts time.Time) string { return ts.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
