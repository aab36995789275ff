package tableops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/write"
)

// ErrRefused is wrapped by the errors of lifecycle operations that would
// break a rule of Iceberg or lose data, with nothing changed.
var ErrRefused = errors.New("refused")

// DropOutcome says what Drop did.
type DropOutcome struct {
	Location string
	Purged   bool
	// AnswerLost: the catalog's answer to the drop was lost, and floe
	// found the table gone.
	AnswerLost bool
	// FilesDeleted counts the files a purge deleted; PurgeErr, when set,
	// says why some stayed (the drop itself is done; remove-orphans or a
	// storage tool cleans up).
	FilesDeleted int
	PurgeErr     error
}

// Drop removes a table from the catalog, as Spark's DROP TABLE, through
// commit.DropTable (a lost answer is resolved by reloading the table). With
// purge (DROP TABLE ... PURGE) its files are deleted too, once the drop is
// known to have happened: every file its metadata references that lies
// under its location and that no other table of the catalog references,
// and, on a local warehouse, the folders left empty. A table registered
// with a path root (its files belong to whoever wrote them) is never
// purged. Like Iceberg's catalogs, the purge is best effort: files it could
// not delete are reported in PurgeErr, and the drop stands.
func Drop(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, purge bool) (*DropOutcome, error) {
	name := catalog.FormatName(ident)
	if purge {
		if rooted, err := cat.HasPathRoot(ctx, ident); err != nil {
			return nil, err
		} else if rooted {
			return nil, fmt.Errorf("drop %s --purge: %w: the table was registered with --path-root and its files belong to whoever wrote them; drop it without --purge", name, ErrRefused)
		}
	}
	res, err := commit.DropTable(ctx, cat, ident, commit.Options{})
	if err != nil {
		return nil, err
	}
	tbl := res.Table
	out := &DropOutcome{Location: tbl.Location(), AnswerLost: res.AnswerLost}
	if !purge {
		return out, nil
	}
	var del []string
	err = afterCommit(ctx, func() error {
		files, err := allFilesOf(ctx, tbl)
		if err == nil {
			del, err = deletableFiles(ctx, cat, ident, tbl, files)
		}
		return err
	})
	if err == nil {
		out.FilesDeleted, err = removeFiles(ctx, tbl, del)
	}
	if err != nil {
		out.PurgeErr = fmt.Errorf("dropped %s but could not delete all of its files under %s: %w", name, tbl.Location(), err)
		return out, nil
	}
	removeEmptyDirs(tbl.Location())
	out.Purged = true
	return out, nil
}

// removeEmptyDirs removes the empty folders of a local table location,
// deepest first, the location itself included.
func removeEmptyDirs(location string) {
	dir, ok := catalog.FileURIPath(location)
	if !ok {
		if strings.Contains(location, "://") {
			return
		}
		dir = location
	}
	var dirs []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		_ = os.Remove(d) // fails, as it should, on folders that are not empty
	}
}

// RenameOutcome says what Rename did.
type RenameOutcome struct {
	// AnswerLost: the catalog's answer to the rename was lost, and floe
	// found the table under its new name.
	AnswerLost bool
}

// Rename gives a table a new name, as Spark's ALTER TABLE ... RENAME TO,
// through commit.RenameTable (a lost answer is resolved by reloading).
func Rename(ctx context.Context, cat *catalog.Catalog, from, to table.Identifier) (*RenameOutcome, error) {
	res, err := commit.RenameTable(ctx, cat, from, to, commit.Options{})
	if err != nil {
		return nil, err
	}
	return &RenameOutcome{AnswerLost: res.AnswerLost}, nil
}

// DropNamespace removes a namespace, as Spark's DROP NAMESPACE: an empty
// one, or with cascade one and its tables (dropped without purge, each
// through commit.DropTable). It returns the tables it dropped. A lost
// answer to the namespace's drop is resolved by asking whether it is still
// there.
func DropNamespace(ctx context.Context, cat *catalog.Catalog, ns table.Identifier, cascade bool) ([]table.Identifier, error) {
	var dropped []table.Identifier
	if cascade {
		tables, err := cat.ListTables(ctx, ns)
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			if _, err := commit.DropTable(ctx, cat, t, commit.Options{}); err != nil {
				return dropped, err
			}
			dropped = append(dropped, t)
		}
	}
	err := cat.DropNamespace(ctx, ns)
	if err != nil && catalog.Sent(err) {
		if ok, cerr := cat.Iceberg().CheckNamespaceExists(context.WithoutCancel(ctx), ns); cerr == nil && !ok {
			return dropped, nil // the answer was lost; the namespace is gone
		}
	}
	return dropped, err
}

// SetProperties sets table properties in one commit, as Spark's ALTER
// TABLE ... SET TBLPROPERTIES, through commit.RunTx (checked again on the
// fresh table at each attempt; a lost answer resolved by the commit id).
// format-version upgrades the table (never downgrades it); the write modes
// are checked.
func SetProperties(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, props iceberg.Properties) (*commit.Outcome, error) {
	name := catalog.FormatName(ident)
	if len(props) == 0 {
		return nil, fmt.Errorf("set properties of %s: no property given", name)
	}
	for k, v := range props {
		if err := write.CheckModeProperty(k, v); err != nil {
			return nil, err
		}
	}
	rest := iceberg.Properties{}
	for k, v := range props {
		rest[k] = v
	}
	version := 0
	if v, ok := rest["format-version"]; ok {
		delete(rest, "format-version")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3 {
			return nil, fmt.Errorf("set properties of %s: format-version %q: want 1, 2 or 3", name, v)
		}
		version = n
	}
	var refused error
	out, err := commit.RunTx(ctx, cat, ident, commit.Options{}, func(_ context.Context, tbl *table.Table, tx *table.Transaction) error {
		refused = nil
		if version > 0 {
			cur := tbl.Metadata().Version()
			switch {
			case version < cur:
				refused = fmt.Errorf("set properties of %s: %w: format-version %d is older than the table's %d (Iceberg never downgrades a table)", name, ErrRefused, version, cur)
				return refused
			case version > cur:
				if err := tx.UpgradeFormatVersion(version); err != nil {
					refused = fmt.Errorf("set properties of %s: %w", name, err)
					return refused
				}
			}
		}
		if len(rest) > 0 {
			if err := tx.SetProperties(rest); err != nil {
				refused = fmt.Errorf("set properties of %s: %w", name, err)
				return refused
			}
		}
		return nil
	})
	if err != nil {
		if refused != nil && errors.Is(err, refused) {
			return nil, refused
		}
		return nil, fmt.Errorf("set properties of %s: %w", name, err)
	}
	return out, nil
}

// UnsetProperties removes table properties in one commit, as Spark's ALTER
// TABLE ... UNSET TBLPROPERTIES, through commit.RunTx. A key the table does
// not have is an error unless ifExists (then, with no key left, nothing is
// committed).
func UnsetProperties(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, keys []string, ifExists bool) (*commit.Outcome, error) {
	name := catalog.FormatName(ident)
	for _, k := range keys {
		if k == "format-version" {
			return nil, fmt.Errorf("unset properties of %s: %w: format-version is not a property that can be removed", name, ErrRefused)
		}
	}
	var refused error
	out, err := commit.RunTx(ctx, cat, ident, commit.Options{}, func(_ context.Context, tbl *table.Table, tx *table.Transaction) error {
		refused = nil
		var remove []string
		for _, k := range keys {
			if _, ok := tbl.Properties()[k]; !ok {
				if ifExists {
					continue
				}
				refused = fmt.Errorf("unset properties of %s: the table has no property %q (pass --if-exists to ignore)", name, k)
				return refused
			}
			remove = append(remove, k)
		}
		if len(remove) == 0 {
			return commit.ErrNoChange
		}
		if err := tx.RemoveProperties(remove); err != nil {
			refused = fmt.Errorf("unset properties of %s: %w", name, err)
			return refused
		}
		return nil
	})
	if err != nil {
		if refused != nil && errors.Is(err, refused) {
			return nil, refused
		}
		return nil, fmt.Errorf("unset properties of %s: %w", name, err)
	}
	return out, nil
}
