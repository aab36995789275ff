package delta

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// Bound is one end of a change data range: a version or a timestamp. The zero
// Bound is unset.
type Bound struct {
	set       bool
	version   int64
	timestamp time.Time
	isTime    bool
}

// AtVersion returns the bound at version v.
func AtVersion(v int64) Bound { return Bound{set: true, version: v} }

// AtTimestamp returns the bound at timestamp ts. A start timestamp resolves
// to the first commit at or after it, an end timestamp to the last commit at
// or before it (both inclusive).
func AtTimestamp(ts time.Time) Bound { return Bound{set: true, timestamp: ts, isTime: true} }

// IsSet reports whether the bound was given.
func (b Bound) IsSet() bool { return b.set }

// Version returns the version of a version bound and whether b is one.
func (b Bound) Version() (int64, bool) { return b.version, b.set && !b.isTime }

// Timestamp returns the timestamp of a timestamp bound and whether b is one.
func (b Bound) Timestamp() (time.Time, bool) { return b.timestamp, b.set && b.isTime }

// String renders the bound for messages.
func (b Bound) String() string {
	switch {
	case !b.set:
		return "unset"
	case b.isTime:
		return "timestamp " + fmtTime(b.timestamp)
	}
	return "version " + strconv.FormatInt(b.version, 10)
}

// ChangesOptions selects the change data to read.
type ChangesOptions struct {
	// Start is the first version (or timestamp) of the range, inclusive.
	// Required.
	Start Bound
	// End is the last version (or timestamp) of the range, inclusive. Unset
	// means the latest version at the time of the call; a version after the
	// latest is clamped to the latest.
	End Bound
	// Columns lists the output columns: table columns by logical name and
	// any of _change_type, _commit_version, _commit_timestamp, in output
	// order. Nil means all table columns followed by the three change data
	// columns.
	Columns []string
	// AllowOutOfRange turns a start after the latest version (or a start
	// timestamp after the latest commit) into an empty result instead of an
	// error, for callers polling a table for new commits (delta-rs
	// allow_out_of_range, Spark
	// changeDataFeed.timestampOutOfRange.enabled).
	AllowOutOfRange bool
}

// VersionRange is a resolved change data range: versions Start to End
// inclusive, or no version at all when Empty.
type VersionRange struct {
	Start, End int64 // first and last version, inclusive
	Empty      bool  // no version at all (then Start and End are 0)
}

// ResolveRange resolves the bounds of opts to versions without reading any
// data, following Spark's rules: versions are inclusive; an unset end is the
// latest version; an end version after the latest is clamped; a start
// timestamp resolves to the first commit at or after it (the earliest
// version when it precedes the history), an end timestamp to the last commit
// at or before it. Errors: ErrInvalidRange (no start, negative version, end
// before start, start timestamp after end timestamp), ErrVersionNotFound
// (start after the latest version, or before the oldest version that can be
// rebuilt because log cleanup removed older commits), ErrTimestampOutOfRange
// (start timestamp after the latest commit, end timestamp before the
// earliest). With AllowOutOfRange a start after the latest version or commit
// gives an Empty range. When both bounds are timestamps that fall between
// the same two commits the range is Empty, not an error.
func (t *Table) ResolveRange(ctx context.Context, opts ChangesOptions) (VersionRange, error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return VersionRange{}, err
	}
	return t.resolveRange(ctx, l, opts)
}

func (t *Table) resolveRange(ctx context.Context, l *logListing, opts ChangesOptions) (VersionRange, error) {
	if !opts.Start.set {
		return VersionRange{}, fmt.Errorf("%w: table %s: a start version or timestamp is required", ErrInvalidRange, t.root)
	}
	latest, earliest := l.latest(), l.earliest()
	if earliest < 0 {
		return VersionRange{}, l.gapError(t.root)
	}
	var r VersionRange
	if opts.Start.isTime {
		ts := opts.Start.timestamp
		if opts.End.set && opts.End.isTime && ts.After(opts.End.timestamp) {
			return VersionRange{}, fmt.Errorf("%w: table %s: start timestamp %s is after end timestamp %s", ErrInvalidRange, t.root, fmtTime(ts), fmtTime(opts.End.timestamp))
		}
		v, err := t.firstAtOrAfter(ctx, l, ts)
		if err != nil {
			return VersionRange{}, err
		}
		if v > latest {
			if opts.AllowOutOfRange {
				return VersionRange{Empty: true}, nil
			}
			last, _ := t.commitInfo(ctx, l, latest)
			return VersionRange{}, fmt.Errorf("%w: table %s: start timestamp %s is after the latest commit (version %d at %s)",
				ErrTimestampOutOfRange, t.root, fmtTime(ts), latest, fmtTime(last.Timestamp))
		}
		r.Start = v
	} else {
		v := opts.Start.version
		switch {
		case v < 0:
			return VersionRange{}, fmt.Errorf("%w: table %s: start version %d is negative", ErrInvalidRange, t.root, v)
		case v > latest:
			if opts.AllowOutOfRange {
				return VersionRange{Empty: true}, nil
			}
			return VersionRange{}, fmt.Errorf("%w: table %s: start version %d is after the latest version %d", ErrVersionNotFound, t.root, v, latest)
		case v < earliest:
			return VersionRange{}, fmt.Errorf("%w: table %s: start version %d is before the earliest version that can be read, %d: the log history before it was cleaned up",
				ErrVersionNotFound, t.root, v, earliest)
		}
		r.Start = v
	}
	switch {
	case !opts.End.set:
		r.End = latest
	case opts.End.isTime:
		v, err := t.lastAtOrBefore(ctx, l, opts.End.timestamp)
		if err != nil {
			return VersionRange{}, fmt.Errorf("end of range: %w", err)
		}
		r.End = v
	default:
		v := opts.End.version
		if v < 0 {
			return VersionRange{}, fmt.Errorf("%w: table %s: end version %d is negative", ErrInvalidRange, t.root, v)
		}
		r.End = min(v, latest)
	}
	if r.End < r.Start {
		if opts.Start.isTime && opts.End.isTime {
			// NB: both timestamps fall between the same two commits; Spark
			// returns no rows (kernel-rs raises EmptyTimestampRange).
			return VersionRange{Empty: true}, nil
		}
		return VersionRange{}, fmt.Errorf("%w: table %s: end %s is before start %s",
			ErrInvalidRange, t.root, describeResolved(opts.End, r.End), describeResolved(opts.Start, r.Start))
	}
	return r, nil
}

func describeResolved(b Bound, v int64) string {
	if b.isTime {
		return fmt.Sprintf("%s (version %d)", b, v)
	}
	return b.String()
}

// Changes reads the Change Data Feed of the table between two bounds. The
// batches hold the columns of the end version's schema under logical names
// (or those named in opts.Columns) and the change data columns _change_type
// (string: insert, delete, update_preimage, update_postimage),
// _commit_version (int64) and _commit_timestamp (timestamp[us, UTC]).
//
// Per commit, following PROTOCOL.md and delta-spark's CDCReader:
//   - a commit with cdc actions is read from its change data files only,
//     _change_type from the files and partition values from the actions;
//   - otherwise add actions with dataChange=true give inserts and remove
//     actions with dataChange=true give deletes (OPTIMIZE and other
//     dataChange=false rewrites give nothing); an add and a remove of the
//     same path in one commit only changed its deletion vector, and give
//     deletes for the rows newly in the add's vector and inserts for rows
//     dropped from it; unpaired actions apply their own deletion vector;
//   - a MERGE whose operationMetrics report 0 rows inserted, updated and
//     deleted gives nothing (Spark's hot-fix for no-op merges);
//   - _commit_timestamp is the CommitInfo.Timestamp of the commit.
//
// Change types other than the four of the protocol, found in some change
// data files (update_pre/update_post in delta-spark's own tests), are
// passed through unchanged: the reference readers do the same.
//
// Change Data Feed must be recorded over the whole range (Spark's rule):
// enabled in the snapshot at the start version and not disabled by any
// metaData action up to the end, else ErrChangeDataNotRecorded naming the
// first version without it. kernel-rs checks the same versions; delta-rs
// checks only the start commit's metaData (and nothing when it has none).
// Every schema in force in the range must be readable with the end schema
// (only added columns; no type change, drop, rename or tightened
// nullability), else ErrIncompatibleSchemaChange, as Spark does by default.
// A commit file missing inside the range fails with ErrVersionNotFound.
//
// All this is checked, and the files to read are planned from the log,
// before Changes returns. The sequence then reads one file and one batch at
// a time; each batch belongs to the caller, who must Release it. Errors
// while reading (ErrFileNotFound when VACUUM deleted a file a retained
// commit names, corrupt files or deletion vectors) end the sequence with a
// nil batch and the error. The sequence can be ranged over once.
func (t *Table) Changes(ctx context.Context, opts ChangesOptions) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	l, err := t.listLog(ctx)
	if err != nil {
		return nil, nil, err
	}
	r, err := t.resolveRange(ctx, l, opts)
	if err != nil {
		return nil, nil, err
	}
	if r.Empty {
		snap, err := t.snapshotFrom(ctx, l, l.latest(), false)
		if err != nil {
			return nil, nil, err
		}
		spec, err := newReadSpec(snap.schema, &snap.metadata, opts.Columns, true)
		if err != nil {
			return nil, nil, fmt.Errorf("changes of table %s: %w", t.root, err)
		}
		return spec.schema, func(func(arrow.RecordBatch, error) bool) {}, nil
	}
	plan, err := t.planChanges(ctx, l, r)
	if err != nil {
		return nil, nil, err
	}
	spec, err := newReadSpec(plan.schema, plan.metadata, opts.Columns, true)
	if err != nil {
		return nil, nil, fmt.Errorf("changes of table %s versions %d to %d: %w", t.root, r.Start, r.End, err)
	}
	return spec.schema, t.readTasks(ctx, spec, plan.tasks), nil
}

// changePlan is the metadata-only part of a change data read.
type changePlan struct {
	schema   *StructType
	metadata *Metadata
	tasks    []readTask
}

// planChanges checks the range and turns its commits into read tasks.
func (t *Table) planChanges(ctx context.Context, l *logListing, r VersionRange) (*changePlan, error) {
	if missing := l.contiguous(r.Start, r.End); missing >= 0 {
		return nil, fmt.Errorf("%w: table %s: commit file %s of version %d, inside the range %d to %d, is missing",
			ErrVersionNotFound, t.root, commitName(missing), missing, r.Start, r.End)
	}
	start, err := t.snapshotFrom(ctx, l, r.Start, false)
	if err != nil {
		return nil, err
	}
	if !start.metadata.ChangeDataFeedEnabled() {
		return nil, fmt.Errorf("%w: table %s: change data was not recorded for version %d (delta.enableChangeDataFeed is not true in the snapshot at the start of range %d to %d)",
			ErrChangeDataNotRecorded, t.root, r.Start, r.Start, r.End)
	}
	type metaAt struct {
		version int64
		meta    *Metadata
	}
	metas := []metaAt{{r.Start, &start.metadata}}
	endMeta := &start.metadata
	var tasks []readTask
	for v := r.Start; v <= r.End; v++ {
		c, err := t.readCommit(ctx, l.commits[v], v)
		if err != nil {
			return nil, err
		}
		if c.protocol != nil {
			if err := t.checkProtocol(c.protocol, v); err != nil {
				return nil, err
			}
		}
		if c.metadata != nil {
			if !c.metadata.ChangeDataFeedEnabled() {
				return nil, fmt.Errorf("%w: table %s: change data was not recorded for version %d (its metaData disables delta.enableChangeDataFeed inside range %d to %d)",
					ErrChangeDataNotRecorded, t.root, v, r.Start, r.End)
			}
			if v > r.Start {
				metas = append(metas, metaAt{v, c.metadata})
			}
			endMeta = c.metadata
		}
		// Plan as we go, so only the tasks stay in memory, not the actions.
		if err := t.planCommit(c, len(endMeta.PartitionColumns) > 0, &tasks); err != nil {
			return nil, err
		}
	}
	endSchema, err := ParseSchema(endMeta.SchemaString)
	if err != nil {
		return nil, fmt.Errorf("table %s version %d: %w", t.root, r.End, err)
	}
	mode := endMeta.ColumnMappingMode()
	for _, m := range metas {
		if m.meta == endMeta || strings.TrimSpace(m.meta.SchemaString) == strings.TrimSpace(endMeta.SchemaString) {
			continue
		}
		s, err := ParseSchema(m.meta.SchemaString)
		if err != nil {
			return nil, fmt.Errorf("table %s version %d: %w", t.root, m.version, err)
		}
		if why := readCompatible(s, endSchema, mode); why != "" {
			return nil, fmt.Errorf("%w: table %s: the schema at version %d cannot be read with the schema of the end version %d: %s",
				ErrIncompatibleSchemaChange, t.root, m.version, r.End, why)
		}
	}
	return &changePlan{schema: endSchema, metadata: endMeta, tasks: tasks}, nil
}

// planCommit appends the read tasks of one commit.
func (t *Table) planCommit(c *commitActions, partitioned bool, tasks *[]readTask) error {
	base := readTask{version: c.version, timestamp: c.info.Timestamp}
	if len(c.cdcs) > 0 {
		for _, cdc := range c.cdcs {
			loc, err := t.root.resolve(cdc.Path)
			if err != nil {
				return fmt.Errorf("table %s version %d: cdc %q: %w", t.root, c.version, cdc.Path, err)
			}
			task := base
			task.location = loc
			task.what = fmt.Sprintf("change data file %s of table %s version %d", cdc.Path, t.root, c.version)
			task.partition = cdc.PartitionValues
			*tasks = append(*tasks, task)
		}
		return nil
	}
	if skipNoopMerge(c.rawInfo) {
		return nil
	}
	type addAt struct {
		add *AddFile
		loc string
	}
	adds := map[string]int{}
	var addList []addAt
	for _, a := range c.adds {
		if !a.DataChange {
			continue
		}
		loc, err := t.root.resolve(a.Path)
		if err != nil {
			return fmt.Errorf("table %s version %d: add %q: %w", t.root, c.version, a.Path, err)
		}
		adds[loc] = len(addList)
		addList = append(addList, addAt{a, loc})
	}
	paired := map[string]bool{}
	var inserts []readTask
	for _, rm := range c.removes {
		if !rm.DataChange {
			continue
		}
		loc, err := t.root.resolve(rm.Path)
		if err != nil {
			return fmt.Errorf("table %s version %d: remove %q: %w", t.root, c.version, rm.Path, err)
		}
		pv := rm.PartitionValues
		if pv == nil && partitioned {
			pv = hivePartitionValues(rm.Path)
		}
		del := base
		del.location = loc
		del.changeType = ChangeDelete
		del.partition = pv
		del.what = fmt.Sprintf("data file %s of table %s removed in version %d", rm.Path, t.root, c.version)
		if i, ok := adds[loc]; ok && !paired[loc] {
			// NB: the same file removed and added again in one commit only
			// changed its deletion vector. Rows newly deleted are in the
			// add's vector but not the remove's; rows restored the reverse.
			paired[loc] = true
			add := addList[i].add
			del.partition = add.PartitionValues
			del.sel = selection{include: true, dv: add.DeletionVector, minus: rm.DeletionVector}
			ins := del
			ins.changeType = ChangeInsert
			ins.what = fmt.Sprintf("data file %s of table %s (deletion vector changed in version %d)", rm.Path, t.root, c.version)
			ins.sel = selection{include: true, dv: rm.DeletionVector, minus: add.DeletionVector}
			*tasks = append(*tasks, del)
			inserts = append(inserts, ins)
			continue
		}
		del.sel = selection{dv: rm.DeletionVector}
		*tasks = append(*tasks, del)
	}
	*tasks = append(*tasks, inserts...)
	for _, a := range addList {
		if paired[a.loc] {
			continue
		}
		ins := base
		ins.location = a.loc
		ins.changeType = ChangeInsert
		ins.partition = a.add.PartitionValues
		ins.sel = selection{dv: a.add.DeletionVector}
		ins.what = fmt.Sprintf("data file %s of table %s added in version %d", a.add.Path, t.root, c.version)
		*tasks = append(*tasks, ins)
	}
	return nil
}

// skipNoopMerge is delta-spark's CDCReader.shouldSkipFileActionsInCommit: a
// MERGE that reports 0 target rows inserted, updated and deleted rewrote
// files without changing data and yields no change rows. Missing metrics
// mean no skip.
func skipNoopMerge(ci *rawCommitInfo) bool {
	if ci == nil || ci.Operation != "MERGE" {
		return false
	}
	info := newCommitInfo(0, ci, time.Time{})
	for _, k := range []string{"numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted"} {
		if v, ok := info.OperationMetrics[k]; !ok || v != "0" {
			return false
		}
	}
	return true
}
