// Package write produces the files of a row-level change to an Iceberg
// table and commits them: copy-on-write rewrites that read every file they
// replace with its existing delete files applied (iceberg-go's own rewrite
// ignores them and resurrects deleted rows), merge-on-read position deletes
// (v2) and deletion vectors (v3, merged with a file's existing vector), and
// new data files, all in one snapshot.
package write

import (
	"fmt"
	"math"
	"strconv"
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
	// Auto chooses CopyOnWrite or MergeOnRead per change from the fraction
	// of the touched files' live rows the change touches (see Choose). A
	// Result's Mode is never Auto: it is the mode chosen.
	Auto
)

func (m Mode) String() string {
	switch m {
	case MergeOnRead:
		return "merge-on-read"
	case Auto:
		return "auto"
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

// floe's own table properties: PropWriteMode, when set, chooses the mode
// of every row-level operation floe writes, over Iceberg's three (which
// other engines keep following); its value may be auto. PropRewriteRatio
// is auto's threshold (see Choose).
const (
	PropWriteMode    = "floe.write.mode"
	PropRewriteRatio = "floe.write.auto.rewrite-ratio"
)

// DefaultRewriteRatio is auto's threshold when the table does not set
// floe.write.auto.rewrite-ratio: a change that touches at least this
// fraction of the live rows of the files it touches rewrites them. From
// BenchmarkWriteMode (docs/benchmarks.md, section 13): deletes cost 2-10x
// less to write at every fraction measured, but from a quarter of a file
// on, a scan of the file costs 2-3x the rewritten file's, so a few reads
// repay the rewrite; and it is the default floe.compaction.deleted-ratio,
// so that auto never writes deletes that a pipeline's automatic compaction
// would rewrite right after the build.
const DefaultRewriteRatio = 0.2

// ModeFor returns the mode the table's properties choose for op:
// floe.write.mode when set, else write.delete.mode, write.update.mode or
// write.merge.mode, copy-on-write by default. An unknown value is an
// error naming the property.
func ModeFor(props iceberg.Properties, op Op) (Mode, error) {
	if v, ok := props[PropWriteMode]; ok {
		return ParseFloeMode(v, PropWriteMode)
	}
	key := PropDeleteMode
	switch op {
	case OpUpdate:
		key = PropUpdateMode
	case OpMerge:
		key = PropMergeMode
	}
	return ParseMode(props.Get(key, "copy-on-write"), key)
}

// ParseMode parses Iceberg's "copy-on-write" or "merge-on-read"; what
// names the setting in the error. auto is floe's (ParseFloeMode): the
// error says so, as Iceberg's engines refuse the value.
func ParseMode(s, what string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "copy-on-write", "cow", "":
		return CopyOnWrite, nil
	case "merge-on-read", "mor":
		return MergeOnRead, nil
	case "auto":
		return 0, fmt.Errorf("%s = %q: want copy-on-write or merge-on-read (auto is floe's own: set %s=auto, which Iceberg's other engines ignore)", what, s, PropWriteMode)
	}
	return 0, fmt.Errorf("%s = %q: want copy-on-write or merge-on-read", what, s)
}

// ParseFloeMode parses "copy-on-write", "merge-on-read" or "auto"; what
// names the setting in the error.
func ParseFloeMode(s, what string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "copy-on-write", "cow":
		return CopyOnWrite, nil
	case "merge-on-read", "mor":
		return MergeOnRead, nil
	case "auto":
		return Auto, nil
	}
	return 0, fmt.Errorf("%s = %q: want copy-on-write, merge-on-read or auto", what, s)
}

// CheckModeProperty checks the value of a table property that chooses a
// write mode (the three of Iceberg and floe.write.mode) or auto's
// threshold; other keys are not checked.
func CheckModeProperty(key, value string) error {
	switch key {
	case PropDeleteMode, PropUpdateMode, PropMergeMode:
		_, err := ParseMode(value, key)
		return err
	case PropWriteMode:
		_, err := ParseFloeMode(value, key)
		return err
	case PropRewriteRatio:
		_, err := parseRatio(value)
		return err
	}
	return nil
}

// RewriteRatioFor returns auto's threshold: the table's
// floe.write.auto.rewrite-ratio, else DefaultRewriteRatio.
func RewriteRatioFor(props iceberg.Properties) (float64, error) {
	v, ok := props[PropRewriteRatio]
	if !ok {
		return DefaultRewriteRatio, nil
	}
	return parseRatio(v)
}

func parseRatio(v string) (float64, error) {
	r, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		return 0, fmt.Errorf("%s = %q: want a fraction from 0 to 1 (0: always rewrite, 1: rewrite only files whose every row the change touches)", PropRewriteRatio, v)
	}
	return r, nil
}

// FileTouch is what a change does to one data file: Touched of its Live
// rows.
type FileTouch struct {
	Touched, Live int64
}

// Choose is auto's decision for one change, from the files it touches:
// copy-on-write when the touched rows are at least ratio of the live rows
// of those files, merge-on-read otherwise. The fraction is returned with
// the mode (0 when nothing is touched, which chooses merge-on-read: there
// is nothing to write either way).
//
// The decision is one per change, not per file: iceberg-go v0.7 cannot
// commit a snapshot that both removes data files and adds new delete files
// (RowDelta removes no data file; ReplaceFilesWithDeleteFiles only adds
// delete files that inherit the sequence number of the ones they replace,
// a rewrite of deletes, not new ones), and two snapshots would show a
// half-applied change in between. Pooling the rows weighs each file by
// its size, as the cost of either choice does.
func Choose(files []FileTouch, ratio float64) (Mode, float64) {
	var touched, live int64
	for _, f := range files {
		if f.Touched == 0 {
			continue
		}
		touched += f.Touched
		live += max(f.Live, f.Touched)
	}
	if touched == 0 {
		return MergeOnRead, 0
	}
	frac := float64(touched) / float64(live)
	if frac >= ratio {
		return CopyOnWrite, frac
	}
	return MergeOnRead, frac
}
