package catalog

import (
	"context"
	"errors"
	"fmt"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// ErrNamespaceNotEmpty is returned when dropping a namespace that still
// holds tables. It wraps iceberg-go's catalog.ErrNamespaceNotEmpty.
var ErrNamespaceNotEmpty = icecat.ErrNamespaceNotEmpty

// DropTable removes a table from the catalog; its files stay where they
// are. floe's record of the table's path root (see Register) goes with it.
// An error of the catalog's own drop call (after floe's checks) is marked
// as sent (see Sent): the catalog may have dropped the table, and only a
// reload tells (package commit's DropTable resolves it).
func (c *Catalog) DropTable(ctx context.Context, ident table.Identifier) error {
	if ok, err := c.ice.CheckTableExists(ctx, ident); err != nil {
		return fmt.Errorf("drop %s: %w", FormatName(ident), err)
	} else if !ok {
		return c.explainMissing(ctx, ident, icecat.ErrNoSuchTable)
	}
	if err := c.ice.DropTable(ctx, ident); err != nil {
		return sentError{fmt.Errorf("drop %s: %w", FormatName(ident), err)}
	}
	return c.ForgetPathRoot(ctx, ident)
}

// ForgetPathRoot removes floe's record of a dropped table's path root (a
// drop whose answer was lost, found done by a reload).
func (c *Catalog) ForgetPathRoot(ctx context.Context, ident table.Identifier) error {
	if c.db == nil {
		return nil
	}
	if _, err := c.db.ExecContext(ctx,
		`DELETE FROM floe_path_roots WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`,
		c.name, nsKey(ident[:len(ident)-1]), ident[len(ident)-1]); err != nil {
		return fmt.Errorf("drop %s: forget its path root: %w", FormatName(ident), err)
	}
	return nil
}

// sentError marks an error of a catalog call that may have reached the
// catalog (the drop or rename itself, not floe's checks before it).
type sentError struct{ error }

func (e sentError) Unwrap() error { return e.error }

// Sent reports whether err, returned by DropTable, RenameTable or
// DropNamespace, came from the catalog's own call, which may have happened
// even though it failed (its answer lost), rather than from the checks
// before it (then nothing was asked of the catalog).
func Sent(err error) bool {
	var s sentError
	return errors.As(err, &s)
}

// HasPathRoot reports whether floe resolves the table's relative paths
// against a folder given at registration: its files belong to whoever
// wrote them.
func (c *Catalog) HasPathRoot(ctx context.Context, ident table.Identifier) (bool, error) {
	_, ok, err := c.pathRoot(ctx, ident)
	return ok, err
}

// PathRoot returns the folder floe resolves the table's relative paths
// against (see Register), and whether it has one.
func (c *Catalog) PathRoot(ctx context.Context, ident table.Identifier) (string, bool, error) {
	return c.pathRoot(ctx, ident)
}

// RenameTable gives a table a new name (possibly in another namespace of
// the same catalog); its files do not move.
func (c *Catalog) RenameTable(ctx context.Context, from, to table.Identifier) error {
	if ok, err := c.ice.CheckTableExists(ctx, from); err != nil {
		return fmt.Errorf("rename %s: %w", FormatName(from), err)
	} else if !ok {
		return c.explainMissing(ctx, from, icecat.ErrNoSuchTable)
	}
	ns := to[:len(to)-1]
	if ok, err := c.ice.CheckNamespaceExists(ctx, ns); err != nil {
		return fmt.Errorf("rename %s: %w", FormatName(from), err)
	} else if !ok {
		return fmt.Errorf("%w: namespace %s (renaming %s to %s); create it with `floe namespace create %s`",
			ErrNoSuchNamespace, FormatName(ns), FormatName(from), FormatName(to), FormatName(ns))
	}
	if ok, err := c.ice.CheckTableExists(ctx, to); err != nil {
		return fmt.Errorf("rename %s: %w", FormatName(from), err)
	} else if ok {
		return fmt.Errorf("rename %s to %s: %w", FormatName(from), FormatName(to), icecat.ErrTableAlreadyExists)
	}
	if _, _, err := c.pathRoot(ctx, from); err != nil {
		return err
	}
	if _, err := c.ice.RenameTable(ctx, from, to); err != nil {
		return sentError{fmt.Errorf("rename %s to %s: %w", FormatName(from), FormatName(to), err)}
	}
	return c.MovePathRoot(ctx, from, to)
}

// MovePathRoot moves floe's record of a renamed table's path root from its
// old name to its new one (a rename whose answer was lost, found done by a
// reload, too).
func (c *Catalog) MovePathRoot(ctx context.Context, from, to table.Identifier) error {
	root, hasRoot, err := c.pathRoot(ctx, from)
	if err != nil || !hasRoot {
		return err
	}
	if _, err := c.db.ExecContext(ctx,
		`UPDATE floe_path_roots SET table_namespace = ?, table_name = ? WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`,
		nsKey(to[:len(to)-1]), to[len(to)-1], c.name, nsKey(from[:len(from)-1]), from[len(from)-1]); err != nil {
		return fmt.Errorf("renamed %s to %s but could not move its path root %s: %w", FormatName(from), FormatName(to), root, err)
	}
	return nil
}

// DropNamespace removes an empty namespace. A namespace that still holds
// tables is an error wrapping ErrNamespaceNotEmpty that names them.
func (c *Catalog) DropNamespace(ctx context.Context, ns table.Identifier) error {
	ok, err := c.ice.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return fmt.Errorf("drop namespace %s: %w", FormatName(ns), err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", ErrNoSuchNamespace, FormatName(ns))
	}
	tables, err := c.ListTables(ctx, ns)
	if err != nil {
		return err
	}
	if len(tables) > 0 {
		names := ""
		for i, t := range tables {
			if i == 5 {
				names += fmt.Sprintf(", ... (%d in all)", len(tables))
				break
			}
			if i > 0 {
				names += ", "
			}
			names += FormatName(t)
		}
		return fmt.Errorf("drop namespace %s: %w: it holds %s; drop them first or pass --cascade", FormatName(ns), ErrNamespaceNotEmpty, names)
	}
	children, err := c.ice.ListNamespaces(ctx, ns)
	if err == nil {
		for _, child := range children {
			// Some catalogs list the namespace itself among its children.
			if len(child) > len(ns) {
				return fmt.Errorf("drop namespace %s: %w: it holds namespace %s", FormatName(ns), ErrNamespaceNotEmpty, FormatName(child))
			}
		}
	}
	if err := c.ice.DropNamespace(ctx, ns); err != nil {
		return sentError{fmt.Errorf("drop namespace %s: %w", FormatName(ns), err)}
	}
	return nil
}
