package tableops

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
)

// OrphanOptions tunes RemoveOrphans.
type OrphanOptions struct {
	// OlderThan spares files modified less than this long ago (files of
	// writes still in progress).
	OlderThan time.Duration
	// DryRun lists the files without deleting them.
	DryRun bool
}

// OrphanFile is a file RemoveOrphans deleted, or would delete.
type OrphanFile struct {
	Path      string
	SizeBytes int64
	Deleted   bool
}

// OrphanResult is what RemoveOrphans found.
type OrphanResult struct {
	Files      []OrphanFile
	TotalBytes int64
}

// RemoveOrphans deletes the files of table ident that no snapshot, manifest
// or metadata file of the table references: what writers killed before
// their commit leave behind.
//
// It never reaches outside the table. It refuses a table whose location
// contains the warehouse root, the catalog's file or another table of the
// catalog, or lies inside another table's location (ErrUnsafeLocation), and
// it considers only files under the table's data and metadata folders
// (<location>/data and <location>/metadata, or the folders the
// write.data.path and write.metadata.path properties name). Of those it
// never deletes the catalog's files, files under another table's location,
// or files any snapshot of another table of the catalog references (all
// tables are listed and, when there is something to delete, their
// references read before anything is deleted). Manifest entries marked
// deleted still count as references.
func RemoveOrphans(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, opts OrphanOptions) (*OrphanResult, error) {
	name := catalog.FormatName(ident)
	fail := func(err error) (*OrphanResult, error) {
		return nil, fmt.Errorf("remove-orphans %s: %w", name, err)
	}
	if opts.OlderThan < 0 {
		return fail(errors.New("--older-than must not be negative"))
	}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	resolve, err := cat.Resolver(ctx, ident)
	if err != nil {
		return fail(err)
	}
	all, err := cat.TableLocations(ctx)
	if err != nil {
		return fail(fmt.Errorf("check the locations of the catalog's tables: %w", err))
	}
	var others []catalog.TableLocation
	for _, t := range all {
		if !slices.Equal(t.Ident, ident) {
			others = append(others, t)
		}
	}
	loc := resolve(tbl.Location())
	if err := cat.CheckLocation(ident, loc, others); err != nil {
		return fail(err)
	}

	// The folders to list, spelled as the table's IO expects them.
	props := tbl.Properties()
	var dirs []string
	for _, d := range []struct{ prop, sub string }{{table.WriteDataPathKey, "data"}, {table.WriteMetadataPathKey, "metadata"}} {
		dir := props.Get(d.prop, "")
		if dir == "" {
			dir = strings.TrimSuffix(tbl.Location(), "/") + "/" + d.sub
		}
		if err := cat.CheckLocation(ident, resolve(dir), others); err != nil {
			return fail(fmt.Errorf("%s folder: %w", d.sub, err))
		}
		dirs = append(dirs, dir)
	}

	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fail(err)
	}
	refs, err := referencedFiles(tbl, fsys, resolve)
	if err != nil {
		return fail(fmt.Errorf("read the table's references: %w", err))
	}

	cutoff := time.Now().Add(-opts.OlderThan)
	type candidate struct {
		spelled, norm string
		size          int64
	}
	var cands []candidate
	for _, dir := range dirs {
		norm := resolve(dir)
		refsHere, matched, listed := 0, 0, 0
		for r := range refs {
			if catalog.Within(r, norm) {
				refsHere++
			}
		}
		err := walkFiles(fsys, dir, norm, func(p string, info fs.FileInfo) error {
			n := resolve(p)
			if !catalog.Within(n, norm) {
				return fmt.Errorf("listing %s returned %s, which is outside it", dir, p)
			}
			listed++
			if _, ok := refs[n]; ok {
				matched++
				return nil
			}
			if !info.ModTime().Before(cutoff) || keepAlways(n) || cat.ProtectedFile(n) {
				return nil
			}
			for _, o := range others {
				if catalog.Within(n, o.Location) {
					return nil
				}
			}
			cands = append(cands, candidate{spelled: p, norm: n, size: info.Size()})
			return nil
		})
		if err != nil {
			return fail(err)
		}
		// The listing and the metadata must spell paths alike, or every
		// referenced file would look orphaned.
		if refsHere > 0 && listed > 0 && matched == 0 {
			return fail(fmt.Errorf("none of the %d files listed under %s matches the %d files the table references there (paths spelled differently?); nothing deleted",
				listed, dir, refsHere))
		}
	}

	// Files another table references are not orphans.
	if len(cands) > 0 {
		for _, o := range others {
			cannot := func(err error) (*OrphanResult, error) {
				return fail(fmt.Errorf("cannot tell whether table %s references the %d candidate files (repair or drop it; nothing deleted): %w",
					catalog.FormatName(o.Ident), len(cands), err))
			}
			otbl, err := cat.Load(ctx, o.Ident)
			if err != nil {
				return cannot(err)
			}
			ofs, err := otbl.FS(ctx)
			if err != nil {
				return cannot(err)
			}
			oresolve, err := cat.Resolver(ctx, o.Ident)
			if err != nil {
				return cannot(err)
			}
			orefs, err := referencedFiles(otbl, ofs, oresolve)
			if err != nil {
				return cannot(err)
			}
			cands = slices.DeleteFunc(cands, func(c candidate) bool { _, ok := orefs[c.norm]; return ok })
		}
	}

	res := &OrphanResult{}
	slices.SortFunc(cands, func(a, b candidate) int { return strings.Compare(a.norm, b.norm) })
	var errs []error
	for _, c := range cands {
		f := OrphanFile{Path: c.norm, SizeBytes: c.size}
		if !opts.DryRun {
			if err := ctx.Err(); err != nil {
				errs = append(errs, err)
				break
			}
			if err := fsys.Remove(c.spelled); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("delete %s: %w", c.norm, err))
			} else {
				f.Deleted = true
			}
		}
		res.Files = append(res.Files, f)
		res.TotalBytes += c.size
	}
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("remove-orphans %s: %w", name, err)
	}
	return res, nil
}

// keepAlways reports files that are part of a table without being
// referenced from its metadata (a Hadoop table's version hint).
func keepAlways(p string) bool {
	base := path.Base(strings.ReplaceAll(p, "\\", "/"))
	return base == "version-hint.text"
}

// referencedFiles returns the normalized paths of every file the table's
// metadata reaches: metadata files (current and logged), statistics,
// manifest lists, manifests and the data and delete files of every
// manifest entry, deleted ones included.
func referencedFiles(tbl *table.Table, fsys iceio.IO, resolve func(string) string) (map[string]struct{}, error) {
	refs := map[string]struct{}{}
	add := func(p string) {
		if p == "" {
			return
		}
		refs[resolve(p)] = struct{}{}
		if _, ok := catalog.FileURIPath(p); ok {
			// A file named as the URI is spelled, not decoded, is the file
			// engines that do not decode read: referenced too.
			refs[catalog.LiteralLocation(p, "")] = struct{}{}
		}
	}
	md := tbl.Metadata()
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
		add(snap.ManifestList)
		if snap.ManifestList == "" {
			continue
		}
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: manifest list %s: %w", snap.SnapshotID, snap.ManifestList, err)
		}
		for _, m := range manifests {
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
	return refs, nil
}

// walkFiles calls fn for every file under dir (spelled as the table's IO
// expects; norm is its normalized form). A folder that does not exist has
// no files.
func walkFiles(fsys iceio.IO, dir, norm string, fn func(p string, info fs.FileInfo) error) error {
	lister, ok := fsys.(iceio.ListableIO)
	if !ok {
		return fmt.Errorf("the table's file system (%T) cannot list folders", fsys)
	}
	if !strings.Contains(norm, "://") {
		// Local folders: list the resolved path (relative locations resolve
		// against the table's path root, not the working folder).
		dir = norm
	}
	err := lister.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				return fs.SkipAll
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil // symlinks and other special files are never deleted
		}
		return fn(p, info)
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
