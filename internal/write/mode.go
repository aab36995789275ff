// Package write produces the files of a row-level change to an Iceberg
// table and commits them: copy-on-write rewrites that read every file they
// replace with its existing delete files applied (iceberg-go's own rewrite
// ignores them and resurrects deleted rows), merge-on-read position deletes
// (v2) and deletion vectors (v3, merged with a file's existing vector), and
// new data files, all in one snapshot.
package write

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// Mode is how row-level changes are written.
type Mode int

const (
	// CopyOnWrite rewrites every data file that holds a changed row.
	CopyOnWrite Mode = iota
	// MergeOnRead writes delete files (position deletes on v2, deletion
	// vectors on v3) next to the untouched data files.
	MergeOnRead
)

func (m Mode) String() string {
	if m == MergeOnRead {
		return "merge-on-read"
	}
	return "copy-on-write"
}

// Op is the kind of row-level operation, which picks the table property
// that chooses the mode, as in Iceberg.
type Op int

// The row-level operations.
const (
	OpDelete Op = iota
	OpUpdate
	OpMerge
)

// Table properties choosing the mode per operation (Iceberg's own).
const (
	PropDeleteMode = "write.delete.mode"
	PropUpdateMode = "write.update.mode"
	PropMergeMode  = "write.merge.mode"
)

// ModeFor returns the mode the table's properties choose for op:
// write.delete.mode, write.update.mode or write.merge.mode, copy-on-write
// by default. An unknown value is an error naming the property.
func ModeFor(props iceberg.Properties, op Op) (Mode, error) {
	key := PropDeleteMode
	switch op {
	case OpUpdate:
		key = PropUpdateMode
	case OpMerge:
		key = PropMergeMode
	}
	return ParseMode(props.Get(key, "copy-on-write"), key)
}

// ParseMode parses "copy-on-write" or "merge-on-read"; what names the
// setting in the error.
func ParseMode(s, what string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "copy-on-write", "cow", "":
		return CopyOnWrite, nil
	case "merge-on-read", "mor":
		return MergeOnRead, nil
	}
	return 0, fmt.Errorf("%s = %q: want copy-on-write or merge-on-read", what, s)
}
