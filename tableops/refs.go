package tableops

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
)

// ErrNoSuchRef is wrapped when a branch or tag is missing.
var ErrNoSuchRef = errors.New("no such branch or tag")

// ErrRefExists is wrapped when creating a ref whose name is taken.
var ErrRefExists = errors.New("ref exists")

// RefOutcome says what a ref change committed.
type RefOutcome struct {
	Ref        string
	SnapshotID int64 // where the ref points now (0 when dropped)
	Attempts   int
	CommitID   string
	AnswerLost bool
}

// checked wraps an Updates so that the errors it returns (the change
// cannot be made on the table as it is) are reported as they are, without
// the operation's prefix commit errors get.
type checked struct{ err error }

func (c *checked) wrap(f commit.Updates) commit.Updates {
	return func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		reqs, ups, err := f(tbl)
		c.err = err
		return reqs, ups, err
	}
}

func (c *checked) fail(prefix string, err error) error {
	if c.err != nil && errors.Is(err, c.err) {
		return c.err
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

func refOutcome(ref string, id int64, o *commit.Outcome) *RefOutcome {
	return &RefOutcome{Ref: ref, SnapshotID: id, Attempts: o.Attempts, CommitID: o.CommitID, AnswerLost: o.AnswerLost}
}

func refOf(tbl *table.Table, name string) (table.SnapshotRef, bool) {
	for n, ref := range tbl.Metadata().Refs() {
		if n == name {
			return ref, true
		}
	}
	return table.SnapshotRef{}, false
}

// setBranch is the catalog update that points branch name at snapshot id
// with the table's default retention. The retention fields stay zero, which
// iceberg-go leaves out of the request: a REST catalog rejects the -1 it would
// otherwise send ("Min snapshots to keep must be greater than 0").
func setBranch(name string, id int64) table.Update {
	return table.NewSetSnapshotRefUpdate(name, id, table.BranchRef, 0, 0, 0)
}

// CreateBranch creates branch name of the table at snapshot (nil: the
// current snapshot), in one commit through package commit.
func CreateBranch(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, name string, snapshot *int64) (*RefOutcome, error) {
	tname := catalog.FormatName(ident)
	var id int64
	var c checked
	o, err := commit.RunUpdates(ctx, cat, ident, commit.Options{}, c.wrap(func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		if _, ok := refOf(tbl, name); ok {
			return nil, nil, fmt.Errorf("%w: table %s already has a ref named %q", ErrRefExists, tname, name)
		}
		if snapshot == nil {
			cur := tbl.CurrentSnapshot()
			if cur == nil {
				return nil, nil, fmt.Errorf("table %s has no snapshot yet to branch from; append rows first or pass --snapshot", tname)
			}
			id = cur.SnapshotID
		} else if id = *snapshot; tbl.Metadata().SnapshotByID(id) == nil {
			return nil, nil, fmt.Errorf("table %s has no snapshot %d", tname, id)
		}
		return []table.Requirement{table.AssertRefSnapshotID(name, nil)}, []table.Update{setBranch(name, id)}, nil
	}))
	if err != nil {
		return nil, c.fail(fmt.Sprintf("create branch %s of %s", name, tname), err)
	}
	return refOutcome(name, id, o), nil
}

// DropRef drops a branch or tag (never main), in one commit.
func DropRef(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, name string) (*RefOutcome, error) {
	tname := catalog.FormatName(ident)
	if name == table.MainBranch {
		return nil, fmt.Errorf("the main branch of %s cannot be dropped", tname)
	}
	var c checked
	o, err := commit.RunUpdates(ctx, cat, ident, commit.Options{}, c.wrap(func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		ref, ok := refOf(tbl, name)
		if !ok {
			return nil, nil, fmt.Errorf("%w: table %s has no branch or tag %q", ErrNoSuchRef, tname, name)
		}
		id := ref.SnapshotID
		return []table.Requirement{table.AssertRefSnapshotID(name, &id)}, []table.Update{table.NewRemoveSnapshotRefUpdate(name)}, nil
	}))
	if err != nil {
		return nil, c.fail(fmt.Sprintf("drop %s of %s", name, tname), err)
	}
	return refOutcome(name, 0, o), nil
}

// Rollback moves branch ("" = main) back to snapshot, one of its
// ancestors (Iceberg's rollback_to_snapshot), in one commit.
func Rollback(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, branch string, snapshot int64) (*RefOutcome, error) {
	if branch == "" {
		branch = table.MainBranch
	}
	o, err := commit.RunTx(ctx, cat, ident, commit.Options{Branch: branch}, func(_ context.Context, _ *table.Table, tx *table.Transaction) error {
		return tx.RollbackToSnapshot(snapshot)
	})
	if err != nil {
		return nil, fmt.Errorf("rollback %s: %w", catalog.FormatName(ident), err)
	}
	return refOutcome(branch, snapshot, o), nil
}

// SetCurrent points branch ("" = main) at any snapshot of the table
// (Iceberg's set_current_snapshot), in one commit.
func SetCurrent(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, branch string, snapshot int64) (*RefOutcome, error) {
	tname := catalog.FormatName(ident)
	if branch == "" {
		branch = table.MainBranch
	}
	var c checked
	o, err := commit.RunUpdates(ctx, cat, ident, commit.Options{}, c.wrap(func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		if tbl.Metadata().SnapshotByID(snapshot) == nil {
			return nil, nil, fmt.Errorf("table %s has no snapshot %d", tname, snapshot)
		}
		var cur *int64
		if ref, ok := refOf(tbl, branch); ok {
			id := ref.SnapshotID
			cur = &id
		}
		return []table.Requirement{table.AssertRefSnapshotID(branch, cur)}, []table.Update{setBranch(branch, snapshot)}, nil
	}))
	if err != nil {
		return nil, c.fail("set-current "+tname, err)
	}
	return refOutcome(branch, snapshot, o), nil
}
