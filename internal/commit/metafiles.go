package commit

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Catalog kinds whose catalog writes the new metadata file into the
// table's metadata folder before its compare-and-swap, and leaves it there
// when the swap fails (iceberg-go's SQL catalog: "metadata-location moved
// underneath us").
var writesMetadataBeforeSwap = map[string]bool{"embedded": true, "sql": true}

var metadataName = regexp.MustCompile(`^(\d+)-[0-9a-fA-F-]{36}(?:\.\w+)?\.metadata\.json$`)

func metadataVersion(loc string) int {
	m := metadataName.FindStringSubmatch(path.Base(loc))
	if m == nil {
		return -1
	}
	v, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return v
}

// refusedMetadata lists the metadata files the catalog wrote for this
// change's commits and then refused, which nothing can ever reference: a
// file of version V is written by a commit that read version V-1 and swaps
// only from it, so once tbl is at version V or later through another file
// (not tbl's current file nor one of its metadata log), that commit failed.
// Only files carrying the change id are considered: floe removes its own.
func (r *runner) refusedMetadata(ctx context.Context, tbl *table.Table) []string {
	if !writesMetadataBeforeSwap[r.cat.Kind()] || tbl == nil {
		return nil
	}
	lowest := -2
	for _, a := range r.atts {
		if a.call == 0 || a.state == committed || (a.state == inDoubt && !r.dead(a)) {
			continue
		}
		if v := metadataVersion(a.baseLoc); lowest == -2 || v < lowest {
			lowest = v
		}
	}
	cur := metadataVersion(tbl.MetadataLocation())
	if lowest == -2 || cur < 0 {
		return nil
	}
	referenced := map[string]bool{path.Base(tbl.MetadataLocation()): true}
	for e := range tbl.Metadata().PreviousFiles() {
		referenced[path.Base(e.MetadataFile)] = true
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil
	}
	dir := strings.TrimSuffix(tbl.Location(), "/") + "/metadata"
	names, err := listDir(fsys, dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, name := range names {
		v := metadataVersion(name)
		// A file far behind the current one could have been current and
		// then dropped from the metadata log (write.metadata.previous-
		// versions-max, 100 by default): leave those alone.
		if v <= lowest || v > cur || v <= cur-100 || referenced[name] {
			continue
		}
		loc := dir + "/" + name
		b, err := readAll(fsys, loc)
		if err != nil || !bytes.Contains(b, []byte(r.id)) {
			continue
		}
		meta, err := table.ParseMetadataBytes(b)
		if err != nil || !carries(meta, r.id) {
			continue
		}
		out = append(out, loc)
	}
	return out
}

// carries reports whether meta holds the change id (in a snapshot summary
// or as PropLastCommitID).
func carries(meta table.Metadata, id string) bool {
	if meta.Properties()[PropLastCommitID] == id {
		return true
	}
	for _, s := range meta.Snapshots() {
		if s.Summary != nil && s.Summary.Properties[PropCommitID] == id {
			return true
		}
	}
	return false
}

func listDir(fsys iceio.IO, dir string) ([]string, error) {
	type readDirer interface {
		ReadDir(string) ([]fs.DirEntry, error)
	}
	if rd, ok := fsys.(readDirer); ok {
		entries, err := rd.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		out := make([]string, 0, len(entries))
		for _, e := range entries {
			if !e.IsDir() {
				out = append(out, e.Name())
			}
		}
		return out, nil
	}
	l, ok := fsys.(iceio.ListableIO)
	if !ok {
		return nil, fs.ErrInvalid
	}
	var out []string
	err := l.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && path.Dir(p) == dir {
			out = append(out, path.Base(p))
		}
		return nil
	})
	return out, err
}

func readAll(fsys iceio.IO, loc string) ([]byte, error) {
	if r, ok := fsys.(iceio.ReadFileIO); ok {
		return r.ReadFile(loc)
	}
	f, err := fsys.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
