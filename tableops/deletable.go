package tableops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
)

// This file decides which files a table operation that deletes (drop
// --purge, expire-snapshots) may delete: the same rules as remove-orphans
// keeps (never reach outside the table), applied to a list of candidates
// instead of a listing.

// deletableFiles returns the files of paths (as the metadata of tbl, the
// table ident or the table it was before a drop, spells them) that the
// table may delete: those under its location, when that location holds
// neither the warehouse root nor another table's location, that lie under
// no other table's location and that no snapshot or metadata file of any
// other table of the catalog references (another name registered for the
// same metadata counts as another table). A table registered with a path
// root deletes nothing. When a table of the catalog cannot be loaded or
// read, nothing can be told, and it returns an error with nothing
// deletable.
func deletableFiles(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, tbl *table.Table, paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if rooted, err := cat.HasPathRoot(ctx, ident); err != nil {
		return nil, err
	} else if rooted {
		return nil, fmt.Errorf("table %s was registered with --path-root: its files belong to whoever wrote them", catalog.FormatName(ident))
	}
	loc := cleanPath(tbl.Location(), "")
	if loc == "" {
		return nil, fmt.Errorf("the table's location %q is not an absolute path or URI", tbl.Location())
	}
	if wh := cleanPath(cat.Warehouse(), ""); wh != "" && (wh == loc || underPath(wh, loc)) {
		return nil, fmt.Errorf("the table's location %s holds the warehouse root %s; a table needs a folder of its own", loc, wh)
	}
	type candidate struct{ spelled, norm string }
	var cands []candidate
	seen := map[string]bool{}
	for _, p := range paths {
		n := cleanPath(p, "")
		if n == "" || seen[n] || !underPath(n, loc) {
			continue
		}
		seen[n] = true
		cands = append(cands, candidate{p, n})
	}
	if len(cands) == 0 {
		return nil, nil
	}
	ids, err := allTables(ctx, cat, nil)
	if err != nil {
		return nil, fmt.Errorf("list the catalog's tables to check that no other one uses the files: %w", err)
	}
	uuid := tbl.Metadata().TableUUID()
	for _, id := range ids {
		if len(cands) == 0 {
			break
		}
		other, err := cat.Load(ctx, id)
		if err != nil {
			if errors.Is(err, catalog.ErrNoSuchTable) {
				continue // dropped meanwhile
			}
			return nil, fmt.Errorf("cannot tell whether table %s uses the files (nothing deleted): %w", catalog.FormatName(id), err)
		}
		if slices.Equal(id, ident) && other.Metadata().TableUUID() == uuid {
			continue // the table itself
		}
		root, _, err := cat.PathRoot(ctx, id)
		if err != nil {
			return nil, err
		}
		oloc := cleanPath(other.Location(), root)
		if oloc == "" {
			return nil, fmt.Errorf("cannot tell whether table %s uses the files (nothing deleted): its location %q is not an absolute path or URI", catalog.FormatName(id), other.Location())
		}
		// Files under another table's location are that table's.
		cands = slices.DeleteFunc(cands, func(c candidate) bool { return underPath(c.norm, oloc) })
		if len(cands) == 0 {
			break
		}
		refs, err := allFilesOf(ctx, other)
		if err != nil {
			return nil, fmt.Errorf("cannot tell whether table %s uses the files (nothing deleted): %w", catalog.FormatName(id), err)
		}
		used := map[string]bool{}
		for _, r := range refs {
			used[cleanPath(r, root)] = true
			if _, ok := catalog.FileURIPath(r); ok {
				used[catalog.LiteralLocation(r, "")] = true // as engines that do not decode read it
			}
		}
		cands = slices.DeleteFunc(cands, func(c candidate) bool { return used[c.norm] })
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.spelled
	}
	return out, nil
}

// allFilesOf lists every file the metadata of tbl references: its metadata
// files (current and logged), statistics, manifest lists, manifests and the
// data and delete files of every manifest entry, deleted ones included.
func allFilesOf(ctx context.Context, tbl *table.Table) ([]string, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	md := tbl.Metadata()
	var out []string
	add := func(p string) {
		if p != "" {
			out = append(out, p)
		}
	}
	add(tbl.MetadataLocation())
	for e := range md.PreviousFiles() {
		add(e.MetadataFile)
	}
	for s := range md.Statistics() {
		add(s.StatisticsPath)
	}
	for s := range md.PartitionStatistics() {
		add(s.StatisticsPath)
	}
	seen := map[string]bool{}
	for _, snap := range md.Snapshots() {
		if snap.ManifestList == "" {
			continue
		}
		add(snap.ManifestList)
		mfs, err := snap.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: manifest list %s: %w", snap.SnapshotID, snap.ManifestList, err)
		}
		for _, m := range mfs {
			if seen[m.FilePath()] {
				continue
			}
			seen[m.FilePath()] = true
			add(m.FilePath())
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				add(e.DataFile().FilePath())
			}
		}
	}
	return out, nil
}

// expiredFiles lists the files only the snapshots removed (read from pre,
// the table before the expiry) referenced, given post, the table after it:
// their manifest lists, their manifests that no snapshot of post lists, the
// data and delete files of those manifests that no manifest of post holds
// live (added or existing), and their statistics files that post does not
// reference.
func expiredFiles(ctx context.Context, pre *table.Table, removed []table.Snapshot, post *table.Table) ([]string, error) {
	pfs, err := post.FS(ctx)
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{} // manifest lists and manifests of post
	live := map[string]bool{} // live data and delete files of post
	for _, s := range post.Metadata().Snapshots() {
		if s.ManifestList == "" {
			continue
		}
		kept[cleanPath(s.ManifestList, "")] = true
		mfs, err := s.Manifests(pfs)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
		}
		for _, m := range mfs {
			mp := cleanPath(m.FilePath(), "")
			if kept[mp] {
				continue
			}
			kept[mp] = true
			for e, err := range m.Entries(pfs, false) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				if e.Status() != iceberg.EntryStatusDELETED {
					live[cleanPath(e.DataFile().FilePath(), "")] = true
				}
			}
		}
	}
	for s := range post.Metadata().Statistics() {
		kept[cleanPath(s.StatisticsPath, "")] = true
	}
	for s := range post.Metadata().PartitionStatistics() {
		kept[cleanPath(s.StatisticsPath, "")] = true
	}
	fsys, err := pre.FS(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	visited := map[string]bool{}
	ids := map[int64]bool{}
	for _, s := range removed {
		ids[s.SnapshotID] = true
		if s.ManifestList == "" {
			continue
		}
		if !kept[cleanPath(s.ManifestList, "")] {
			out = append(out, s.ManifestList)
		}
		mfs, err := s.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
		}
		for _, m := range mfs {
			mp := cleanPath(m.FilePath(), "")
			if kept[mp] || visited[mp] {
				continue
			}
			visited[mp] = true
			out = append(out, m.FilePath())
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
				}
				if p := e.DataFile().FilePath(); !live[cleanPath(p, "")] {
					out = append(out, p)
				}
			}
		}
	}
	for s := range pre.Metadata().Statistics() {
		if ids[s.SnapshotID] && s.StatisticsPath != "" && !kept[cleanPath(s.StatisticsPath, "")] {
			out = append(out, s.StatisticsPath)
		}
	}
	for s := range pre.Metadata().PartitionStatistics() {
		if ids[s.SnapshotID] && s.StatisticsPath != "" && !kept[cleanPath(s.StatisticsPath, "")] {
			out = append(out, s.StatisticsPath)
		}
	}
	return out, nil
}

// afterCommit runs f, a step of the clean-up after a change that landed
// (reading what to delete), up to three times with the default commit
// backoff in between: a transient catalog or storage error should not
// leave files behind.
func afterCommit(ctx context.Context, f func() error) error {
	var err error
	for i := 1; i <= 3; i++ {
		if err = f(); err == nil || ctx.Err() != nil {
			return err
		}
		if i < 3 {
			commit.Backoff(ctx, i)
		}
	}
	return err
}

// removeFiles deletes paths with the file IO of tbl (a file already gone
// counts as deleted) and returns how many it deleted.
func removeFiles(ctx context.Context, tbl *table.Table, paths []string) (int, error) {
	if len(paths) == 0 {
		return 0, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("delete %s: %w", p, err))
			continue
		}
		n++
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("and %d more", len(errs)-3))
	}
	return n, errors.Join(errs...)
}

// cleanPath spells a location or file path the one way they are compared:
// local paths (plain, or file: URIs decoded as the table's IO opens them)
// cleaned, relative ones
// resolved against root (none: "", never matched), URIs with a lower-case
// scheme (s3a and s3n read as s3) and a cleaned path without a trailing
// slash.
func cleanPath(p, root string) string {
	if p == "" {
		return ""
	}
	if fp, ok := catalog.FileURIPath(p); ok {
		p = fp
	}
	if scheme, rest, ok := strings.Cut(p, "://"); ok && scheme != "" && !strings.ContainsAny(scheme, `/\`) {
		scheme = strings.ToLower(scheme)
		if scheme == "s3a" || scheme == "s3n" {
			scheme = "s3"
		}
		authority, rp, _ := strings.Cut(rest, "/")
		return scheme + "://" + authority + strings.TrimSuffix(path.Clean("/"+rp), "/")
	}
	if !filepath.IsAbs(p) {
		if root == "" {
			return ""
		}
		p = filepath.Join(root, p)
	}
	return filepath.Clean(p)
}

// underPath reports whether the cleaned path child lies strictly under the
// cleaned folder parent.
func underPath(child, parent string) bool {
	if child == "" || parent == "" || child == parent {
		return false
	}
	sep := "/"
	if !strings.Contains(parent, "://") {
		sep = string(filepath.Separator)
	}
	return strings.HasPrefix(child, strings.TrimSuffix(parent, sep)+sep)
}
