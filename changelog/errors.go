package changelog

import "errors"

// Sentinel errors. Messages quote Iceberg's own wording where Iceberg has
// the same error, so that users can search for them.
var (
	// ErrInvalidRange is wrapped for snapshot ranges that cannot be read:
	// a start that is not an ancestor of the end (rolled back, on another
	// branch, or expired), an unknown end snapshot, conflicting options.
	ErrInvalidRange = errors.New("invalid changelog range")
	// ErrRebuildNeeded is also wrapped when the range cannot be read
	// incrementally because history is gone or diverged: a consumer must
	// rebuild from the table's current state.
	ErrRebuildNeeded = errors.New("a full rebuild is needed")
	// ErrInvalidOptions is wrapped for option combinations the reference
	// rejects (net changes with update images, update images without
	// identifier columns, unorderable columns without identifiers).
	ErrInvalidOptions = errors.New("invalid changelog options")
	// ErrDuplicateIdentifier is wrapped when several rows share one
	// identifier where update images or per-key changes need it unique.
	ErrDuplicateIdentifier = errors.New("duplicate identifier")
)
