package deltasync

import "errors"

// Sentinel errors. Errors returned by Sync that fall into one of these
// classes wrap the sentinel with %w, with a message naming the Delta table,
// the version, the Iceberg table and the column concerned; test them with
// errors.Is. Errors of the packages Sync builds on pass through wrapped as
// they are: delta.ErrChangeDataNotRecorded, delta.ErrVersionNotFound,
// delta.ErrCorruptLog, delta.ErrFileNotFound, delta.ErrUnsupportedFeature
// and the others of package delta for the source, commit.ErrWatermarkMoved
// when another run applied changes first, catalog.ErrNoSuchNamespace and
// friends for the target. Whatever the error, Sync commits nothing for the
// run that failed (earlier batches of the same run stay committed, each with
// its own watermark).
var (
	// ErrNoEqualityColumns reports that no equality columns were given and
	// the Iceberg table has no identifier fields to default to (or does not
	// exist yet, and creating it needs them).
	ErrNoEqualityColumns = errors.New("deltasync: no equality columns")

	// ErrSchemaMismatch reports that the Delta schema no longer matches the
	// Iceberg table. The message lists every differing column.
	ErrSchemaMismatch = errors.New("deltasync: Delta schema does not match the Iceberg table")

	// ErrSourceMismatch reports an Iceberg table synced from another Delta
	// table (another location, or a Delta table that was deleted and
	// recreated at the same location, which gives it another table id).
	ErrSourceMismatch = errors.New("deltasync: Iceberg table is synced from another Delta table")

	// ErrTargetNotEmpty reports an existing Iceberg table that holds rows but
	// no sync watermark: migrating the Delta snapshot into it would mix the
	// two, so the first run refuses.
	ErrTargetNotEmpty = errors.New("deltasync: Iceberg table already holds rows but was never synced")

	// ErrUnknownChangeType reports a _change_type value outside the four of
	// the Delta protocol (insert, update_preimage, update_postimage,
	// delete).
	ErrUnknownChangeType = errors.New("deltasync: unknown change type")

	// ErrNullKey reports a row whose equality column is NULL: such a row
	// cannot be matched by key, and identifier fields are required.
	ErrNullKey = errors.New("deltasync: NULL in an equality column")

	// ErrDuplicateKey reports two live rows with the same equality column
	// values in the Delta table (Delta has no primary key constraint): the
	// Iceberg table keyed on those columns could not equal it.
	ErrDuplicateKey = errors.New("deltasync: duplicate key in the Delta table")

	// ErrInvalidOptions reports options that make no sense together (see
	// Options).
	ErrInvalidOptions = errors.New("deltasync: invalid options")
)
