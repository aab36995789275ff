package scan_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// openCounter counts the opens of each file.
type openCounter struct {
	iceio.IO
	mu    sync.Mutex
	opens map[string]int
}

func (c *openCounter) Open(name string) (iceio.File, error) {
	c.mu.Lock()
	c.opens[name]++
	c.mu.Unlock()
	return c.IO.Open(name)
}

// TestManifestCacheReadsEachManifestOnce loads the states of several
// snapshots of a table (as a build's net changes do: the snapshots before
// and after each change share most manifests) through one ManifestCache
// and checks that each manifest file is opened once, and that the states
// equal those loaded without the cache; with a cache too small to hold
// anything, every load reads again and the states are still the same.
func TestManifestCacheReadsEachManifestOnce(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	if _, err := e.Create("t", "id long not null, data string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		data := [][]any{{int64(2 * i), fmt.Sprint("a", i)}, {int64(2*i + 1), fmt.Sprint("b", i)}}
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, int64(3))); err != nil {
		t.Fatal(err)
	}
	tbl := e.Load("t")
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) < 6 {
		t.Fatalf("%d snapshots, want 6", len(snaps))
	}
	base, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	describe := func(st *scan.State) string {
		var out []string
		for _, d := range st.Data {
			out = append(out, fmt.Sprintf("%s seq=%d snap=%d deletes=%s", d.Path(), d.DataSeq, d.SnapshotID, st.DeletesFor(d).Key()))
		}
		for _, d := range st.Deletes {
			out = append(out, fmt.Sprintf("delete %s seq=%d", d.Path(), d.DataSeq))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	var want []string
	for i := range snaps {
		st, err := scan.LoadState(context.Background(), base, tbl.Metadata(), &snaps[i])
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, describe(st))
	}
	for _, tc := range []struct {
		name     string
		max      int
		wantOnce bool
	}{{"default bound", 0, true}, {"bound of one entry", 1, false}} {
		t.Run(tc.name, func(t *testing.T) {
			fs := &openCounter{IO: base, opens: map[string]int{}}
			cache := scan.NewManifestCache(tc.max)
			ctx := scan.WithManifestCache(context.Background(), cache)
			for i := range snaps {
				st, err := scan.LoadState(ctx, fs, tbl.Metadata(), &snaps[i])
				if err != nil {
					t.Fatal(err)
				}
				if got := describe(st); got != want[i] {
					t.Fatalf("snapshot %d through the cache:\n%s\nwant:\n%s", i, got, want[i])
				}
			}
			manifests, again := 0, 0
			for path, n := range fs.opens {
				if path == "" || !strings.HasSuffix(path, ".avro") || strings.Contains(path, "snap-") {
					continue // manifest lists
				}
				manifests++
				if n > 1 {
					again++
				}
			}
			if manifests < 6 {
				t.Fatalf("%d manifests opened, want at least 6: %v", manifests, fs.opens)
			}
			if tc.wantOnce && again > 0 {
				t.Fatalf("%d of %d manifests opened more than once: %v", again, manifests, fs.opens)
			}
			if !tc.wantOnce && again == 0 {
				t.Fatalf("with a bound of one entry no manifest was read twice: %v", fs.opens)
			}
			if tc.wantOnce && cache.Len() != manifests {
				t.Fatalf("cache holds %d manifests, want %d", cache.Len(), manifests)
			}
		})
	}
}

// TestPlanCachedMatchesIceberg checks that Plan through a ManifestCache
// (its own pruning by column statistics) plans the files and delete files
// that iceberg-go's planning does, for filters of each kind floe makes,
// and every file for a filter the statistics cannot decide.
func TestPlanCachedMatchesIceberg(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	if _, err := e.Create("t", "id long not null, data string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		data := [][]any{{int64(2 * i), fmt.Sprint("a", i)}, {int64(2*i + 1), fmt.Sprint("b", i)}}
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, int64(3))); err != nil {
		t.Fatal(err)
	}
	tbl := e.Load("t")
	id, data := iceberg.Reference("id"), iceberg.Reference("data")
	describe := func(tasks []scan.Task) string {
		var out []string
		for _, tk := range tasks {
			out = append(out, fmt.Sprintf("%s seq=%d deletes=%s", tk.File.FilePath(), *tk.DataSeq, tk.Deletes.Key()))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	for _, tc := range []struct {
		name   string
		filter iceberg.BooleanExpression
		files  int // files the cached plan keeps
	}{
		{"none", nil, 5},
		{"true", iceberg.AlwaysTrue{}, 5},
		{"equal", iceberg.EqualTo(id, int64(3)), 1},
		{"equal, no file", iceberg.EqualTo(id, int64(30)), 0},
		{"in", iceberg.IsIn(id, int64(0), int64(9)), 2},
		{"range", iceberg.NewAnd(iceberg.GreaterThanEqual(id, int64(3)), iceberg.LessThanEqual(id, int64(5))), 2},
		{"strict range", iceberg.NewAnd(iceberg.GreaterThan(id, int64(3)), iceberg.LessThan(id, int64(6))), 1},
		{"or", iceberg.NewOr(iceberg.EqualTo(id, int64(0)), iceberg.EqualTo(data, "b4")), 2},
		{"string", iceberg.EqualTo(data, "a2"), 3}, // [a0,b0], [a1,b1], [a2,b2]
		{"not equal (undecided)", iceberg.NotEqualTo(id, int64(3)), 5},
		{"not (undecided)", iceberg.NewNot(iceberg.EqualTo(id, int64(3))), 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			ctx := scan.WithManifestCache(e.Ctx, scan.NewManifestCache(0))
			got, err := scan.Plan(ctx, tbl, tbl.CurrentSnapshot(), tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.files {
				t.Fatalf("cached plan has %d files, want %d:\n%s", len(got), tc.files, describe(got))
			}
			if len(want) == len(got) && describe(got) != describe(want) {
				t.Fatalf("cached plan:\n%s\niceberg-go's:\n%s", describe(got), describe(want))
			}
			if len(want) > len(got) {
				t.Fatalf("cached plan keeps %d files, iceberg-go's %d:\n%s\n%s", len(got), len(want), describe(got), describe(want))
			}
		})
	}
}

// TestManifestCacheAcrossBuilds keeps one ManifestCache over "builds" (a
// Begin, the state loads, a Retain), as a transform's builds in one
// process do: the build after a commit opens only the manifests the
// commit wrote, gets the state a load without the cache gets, and after a
// compaction (which replaces the table's manifests) Retain drops the
// manifests no longer listed.
func TestManifestCacheAcrossBuilds(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
	if _, err := e.Create("t", "id long not null, data string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	appendRows := func(i int) {
		data := [][]any{{int64(2 * i), fmt.Sprint("a", i)}, {int64(2*i + 1), fmt.Sprint("b", i)}}
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		appendRows(i)
	}
	cache := scan.NewManifestCache(0)
	build := func() (opened []string, same bool) {
		t.Helper()
		tbl := e.Load("t")
		base, err := tbl.FS(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		fs := &openCounter{IO: base, opens: map[string]int{}}
		cache.Begin()
		got, err := scan.LoadState(scan.WithManifestCache(e.Ctx, cache), fs, tbl.Metadata(), tbl.CurrentSnapshot())
		if err != nil {
			t.Fatal(err)
		}
		cache.Retain()
		want, err := scan.LoadState(e.Ctx, base, tbl.Metadata(), tbl.CurrentSnapshot())
		if err != nil {
			t.Fatal(err)
		}
		for p := range fs.opens {
			if strings.HasSuffix(p, ".avro") && !strings.Contains(p, "snap-") {
				opened = append(opened, p)
			}
		}
		return opened, fmt.Sprint(paths(got)) == fmt.Sprint(paths(want)) && len(got.Deletes) == len(want.Deletes)
	}
	if opened, same := build(); len(opened) != 4 || !same {
		t.Fatalf("first build: %d manifests opened (want 4), same state %v", len(opened), same)
	}
	appendRows(4)
	if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, int64(3))); err != nil {
		t.Fatal(err)
	}
	if opened, same := build(); len(opened) != 2 || !same {
		t.Fatalf("after an append and a delete: %v opened (want the 2 new manifests), same state %v", opened, same)
	}
	held := cache.Len()
	if _, err := tableops.Compact(e.Ctx, e.Target("t", "")); err != nil {
		t.Fatal(err)
	}
	if _, same := build(); !same {
		t.Fatal("after a compaction: the state through the cache differs")
	}
	tbl := e.Load("t")
	base, _ := tbl.FS(e.Ctx)
	listed, err := tbl.CurrentSnapshot().Manifests(base)
	if err != nil {
		t.Fatal(err)
	}
	if cache.Len() != len(listed) || cache.Len() >= held {
		t.Fatalf("after a compaction the cache holds %d manifests (had %d), want the %d listed", cache.Len(), held, len(listed))
	}
}

// paths lists the data file paths of st, sorted.
func paths(st *scan.State) []string {
	var out []string
	for _, d := range st.Data {
		out = append(out, d.Path())
	}
	sort.Strings(out)
	return out
}
