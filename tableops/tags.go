package tableops

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
)

// CreateTag names a snapshot (the current one when snapshot is nil), as
// Spark's ALTER TABLE ... CREATE TAG name [AS OF VERSION id] [RETAIN d].
// retain > 0 lets snapshot expiry drop the tag once it is that old;
// otherwise the tag, and its snapshot, are kept until dropped.
func CreateTag(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, name string, snapshot *int64, retain time.Duration) (int64, error) {
	tn := catalog.FormatName(ident)
	if name == "" {
		return 0, fmt.Errorf("create tag of %s: the tag needs a name", tn)
	}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return 0, err
	}
	if _, ok := refOf(tbl.Metadata(), name); ok {
		return 0, fmt.Errorf("create tag %s of %s: the table already has a branch or tag named %q", name, tn, name)
	}
	var id int64
	if snapshot == nil {
		cur := tbl.CurrentSnapshot()
		if cur == nil {
			return 0, fmt.Errorf("create tag %s of %s: the table has no snapshot yet; append rows first or pass --snapshot", name, tn)
		}
		id = cur.SnapshotID
	} else {
		id = *snapshot
		if tbl.Metadata().SnapshotByID(id) == nil {
			return 0, fmt.Errorf("create tag %s of %s: the table has no snapshot %d", name, tn, id)
		}
	}
	var maxAge int64
	if retain > 0 {
		maxAge = retain.Milliseconds()
	}
	_, _, err = cat.Iceberg().CommitTable(ctx, ident,
		[]table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(name, nil)},
		[]table.Update{table.NewSetSnapshotRefUpdate(name, id, table.TagRef, maxAge, 0, 0)})
	if err != nil {
		return 0, fmt.Errorf("create tag %s of %s: %w", name, tn, err)
	}
	return id, nil
}

// DropTag removes a tag, as Spark's ALTER TABLE ... DROP TAG. Branches are
// dropped with `table branch drop`; naming one here is an error.
func DropTag(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, name string, ifExists bool) (bool, error) {
	tn := catalog.FormatName(ident)
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return false, err
	}
	ref, ok := refOf(tbl.Metadata(), name)
	if !ok {
		if ifExists {
			return false, nil
		}
		return false, fmt.Errorf("drop tag %s of %s: the table has no tag %q", name, tn, name)
	}
	if ref.SnapshotRefType != table.TagRef {
		return false, fmt.Errorf("drop tag %s of %s: %q is a branch; drop it with `floe table branch drop %s %s`", name, tn, name, tn, name)
	}
	id := ref.SnapshotID
	_, _, err = cat.Iceberg().CommitTable(ctx, ident,
		[]table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(name, &id)},
		[]table.Update{table.NewRemoveSnapshotRefUpdate(name)})
	if err != nil {
		return false, fmt.Errorf("drop tag %s of %s: %w", name, tn, err)
	}
	return true, nil
}

// refOf returns the table's ref called name.
func refOf(meta table.Metadata, name string) (table.SnapshotRef, bool) {
	for n, r := range meta.Refs() {
		if n == name {
			return r, true
		}
	}
	return table.SnapshotRef{}, false
}
