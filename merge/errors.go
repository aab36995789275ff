// Package merge applies changes to Iceberg tables by key: apply_changelog
// (upserts and deletes from a stream of change rows) and SQL MERGE INTO,
// copy-on-write or merge-on-read (position deletes, deletion vectors or
// equality deletes), committed exactly once with the caller's watermark.
//
// Apply and Merge commit one snapshot each (or none: an error commits
// nothing), through package commit: when another writer commits first they
// re-read the table and retry, and properties given with
// WithExpectedProperties are checked again at each attempt, so concurrent
// runs, also on one table, neither lose nor repeat each other's changes.
// Errors wrap the sentinels below, and expr's for a statement's
// expressions; test with errors.Is.
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
	// ErrBadMerge is wrapped for MERGE statements that cannot run against
	// the target and source: unknown or ambiguous columns, type errors,
	// conditions that are not boolean, values that cannot be assigned, an
	// ON condition without a join key, UPDATE SET * or INSERT * with
	// target columns missing from the source. The expr sentinel
	// (expr.ErrUnknownColumn, expr.ErrAmbiguousColumn, expr.ErrType...) is
	// wrapped too when the problem is an expression's.
	ErrBadMerge = errors.New("bad MERGE statement")
	// ErrNotNull is wrapped when an UPDATE or INSERT of a MERGE would put
	// a NULL into a NOT NULL column.
	ErrNotNull = errors.New("NULL in a NOT NULL column")
)
