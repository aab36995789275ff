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
