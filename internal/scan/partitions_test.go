package scan_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/internal/scan"
)

// countingIO counts the manifests (Avro files other than manifest lists)
// opened through it.
type countingIO struct {
	iceio.IO
	manifests *atomic.Int64
}

func (c countingIO) Open(name string) (iceio.File, error) {
	if strings.HasSuffix(name, ".avro") && !strings.Contains(name, "/snap-") {
		c.manifests.Add(1)
	}
	return c.IO.Open(name)
}

// TestLoadStateIn checks the partition-restricted state: for the data files
// of the chosen partitions it answers as the full state does (the same
// files, the same delete files for each), and it reads only the manifests
// whose partition summaries allow those partitions.
func TestLoadStateIn(t *testing.T) {
	ctx := context.Background()
	env, err := bench.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	// 6 partitions, 2 files each; 6 snapshots merged into 3 manifests of
	// 2 partitions each.
	l := bench.MetaLayout{Partitions: 6, FilesPerPartition: 2, RowsPerFile: 5, Snapshots: 6, Manifests: 3}
	props := iceberg.Properties{"write.delete.mode": "merge-on-read"}
	if _, err := env.GenerateMeta("t", l, props, nil); err != nil {
		t.Fatal(err)
	}
	// Position deletes in partitions 0 and 1 (ids of their first files): one delete manifest whose summary spans partitions 0..1.
	if _, err := env.Delete("t", func(id int64) bool {
		p, f, _ := l.FileOf(id)
		return f == 0 && (p == 0 || p == 1) && id%2 == 0
	}); err != nil {
		t.Fatal(err)
	}
	tbl, err := env.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	cfs := countingIO{IO: fs, manifests: &n}
	snap := tbl.CurrentSnapshot()
	full, err := scan.LoadState(ctx, cfs, tbl.Metadata(), snap)
	if err != nil {
		t.Fatal(err)
	}
	all := n.Load()
	if len(full.Deletes) != 2 {
		t.Fatalf("%d delete files, want 2", len(full.Deletes))
	}
	for _, part := range []int64{1, 2} {
		parts := scan.NewPartitions(tbl.Metadata())
		var mine []*scan.Entry
		for _, e := range full.Data {
			if e.File.Partition()[1000] == part {
				parts.Add(e.File)
				mine = append(mine, e)
			}
		}
		n.Store(0)
		st, err := scan.LoadStateIn(ctx, cfs, tbl.Metadata(), snap, parts)
		if err != nil {
			t.Fatal(err)
		}
		// Partition 1 or 2 lies in one of the 3 data manifests; partition
		// 1 also has the delete manifest.
		want := int64(1)
		if part == 1 {
			want = 2
		}
		if got := n.Load(); got != want || all != 4 {
			t.Fatalf("partition %d: read %d manifests (the whole state %d), want %d (and 4)", part, got, all, want)
		}
		for _, e := range mine {
			got, ok := st.DataFile(e.Path())
			if !ok {
				t.Fatalf("partition %d: restricted state lacks %s", part, e.Path())
			}
			if a, b := st.DeletesFor(got).Key(), full.DeletesFor(e).Key(); a != b {
				t.Fatalf("partition %d: %s has deletes %q, the full state %q", part, e.Path(), a, b)
			}
			if part == 1 && e.File.FilePath() == mine[0].File.FilePath() && st.DeletesFor(got).Empty() && !full.DeletesFor(e).Empty() {
				t.Fatal("the position delete of partition 1 is missing")
			}
		}
		// One manifest of the three: its two partitions' four files.
		if len(st.Data) != 4 || len(full.Data) != 12 {
			t.Fatalf("partition %d: restricted state has %d data files (the whole state %d), want 4 (and 12)", part, len(st.Data), len(full.Data))
		}
	}
	// A nil set is the whole state.
	all2, err := scan.LoadStateIn(ctx, fs, tbl.Metadata(), snap, nil)
	if err != nil || len(all2.Data) != len(full.Data) {
		t.Fatalf("LoadStateIn(nil): %v, %d files", err, len(all2.Data))
	}
}
