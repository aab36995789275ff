package commit

import (
	"context"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Markers that make a commit findable after its answer was lost.
const (
	// PropCommitID, in the summary of every snapshot floe commits, is the
	// id of the change (one UUID per Run, shared by its attempts).
	PropCommitID = "floe.commit-id"
	// PropLastCommitID is the table property a commit without a snapshot
	// (watermark advances, ref changes, rollbacks, schema changes) sets to
	// its change id, in the same metadata commit.
	PropLastCommitID = "floe.last-commit-id"
)

// Found says where a change was found on a table.
type Found struct {
	// Snapshot is the snapshot carrying the change id (nil for a commit
	// without a snapshot, found by PropLastCommitID).
	Snapshot *table.Snapshot
	// OffBranch: the snapshot is not in the branch's history any more
	// (someone rolled the branch back after it landed).
	OffBranch bool
}

// FindSnapshot looks for a snapshot whose summary carries id on tbl: first
// in the ancestry of branch from its head back to base (nil: the whole
// ancestry), then among every snapshot newer than base.
func FindSnapshot(tbl *table.Table, branch string, base *table.Snapshot, id string) (Found, bool) {
	if branch == "" {
		branch = table.MainBranch
	}
	meta := tbl.Metadata()
	has := func(s *table.Snapshot) bool {
		return s != nil && s.Summary != nil && s.Summary.Properties[PropCommitID] == id
	}
	seen := map[int64]bool{}
	for s := meta.SnapshotByName(branch); s != nil && !seen[s.SnapshotID]; {
		if base != nil && s.SnapshotID == base.SnapshotID {
			break
		}
		seen[s.SnapshotID] = true
		if has(s) {
			return Found{Snapshot: s}, true
		}
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	for _, s := range meta.Snapshots() {
		if base != nil && s.SequenceNumber <= base.SequenceNumber && s.SequenceNumber > 0 {
			continue
		}
		if has(&s) {
			s := s
			return Found{Snapshot: &s, OffBranch: true}, true
		}
	}
	return Found{}, false
}

// FindProperty reports whether the change id set PropLastCommitID on tbl
// since the metadata file baseLocation: in the current properties, or in
// a metadata file of the table's metadata log written after baseLocation
// (when later commits changed the property again).
func FindProperty(ctx context.Context, tbl *table.Table, baseLocation, id string) (bool, error) {
	if tbl.Properties()[PropLastCommitID] == id {
		return true, nil
	}
	var later []string
	for e := range tbl.Metadata().PreviousFiles() {
		if e.MetadataFile == baseLocation {
			later = later[:0]
			continue
		}
		later = append(later, e.MetadataFile)
	}
	if len(later) == 0 {
		return false, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return false, err
	}
	for _, loc := range later {
		meta, err := readMetadata(fs, loc)
		if err != nil {
			return false, err
		}
		if meta.Properties()[PropLastCommitID] == id {
			return true, nil
		}
	}
	return false, nil
}

func readMetadata(fs iceio.IO, loc string) (table.Metadata, error) {
	f, err := fs.Open(loc)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return table.ParseMetadata(f)
}
