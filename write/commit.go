package write

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floedata/floe/scan"
)

func newID() string { return uuid.NewString() }

// ErrNothingToCommit is returned by Stage for an empty change without
// properties to set.
var ErrNothingToCommit = errors.New("nothing to commit")

// Stage adds the change to a new transaction on the result's branch: one
// snapshot holding every file, plus the table properties props (for
// watermarks), so both land in one metadata commit. snapshotProps go into
// the snapshot summary.
func (r *Result) Stage(ctx context.Context, snapshotProps iceberg.Properties, props iceberg.Properties) (*table.Transaction, error) {
	if r.Empty() && len(props) == 0 {
		return nil, ErrNothingToCommit
	}
	branch := r.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	tx, err := r.Table.NewTransactionOnBranchWithError(branch)
	if err != nil {
		return nil, err
	}
	if err := r.StageOn(ctx, tx, snapshotProps, props); err != nil {
		return nil, err
	}
	return tx, nil
}

// StageOn adds the change (see Stage) to tx, a transaction on the
// result's branch that may already hold other changes of the same commit,
// such as the schema update of a rebuild.
func (r *Result) StageOn(ctx context.Context, tx *table.Transaction, snapshotProps iceberg.Properties, props iceberg.Properties) error {
	name := scan.FormatIdent(r.Table.Identifier())
	switch {
	case r.Empty():
	case len(r.RemoveData) > 0:
		add, err := assignFirstRowIDs(r.Table.Metadata(), r.AddData)
		if err != nil {
			return err
		}
		if err := tx.ReplaceFiles(ctx, r.RemoveData, add, r.RemoveDeletes, snapshotProps); err != nil {
			return fmt.Errorf("stage copy-on-write commit on %s: %w", name, err)
		}
	default:
		// RowDelta also serves plain appends: on v3 it assigns the new
		// files' first row ids, which AddDataFiles wants given.
		rd := tx.NewRowDelta(snapshotProps)
		rd.AddRows(r.AddData...)
		rd.AddDeletes(r.AddDeletes...)
		if len(r.RemoveDeletes) > 0 {
			rd.RemoveDeletes(r.RemoveDeletes...)
		}
		if err := rd.Commit(ctx); err != nil {
			return fmt.Errorf("stage merge-on-read commit on %s: %w", name, err)
		}
	}
	if len(props) > 0 {
		if err := tx.SetProperties(props); err != nil {
			return err
		}
	}
	return nil
}

// Commit stages the change (see Stage) and commits it. It removes no file
// on failure: the caller decides whether a retry reuses them (see
// package commit, which also cleans up).
func (r *Result) Commit(ctx context.Context, snapshotProps, props iceberg.Properties) (*table.Table, error) {
	tx, err := r.Stage(ctx, snapshotProps, props)
	if err != nil {
		return nil, err
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("commit to %s: %w", scan.FormatIdent(r.Table.Identifier()), err)
	}
	return tbl, nil
}
