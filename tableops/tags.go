package tableops

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
)

// CreateTag names a snapshot (the current one when snapshot is nil), as
// Spark's ALTER TABLE ... CREATE TAG name [AS OF VERSION id] [RETAIN d], in
// one commit through package commit (checked again on the fresh table at
// each attempt; a lost answer resolved by the commit id). retain > 0 lets
// snapshot expiry drop the tag once it is that old; otherwise the tag, and
// its snapshot, are kept until dropped.
func CreateTag(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, name string, snapshot *int64, retain time.Duration) (*RefOutcome, error) {
	tn := catalog.FormatName(ident)
	if name == "" {
		return nil, fmt.Errorf("create tag of %s: the tag needs a name", tn)
	}
	var maxAge int64
	if retain > 0 {
		maxAge = retain.Milliseconds()
	}
	prefix := fmt.Sprintf("create tag %s of %s", name, tn)
	var id int64
	var c checked
	o, err := commit.RunUpdates(ctx, cat, ident, commit.Options{}, c.wrap(func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		if _, ok := refOf(tbl, name); ok {
			return nil, nil, kindError{fmt.Sprintf("%s: the table already has a branch or tag named %q", prefix, name), ErrRefExists}
		}
		if snapshot == nil {
			cur := tbl.CurrentSnapshot()
			if cur == nil {
				return nil, nil, fmt.Errorf("%s: the table has no snapshot yet; append rows first or pass --snapshot", prefix)
			}
			id = cur.SnapshotID
		} else if id = *snapshot; tbl.Metadata().SnapshotByID(id) == nil {
			return nil, nil, fmt.Errorf("%s: the table has no snapshot %d", prefix, id)
		}
		return []table.Requirement{table.AssertRefSnapshotID(name, nil)},
			[]table.Update{table.NewSetSnapshotRefUpdate(name, id, table.TagRef, maxAge, 0, 0)}, nil
	}))
	if err != nil {
		return nil, c.fail(prefix, err)
	}
	return refOutcome(name, id, o), nil
}

// DropTag removes a tag, as Spark's ALTER TABLE ... DROP TAG, in one commit
// through package commit. Branches are dropped with `table branch drop`;
// naming one here is an error. It returns nil, with nothing committed,
// when the tag does not exist and ifExists.
func DropTag(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, name string, ifExists bool) (*RefOutcome, error) {
	tn := catalog.FormatName(ident)
	prefix := fmt.Sprintf("drop tag %s of %s", name, tn)
	var c checked
	o, err := commit.RunUpdates(ctx, cat, ident, commit.Options{}, c.wrap(func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		ref, ok := refOf(tbl, name)
		if !ok {
			if ifExists {
				return nil, nil, nil // nothing to do
			}
			return nil, nil, kindError{fmt.Sprintf("%s: the table has no tag %q", prefix, name), ErrNoSuchRef}
		}
		if ref.SnapshotRefType != table.TagRef {
			return nil, nil, fmt.Errorf("%s: %q is a branch; drop it with `floe table branch drop %s %s`", prefix, name, tn, name)
		}
		id := ref.SnapshotID
		return []table.Requirement{table.AssertRefSnapshotID(name, &id)}, []table.Update{table.NewRemoveSnapshotRefUpdate(name)}, nil
	}))
	if err != nil {
		return nil, c.fail(prefix, err)
	}
	if !o.Committed {
		return nil, nil
	}
	return refOutcome(name, 0, o), nil
}

// kindError is an error with its own message that wraps a sentinel (kind)
// without repeating the sentinel's text.
type kindError struct {
	msg  string
	kind error
}

func (e kindError) Error() string { return e.msg }
func (e kindError) Unwrap() error { return e.kind }
