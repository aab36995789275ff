package delta

import "errors"

// Sentinel errors. Every error returned by this package that falls into one of
// these classes wraps the sentinel with %w, together with a message naming the
// table, version, file and line concerned, so callers test the class with
// errors.Is and show the message to people.
var (
	// ErrNotATable reports a location without a Delta log (no _delta_log
	// directory, or one that holds no commit or checkpoint).
	ErrNotATable = errors.New("delta: not a Delta table")

	// ErrVersionNotFound reports a version that cannot be read: it is after
	// the latest commit, its history was cleaned up (commits before the oldest
	// retained checkpoint were deleted), or a commit file inside the requested
	// range is missing.
	ErrVersionNotFound = errors.New("delta: version not found")

	// ErrInvalidRange reports a change-data range that makes no sense: no
	// start bound, an end before the start, or both a version and a timestamp
	// given for the same bound.
	ErrInvalidRange = errors.New("delta: invalid change data range")

	// ErrTimestampOutOfRange reports a timestamp bound outside the table's
	// history: a start after the latest commit, or an end before the earliest
	// retained commit.
	ErrTimestampOutOfRange = errors.New("delta: timestamp out of the table's history")

	// ErrChangeDataNotRecorded reports that Change Data Feed was not enabled
	// (delta.enableChangeDataFeed) for a version of the requested range.
	ErrChangeDataNotRecorded = errors.New("delta: change data was not recorded")

	// ErrIncompatibleSchemaChange reports a schema change inside a change-data
	// range that cannot be read with the end version's schema (a dropped or
	// renamed column, a changed type, or a column that became non-nullable).
	ErrIncompatibleSchemaChange = errors.New("delta: read-incompatible schema change in range")

	// ErrUnsupportedFeature reports a table that needs a reader version, a
	// reader table feature or a data type this package does not implement.
	ErrUnsupportedFeature = errors.New("delta: unsupported table feature")

	// ErrCorruptLog reports a malformed transaction log: a commit line that is
	// not valid JSON, an action with missing or ill-typed fields, an
	// unreadable checkpoint, an invalid schema string or partition value.
	ErrCorruptLog = errors.New("delta: corrupt transaction log")

	// ErrCorruptDeletionVector reports a deletion vector whose size, magic
	// number, checksum, encoding or cardinality does not match its descriptor.
	ErrCorruptDeletionVector = errors.New("delta: corrupt deletion vector")

	// ErrFileNotFound reports a file the log refers to (data, change data,
	// deletion vector, checkpoint sidecar) that does not exist, for example
	// because VACUUM deleted it.
	ErrFileNotFound = errors.New("delta: file not found")

	// ErrPathEscapesRoot reports a file path in the log that resolves outside
	// the table root (through "..", or an absolute URI elsewhere).
	ErrPathEscapesRoot = errors.New("delta: path escapes the table root")
)

// More sentinel errors.
var (
	// ErrColumnNotFound reports a projected column that is not in the schema.
	ErrColumnNotFound = errors.New("delta: column not found")

	// ErrCorruptDataFile reports a data or change data file that is not
	// readable Parquet or lacks a column it must have.
	ErrCorruptDataFile = errors.New("delta: corrupt data file")
)
