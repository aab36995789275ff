package transform

import (
	"fmt"
	"testing"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestManifestStore: the cache a build of a transform leaves is the one
// its next build takes (the manifests it read, within the bound); keeping
// a cache evicts those of the transforms built longest ago until the
// total fits, and a cache larger than the bound alone is not kept.
func TestManifestStore(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 3 { // three appends: three manifests of one entry each
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), [][]any{{int64(i)}})); err != nil {
			t.Fatal(err)
		}
	}
	tbl := e.Load("t")
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := func(c *scan.ManifestCache) {
		t.Helper()
		if _, err := scan.LoadState(scan.WithManifestCache(e.Ctx, c), fs, tbl.Metadata(), tbl.CurrentSnapshot()); err != nil {
			t.Fatal(err)
		}
	}
	bound := retainedManifestEntries
	t.Cleanup(func() { retainedManifestEntries = bound })
	name := func(s string) string { return fmt.Sprintf("%s/%s", t.Name(), s) } // other tests keep their own
	held := func(n string) int {
		m, _ := retainedManifests()
		return m[n]
	}

	a := takeManifests(name("a"))
	read(a)
	keepManifests(name("a"), a)
	if got := held(name("a")); got != 3 {
		t.Fatalf("after a's build the store holds %d entries for it, want 3", got)
	}
	if again := takeManifests(name("a")); again != a || held(name("a")) != 0 {
		t.Fatalf("a's next build got another cache (%p, not %p) or the store still holds it", again, a)
	}
	// A build that reads nothing keeps nothing: Retain drops what it did not read.
	keepManifests(name("a"), a)
	if got := held(name("a")); got != 0 {
		t.Fatalf("a build that read no manifest left %d entries", got)
	}

	retainedManifestEntries = 5
	for _, n := range []string{"b", "c"} {
		c := takeManifests(name(n))
		read(c)
		keepManifests(name(n), c)
	}
	if _, total := retainedManifests(); held(name("b")) != 0 || held(name("c")) != 3 || total > 5 {
		t.Fatalf("with a bound of 5 entries: b holds %d (want 0: evicted), c %d (want 3), %d in all", held(name("b")), held(name("c")), total)
	}
	retainedManifestEntries = 2
	d := takeManifests(name("d"))
	read(d)
	keepManifests(name("d"), d)
	if got := held(name("d")); got != 0 {
		t.Fatalf("a cache of 3 entries was kept under a bound of 2 (%d held)", got)
	}
}
