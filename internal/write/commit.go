package write

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floedata/floe/internal/scan"
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
	// Pin the branch head the change was computed on: if another writer
	// commits first, the commit fails as a conflict (and the caller
	// recomputes) instead of iceberg-go replaying it on the new head when
	// the table sets commit.retry.num-retries.
	if err := tx.AssertRefSnapshotID(branch); err != nil {
		return nil, err
	}
	if len(r.Summary) > 0 {
		sp := iceberg.Properties{}
		for k, v := range r.Summary {
			sp[k] = v
		}
		for k, v := range snapshotProps {
			sp[k] = v
		}
		snapshotProps = sp
	}
	name := scan.FormatIdent(r.Table.Identifier())
	if r.Prestage != nil {
		if err := r.Prestage(tx); err != nil {
			return nil, fmt.Errorf("stage commit on %s: %w", name, err)
		}
	}
	switch {
	case r.NoFiles():
	case r.Stager != nil:
		if err := r.Stager(ctx, tx, snapshotProps); err != nil {
			return nil, fmt.Errorf("stage commit on %s: %w", name, err)
		}
	case len(r.RemoveData) > 0:
		add, err := assignFirstRowIDs(r.Table.Metadata(), r.AddData)
		if err != nil {
			return nil, err
		}
		if err := tx.ReplaceFiles(ctx, r.RemoveData, add, r.RemoveDeletes, snapshotProps); err != nil {
			return nil, fmt.Errorf("stage copy-on-write commit on %s: %w", name, err)
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
			return nil, fmt.Errorf("stage merge-on-read commit on %s: %w", name, err)
		}
	}
	if len(props) > 0 {
		if err := tx.SetProperties(props); err != nil {
			return nil, err
		}
	}
	return tx, nil
}

// RowDelta reports whether Stage stages the change as a row delta
// (tx.NewRowDelta: files added, none removed, no Stager).
func (r *Result) RowDelta() bool {
	return !r.NoFiles() && r.Stager == nil && len(r.RemoveData) == 0
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

// StagedFiles lists the manifest list and manifests that staging tx wrote
// for a new snapshot on branch ("" = main): the snapshot producer writes
// them before the commit, and nothing else references them until the
// commit lands. base is the table tx was created on. It returns nothing
// when the branch head of tx is not a new snapshot (a commit without
// snapshot, or a rollback to a snapshot base already holds: its files are
// referenced).
func StagedFiles(tx *table.Transaction, base *table.Table, branch string) (manifestList string, manifests func() ([]string, error)) {
	snap := stagedSnapshot(tx, base, branch)
	if snap == nil || snap.ManifestList == "" {
		return "", nil
	}
	st, err := tx.StagedTable()
	if err != nil {
		return "", nil
	}
	return snap.ManifestList, func() ([]string, error) {
		fs, err := st.FS(context.Background())
		if err != nil {
			return nil, err
		}
		mfs, err := snap.Manifests(fs)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, m := range mfs {
			if m.SnapshotID() == snap.SnapshotID {
				out = append(out, m.FilePath())
			}
		}
		return out, nil
	}
}

// StagedSnapshotID returns the id of the new snapshot tx makes on branch
// (see StagedFiles), or 0.
func StagedSnapshotID(tx *table.Transaction, base *table.Table, branch string) int64 {
	if s := stagedSnapshot(tx, base, branch); s != nil {
		return s.SnapshotID
	}
	return 0
}

// stagedSnapshot is the branch head of tx when base does not hold it.
func stagedSnapshot(tx *table.Transaction, base *table.Table, branch string) *table.Snapshot {
	if branch == "" {
		branch = table.MainBranch
	}
	st, err := tx.StagedTable()
	if err != nil {
		return nil
	}
	head := st.Metadata().SnapshotByName(branch)
	if head == nil || base == nil || base.Metadata().SnapshotByID(head.SnapshotID) != nil {
		return nil
	}
	s := *head
	return &s
}
