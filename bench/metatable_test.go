package bench

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/scan"
)

// TestGenerateMeta generates a small metadata-scale table and checks what
// the layout promises: every row once with its generated values, the
// current snapshot listing the requested number of manifests, one
// snapshot per step with its own manifest list, and files' key ranges
// disjoint.
func TestGenerateMeta(t *testing.T) {
	ctx := context.Background()
	env, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	l := MetaLayout{Partitions: 4, FilesPerPartition: 3, RowsPerFile: 5, Snapshots: 6, Manifests: 3}
	tbl, err := env.GenerateMeta("meta", l, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != l.Snapshots {
		t.Fatalf("%d snapshots, want %d", n, l.Snapshots)
	}
	lists := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		lists[s.ManifestList] = true
	}
	if len(lists) != l.Snapshots {
		t.Fatalf("%d manifest lists for %d snapshots", len(lists), l.Snapshots)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(mans) != l.Manifests {
		t.Fatalf("current snapshot lists %d manifests, want %d", len(mans), l.Manifests)
	}
	// A snapshot in the middle of a block lists the merged manifests of
	// the blocks before it plus its block's small manifests.
	mid, err := tbl.Metadata().SnapshotByID(MetaSnapshotID(2)).Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	if len(mid) != 2 {
		t.Fatalf("snapshot 2 lists %d manifests, want 2 (one merged, one small)", len(mid))
	}
	st, err := scan.LoadState(ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Data) != l.Files() {
		t.Fatalf("%d live data files, want %d", len(st.Data), l.Files())
	}
	schema, err := ArrowSchema(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := scan.Rows(ctx, tbl, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(1).(*array.Int64)
		for i := range int(rec.NumRows()) {
			id := ids.Value(i)
			if seen[id] {
				t.Fatalf("id %d read twice", id)
			}
			seen[id] = true
			p, f, ok := l.FileOf(id)
			if !ok {
				t.Fatalf("id %d is not a generated row", id)
			}
			want, err := l.MetaRows(schema, p*l.FilesPerPartition+f)
			if err != nil {
				t.Fatal(err)
			}
			j := int(id % int64(l.RowsPerFile))
			for c := range 4 {
				if got, exp := rec.Column(c).ValueStr(i), want.Column(c).ValueStr(j); got != exp {
					t.Fatalf("id %d column %d: %s, want %s", id, c, got, exp)
				}
			}
			want.Release()
		}
		rec.Release()
	}
	if int64(len(seen)) != l.Rows() {
		t.Fatalf("read %d rows, want %d", len(seen), l.Rows())
	}
	// Every file's id bounds are its own ids' range.
	for _, e := range st.Data {
		lo, hi := e.File.LowerBoundValues()[2], e.File.UpperBoundValues()[2]
		if len(lo) != 8 || len(hi) != 8 {
			t.Fatalf("file %s has no id bounds", e.Path())
		}
	}
}
