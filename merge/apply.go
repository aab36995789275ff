package merge

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/write"
)

// Change types accepted in the change type column.
const (
	Insert       = "INSERT"
	Delete       = "DELETE"
	UpdateBefore = "UPDATE_BEFORE"
	UpdateAfter  = "UPDATE_AFTER"
)

// DeleteMode chooses how rows are removed.
type DeleteMode int

const (
	// DeleteAuto follows the table: write.merge.mode copy-on-write rewrites
	// files; merge-on-read writes position deletes (v2) or deletion vectors
	// (v3).
	DeleteAuto DeleteMode = iota
	// DeletePosition writes position deletes or deletion vectors, found by
	// reading the key columns of candidate files.
	DeletePosition
	// DeleteEquality writes equality deletes of the keys without reading
	// the table (the cheapest write, as Flink and Beam do); readers pay.
	DeleteEquality
	// DeleteByFraction is write mode auto (write.Auto) whatever the table
	// says: copy-on-write when the change touches at least the table's
	// floe.write.auto.rewrite-ratio of the live rows of the files it
	// touches, position deletes or deletion vectors otherwise.
	DeleteByFraction
)

// ParseDeleteMode parses "" (the table's write mode), "position",
// "equality" or "auto" (DeleteByFraction).
func ParseDeleteMode(s string) (DeleteMode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return DeleteAuto, nil
	case "position", "positional":
		return DeletePosition, nil
	case "equality":
		return DeleteEquality, nil
	case "auto":
		return DeleteByFraction, nil
	}
	return 0, fmt.Errorf("delete mode %q: want position, equality or auto", s)
}

// writeMode is the write mode of a change to a table with props under
// delete mode m.
func writeMode(props iceberg.Properties, m DeleteMode) (write.Mode, error) {
	switch m {
	case DeletePosition, DeleteEquality:
		return write.MergeOnRead, nil
	case DeleteByFraction:
		return write.Auto, nil
	}
	return write.ModeFor(props, write.OpMerge)
}

// Options configure Apply and Merge. ChangeTypeColumn and SequenceColumn
// apply to Apply only; Merge refuses DeleteEquality.
type Options struct {
	// ChangeTypeColumn holds INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE
	// (default "_change_type").
	ChangeTypeColumn string
	// SequenceColumn, when set, orders the changes of one key: they are
	// collapsed per key in sequence order, ties broken UPDATE_BEFORE <
	// DELETE < UPDATE_AFTER < INSERT, so raw CDC events apply correctly.
	SequenceColumn string
	DeleteMode     DeleteMode
	Branch         string
	// CommitProperties are table properties committed in the same commit
	// as the changes (watermarks).
	CommitProperties iceberg.Properties
	// ExpectProperties must hold on the table the changes are applied to;
	// otherwise nothing is committed (commit.ErrWatermarkMoved).
	ExpectProperties map[string]string
	// SnapshotProperties go into the snapshot summary.
	SnapshotProperties iceberg.Properties
	// CommitEmpty commits CommitProperties even when there is no change.
	CommitEmpty bool
	// ReplaceTarget (Merge only) runs the statement as if the target were
	// empty and replaces its rows with the result, in one commit: a full
	// rebuild through the same statement.
	ReplaceTarget bool
	// NonIdentifierKey (Apply only) allows key columns that are not the
	// table's identifier fields (see WithNonIdentifierKey).
	NonIdentifierKey bool
	// MemoryBudget and TempDir: see WithMemoryBudget and WithTempDir.
	MemoryBudget int64
	TempDir      string
	// InsertsMustBeNew (Apply only) refuses a change that adds a key the
	// table already holds (see WithInsertsMustBeNew).
	InsertsMustBeNew bool
}

// Option sets an Option field.
type Option func(*Options)

// WithCommitProperties commits props (watermarks) with the changes, in one
// Iceberg commit.
func WithCommitProperties(props map[string]string) Option {
	return func(o *Options) {
		if o.CommitProperties == nil {
			o.CommitProperties = iceberg.Properties{}
		}
		for k, v := range props {
			o.CommitProperties[k] = v
		}
	}
}

// WithExpectedProperties makes the commit conditional on the table's
// properties having these values (compare-and-swap on a watermark).
func WithExpectedProperties(props map[string]string) Option {
	return func(o *Options) { o.ExpectProperties = props }
}

// WithSequenceColumn collapses the changes per key in the order of col.
func WithSequenceColumn(col string) Option { return func(o *Options) { o.SequenceColumn = col } }

// WithChangeTypeColumn names the change type column.
func WithChangeTypeColumn(col string) Option { return func(o *Options) { o.ChangeTypeColumn = col } }

// WithDeleteMode chooses how rows are removed.
func WithDeleteMode(m DeleteMode) Option { return func(o *Options) { o.DeleteMode = m } }

// WithBranch writes to a branch.
func WithBranch(b string) Option { return func(o *Options) { o.Branch = b } }

// WithSnapshotProperties adds properties to the snapshot summary.
func WithSnapshotProperties(p map[string]string) Option {
	return func(o *Options) {
		if o.SnapshotProperties == nil {
			o.SnapshotProperties = iceberg.Properties{}
		}
		for k, v := range p {
			o.SnapshotProperties[k] = v
		}
	}
}

// WithReplaceTarget makes Merge treat the target as empty and replace its
// rows with the statement's result.
func WithReplaceTarget() Option { return func(o *Options) { o.ReplaceTarget = true } }

// WithCommitEmpty commits the commit properties even without changes.
func WithCommitEmpty() Option { return func(o *Options) { o.CommitEmpty = true } }

// Result says what Apply did.
type Result struct {
	Upserts, Deletes int64 // actions applied (after collapsing)
	Matched          int64 // keys found in the table (position and copy-on-write modes)
	// FilesScanned is the number of data files whose key columns were
	// read to find the changed rows (position and copy-on-write modes): the
	// candidates left after pruning by partition values and column
	// statistics. Equality mode leaves it 0.
	FilesScanned int
	RowsAdded    int64
	RowsRemoved  int64
	// Spilled is the number of bytes of change rows and keys written to
	// temporary files (0: they stayed in memory; see WithMemoryBudget).
	Spilled    int64
	Mode       string
	SnapshotID int64
	Attempts   int
	Committed  bool
	// CommitID is the commit's id (commit.PropCommitID); AnswerLost
	// reports that the catalog's answer was lost and floe found the commit
	// on the table (see package commit).
	CommitID   string
	AnswerLost bool
	Table      *table.Table
}

// metadataColumns are changelog and CDF columns that may ride along with
// change rows; Apply ignores them.
var metadataColumns = []string{"_change_ordinal", "_commit_snapshot_id", "_commit_version", "_commit_timestamp"}

// ChangeColumns are the columns a file of changes may carry beyond the
// table's columns (target): the change type column, the sequence column
// when it is not a table column, and changelog and Change Data Feed
// metadata columns, which Apply ignores. Readers of change files pass them
// as extra columns.
func ChangeColumns(target *arrow.Schema, changeType, sequence string) []arrow.Field {
	if changeType == "" {
		changeType = "_change_type"
	}
	// NB: required, so that a reader reports a file without them as
	// missing the column, and a NULL with its line.
	out := []arrow.Field{{Name: changeType, Type: arrow.BinaryTypes.String}}
	if sequence != "" && len(target.FieldIndices(sequence)) == 0 {
		out = append(out, arrow.Field{Name: sequence, Type: arrow.PrimitiveTypes.Int64})
	}
	for _, m := range []arrow.Field{
		{Name: "_change_ordinal", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "_commit_snapshot_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_commit_version", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	} {
		if m.Name != changeType && m.Name != sequence {
			out = append(out, m)
		}
	}
	return out
}

// Apply upserts and deletes rows of the table ident by key, from change
// rows (schema src): INSERT and UPDATE_AFTER upsert the row, DELETE
// removes the key, UPDATE_BEFORE is ignored (without a sequence column).
// Change columns match the table's by name; missing nullable columns are
// NULL; safe widenings are applied; anything else is an error naming the
// column, and nothing is committed. At most one action per key (Spark's
// MERGE cardinality rule) unless a sequence column collapses them. Data
// files, delete files and the commit properties land in one commit; on
// conflicts with other writers the commit is retried (see package commit).
func Apply(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, src *arrow.Schema, changes iter.Seq2[arrow.RecordBatch, error], keys []string, opts ...Option) (*Result, error) {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	if o.ChangeTypeColumn == "" {
		o.ChangeTypeColumn = "_change_type"
	}
	name := catalog.FormatName(ident)
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	cs, err := collect(ctx, tbl, src, changes, keys, &o)
	if err != nil {
		return nil, fmt.Errorf("apply to %s: %w", name, err)
	}
	defer cs.release()
	res := &Result{}
	mode, err := writeMode(tbl.Properties(), o.DeleteMode)
	if err != nil {
		return nil, err
	}
	res.Mode = mode.String()
	if o.DeleteMode == DeleteEquality {
		res.Mode = "merge-on-read (equality deletes)"
	}
	// The changes are reduced to one action per key at the first attempt,
	// as their upserted rows are written. Inserts (and equality deletes)
	// are written once, at the first attempt, and reused by every later
	// one; package commit owns them.
	var insertFiles, deleteFiles []iceberg.DataFile
	var acts actionKeys
	defer func() {
		if acts != nil {
			acts.release()
		}
	}()
	var found *tableMatch
	var eq eqDeletes
	written := false
	out, err := commit.Run(ctx, cat, ident, commit.Options{
		Branch:             o.Branch,
		SnapshotProperties: withOp(o.SnapshotProperties, "apply"),
		SetProperties:      o.CommitProperties,
		Expect:             o.ExpectProperties,
		CommitEmpty:        o.CommitEmpty,
	}, func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		// pending waits for the upserted rows' files while they are being
		// written beside the deletes and the first match pass.
		var pending func() ([]iceberg.DataFile, error)
		own := func() {
			if pending != nil {
				files, _ := pending()
				reuse.Own(paths(files)...)
				pending = nil
			}
		}
		if !written {
			written = true
			var err error
			acts, pending, err = cs.writeUpserts(ctx, tbl, res)
			if err != nil {
				own()
				return nil, err
			}
		}
		// Equality deletes are written at the first attempt; a later one
		// adds those of data files committed since (see equalityDeletes).
		if o.DeleteMode == DeleteEquality && acts.count() > 0 {
			files, err := cs.equalityDeletes(ctx, tbl, o.Branch, acts, &eq)
			reuse.Own(paths(files)...)
			deleteFiles = eq.files
			if err != nil {
				own()
				return nil, err
			}
		}
		req := write.Request{Table: tbl, Branch: o.Branch, Mode: mode, InsertFiles: insertFiles, DeleteFiles: deleteFiles, Reuse: reuse}
		if err := cs.strict.checkTable(ctx, tbl, o.Branch, o.DeleteMode != DeleteEquality); err != nil {
			own()
			return nil, err
		}
		if o.DeleteMode != DeleteEquality && acts.count() > 0 {
			req.Filter = acts.filter(tbl.Schema())
			var err error
			if found, err = cs.matchTable(ctx, tbl, o.Branch, req.Filter, acts, found); err != nil {
				own()
				return nil, err
			}
			// The batches hold the key columns in key order (MatchColumns).
			req.Visitor = &write.Visitor{MatchColumns: cs.keyNames, Match: cs.strict.match(found.match)}
		}
		r, err := write.Prepare(ctx, req)
		if pending != nil {
			files, werr := pending()
			pending = nil
			insertFiles = files
			reuse.Own(paths(files)...)
			if err == nil && werr != nil {
				err = werr
			}
			if err == nil {
				r.AddData = append(r.AddData, files...)
				for _, f := range files {
					r.RowsAdded += f.Count()
				}
			}
		}
		if err != nil {
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return nil, fmt.Errorf("apply to %s: %w", name, err)
	}
	res.Committed, res.SnapshotID, res.Attempts, res.Table = out.Committed, out.SnapshotID, out.Attempts, out.Table
	res.CommitID, res.AnswerLost = out.CommitID, out.AnswerLost
	if found != nil {
		res.Matched = found.found()
	}
	if out.Result != nil {
		res.RowsAdded, res.RowsRemoved = out.Result.RowsAdded, out.Result.RowsRemoved
		res.FilesScanned = out.Result.FilesScanned
		if mode == write.Auto {
			res.Mode = "auto: " + out.Result.Mode.String()
		}
	}
	return res, nil
}

func withOp(p iceberg.Properties, op string) iceberg.Properties {
	out := iceberg.Properties{"floe.operation": op}
	for k, v := range p {
		out[k] = v
	}
	return out
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

func seqInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
