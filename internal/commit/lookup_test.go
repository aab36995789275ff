package commit_test

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/tableops"
)

// TestFindSnapshot looks for a change id in a branch's history (between
// its head and a base), and among snapshots a rollback took off the
// branch.
func TestFindSnapshot(t *testing.T) {
	e, _ := newTable(t)
	ident := table.Identifier{"ns", "t"}
	base := e.Load("t").CurrentSnapshot()
	first, _, err := appendOnce(e, commit.Options{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := appendOnce(e, commit.Options{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	tbl := e.Load("t")
	if f, ok := commit.FindSnapshot(tbl, "", base, first.CommitID); !ok || f.Snapshot.SnapshotID != first.SnapshotID || f.OffBranch {
		t.Fatalf("first commit: %+v %t", f, ok)
	}
	if f, ok := commit.FindSnapshot(tbl, "main", nil, second.CommitID); !ok || f.Snapshot.SnapshotID != second.SnapshotID {
		t.Fatalf("second commit: %+v %t", f, ok)
	}
	// Searching from a base after the commit does not find it.
	if _, ok := commit.FindSnapshot(tbl, "", tbl.Metadata().SnapshotByID(first.SnapshotID), first.CommitID); ok {
		t.Fatal("found a commit at or before the base")
	}
	if _, ok := commit.FindSnapshot(tbl, "", base, "no-such-id"); ok {
		t.Fatal("found an id never committed")
	}
	// Rolled back: no longer on the branch, still a snapshot of the table.
	if _, err := tableops.Rollback(e.Ctx, e.Cat, ident, "", first.SnapshotID); err != nil {
		t.Fatal(err)
	}
	tbl = e.Load("t")
	f, ok := commit.FindSnapshot(tbl, "", base, second.CommitID)
	if !ok || !f.OffBranch || f.Snapshot.SnapshotID != second.SnapshotID {
		t.Fatalf("rolled-back commit: %+v %t", f, ok)
	}
}

// TestFindProperty finds a commit without a snapshot by the
// floe.last-commit-id property, also once a later commit changed it (in
// the metadata log).
func TestFindProperty(t *testing.T) {
	e, _ := newTable(t)
	ident := table.Identifier{"ns", "t"}
	baseLoc := e.Load("t").MetadataLocation()
	watermark := func(v string) *commit.Outcome {
		t.Helper()
		out, err := commit.RunUpdates(e.Ctx, e.Cat, ident, commit.Options{SetProperties: iceberg.Properties{"wm": v}},
			func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
				return nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"note": v})}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	w1 := watermark("1")
	ok, err := commit.FindProperty(e.Ctx, e.Load("t"), baseLoc, w1.CommitID)
	if err != nil || !ok {
		t.Fatalf("current property: %t %v", ok, err)
	}
	w2 := watermark("2")
	tbl := e.Load("t")
	if tbl.Properties()[commit.PropLastCommitID] != w2.CommitID {
		t.Fatal("the second commit did not set the property")
	}
	ok, err = commit.FindProperty(e.Ctx, tbl, baseLoc, w1.CommitID)
	if err != nil || !ok {
		t.Fatalf("property overwritten since: %t %v (want found in the metadata log)", ok, err)
	}
	ok, err = commit.FindProperty(e.Ctx, tbl, baseLoc, "no-such-id")
	if err != nil || ok {
		t.Fatalf("an id never committed: %t %v", ok, err)
	}
}
