// Package merge applies changes to Iceberg tables by key: apply_changelog
// (upserts and deletes from a stream of change rows) and SQL MERGE INTO,
// copy-on-write or merge-on-read (position deletes, deletion vectors or
// equality deletes), committed exactly once with the caller's watermark.
package merge

import "errors"

// Sentinel errors.
var (
	// ErrCardinality is Spark's MERGE_CARDINALITY_VIOLATION: several
	// changes (or source rows) for one key (or target row).
	ErrCardinality = errors.New("MERGE_CARDINALITY_VIOLATION")
	// ErrBadChanges is wrapped for change rows that cannot be applied: a
	// missing or unknown change type, NULL keys, unknown key columns.
	ErrBadChanges = errors.New("bad changes")
	// ErrBadMerge is wrapped for MERGE statements that cannot run.
	ErrBadMerge = errors.New("bad MERGE statement")
)
