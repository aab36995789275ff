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
	"github.com/floedata/floe/write"
)

// ErrRefused is wrapped by the errors of lifecycle operations that would
// break a rule of Iceberg or lose data, with nothing changed.
var ErrRefused = errors.New("refused")

// DropOutcome says what Drop did.
type DropOutcome struct {
	Location string
	Purged   bool
}

// Drop removes a table from the catalog, as Spark's DROP TABLE. With purge
// (DROP TABLE ... PURGE) its data and metadata files are deleted too:
// every file its metadata references and, on a local warehouse, the
// folders left empty. A table registered with a path root (its files
// belong to whoever wrote them) is never purged.
func Drop(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, purge bool) (*DropOutcome, error) {
	name := catalog.FormatName(ident)
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	out := &DropOutcome{Location: tbl.Location()}
	if purge {
		if rooted, err := cat.HasPathRoot(ctx, ident); err != nil {
			return nil, err
		} else if rooted {
			return nil, fmt.Errorf("drop %s --purge: %w: the table was registered with --path-root and its files belong to whoever wrote them; drop it without --purge", name, ErrRefused)
		}
	}
	if err := cat.DropTable(ctx, ident); err != nil {
		return nil, err
	}
	if !purge {
		return out, nil
	}
	if err := tbl.PurgeFiles(ctx); err != nil {
		return out, fmt.Errorf("dropped %s but could not delete all of its files under %s: %w", name, tbl.Location(), err)
	}
	removeEmptyDirs(tbl.Location())
	out.Purged = true
	return out, nil
}

// removeEmptyDirs removes the empty folders of a local table location,
// deepest first, the location itself included.
func removeEmptyDirs(location string) {
	dir, ok := strings.CutPrefix(location, "file://")
	if !ok && strings.Contains(location, "://") {
		return
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

// Rename gives a table a new name, as Spark's ALTER TABLE ... RENAME TO.
func Rename(ctx context.Context, cat *catalog.Catalog, from, to table.Identifier) error {
	return cat.RenameTable(ctx, from, to)
}

// DropNamespace removes a namespace, as Spark's DROP NAMESPACE: an empty
// one, or with cascade one and its tables (dropped without purge). It
// returns the tables it dropped.
func DropNamespace(ctx context.Context, cat *catalog.Catalog, ns table.Identifier, cascade bool) ([]table.Identifier, error) {
	var dropped []table.Identifier
	if cascade {
		tables, err := cat.ListTables(ctx, ns)
		if err != nil {
			return nil, err
		}
		for _, t := range tables {
			if err := cat.DropTable(ctx, t); err != nil {
				return dropped, err
			}
			dropped = append(dropped, t)
		}
	}
	return dropped, cat.DropNamespace(ctx, ns)
}

// SetProperties sets table properties in one commit, as Spark's ALTER
// TABLE ... SET TBLPROPERTIES. format-version upgrades the table (never
// downgrades it); the write modes are checked.
func SetProperties(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, props iceberg.Properties) (*table.Table, error) {
	name := catalog.FormatName(ident)
	if len(props) == 0 {
		return nil, fmt.Errorf("set properties of %s: no property given", name)
	}
	for _, k := range []string{write.PropDeleteMode, write.PropUpdateMode, write.PropMergeMode} {
		if v, ok := props[k]; ok {
			if _, err := write.ParseMode(v, k); err != nil {
				return nil, err
			}
		}
	}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	tx := tbl.NewTransaction()
	rest := iceberg.Properties{}
	for k, v := range props {
		rest[k] = v
	}
	if v, ok := rest["format-version"]; ok {
		delete(rest, "format-version")
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3 {
			return nil, fmt.Errorf("set properties of %s: format-version %q: want 1, 2 or 3", name, v)
		}
		cur := tbl.Metadata().Version()
		switch {
		case n < cur:
			return nil, fmt.Errorf("set properties of %s: %w: format-version %d is older than the table's %d (Iceberg never downgrades a table)", name, ErrRefused, n, cur)
		case n > cur:
			if err := tx.UpgradeFormatVersion(n); err != nil {
				return nil, fmt.Errorf("set properties of %s: %w", name, err)
			}
		}
	}
	if len(rest) > 0 {
		if err := tx.SetProperties(rest); err != nil {
			return nil, fmt.Errorf("set properties of %s: %w", name, err)
		}
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("set properties of %s: %w", name, err)
	}
	return out, nil
}

// UnsetProperties removes table properties in one commit, as Spark's ALTER
// TABLE ... UNSET TBLPROPERTIES. A key the table does not have is an error
// unless ifExists.
func UnsetProperties(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, keys []string, ifExists bool) (*table.Table, error) {
	name := catalog.FormatName(ident)
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	var remove []string
	for _, k := range keys {
		if k == "format-version" {
			return nil, fmt.Errorf("unset properties of %s: %w: format-version is not a property that can be removed", name, ErrRefused)
		}
		if _, ok := tbl.Properties()[k]; !ok {
			if ifExists {
				continue
			}
			return nil, fmt.Errorf("unset properties of %s: the table has no property %q (pass --if-exists to ignore)", name, k)
		}
		remove = append(remove, k)
	}
	if len(remove) == 0 {
		return tbl, nil
	}
	tx := tbl.NewTransaction()
	if err := tx.RemoveProperties(remove); err != nil {
		return nil, fmt.Errorf("unset properties of %s: %w", name, err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("unset properties of %s: %w", name, err)
	}
	return out, nil
}
