package tableops

import "github.com/floedata/floe/internal/write"

// Mode is how a row-level change is written, as the table's
// write.delete.mode, write.update.mode and write.merge.mode properties
// choose it for each operation (copy-on-write by default); Outcome.Mode
// reports the one used. Its String is the property value.
type Mode = write.Mode

// The write modes.
const (
	// CopyOnWrite rewrites every data file that holds a changed row.
	CopyOnWrite = write.CopyOnWrite
	// MergeOnRead writes delete files (position deletes on v2, deletion
	// vectors on v3) next to the untouched data files.
	MergeOnRead = write.MergeOnRead
)
