package transform

import (
	"sync"

	"github.com/floedata/floe/internal/scan"
)

// retainedManifestEntries bounds the manifest entries the process keeps
// between builds, over all transforms (about 1-2 KB of memory an entry);
// a variable for tests.
var retainedManifestEntries = 100_000

// manifestStore keeps, for each transform built in this process, the
// manifest cache of its last build, so that the next build (floe run on a
// schedule, floe serve, a library's loop) decodes only the manifests
// committed since: decoding a manifest, mostly parsing its Avro schema,
// was the largest fixed cost of a small incremental build on a table of
// 100+ manifests. Manifest files are immutable and their paths unique,
// so a cache outliving a build is as correct as one inside it; it is
// keyed by transform so that each keeps its own working set (a key shared
// by two transforms only costs re-reads).
//
// What it keeps is bounded by retainedManifestEntries: a cache larger than
// that is dropped after its build, and keeping one evicts the caches of
// the transforms built longest ago until the total fits.
var manifestStore = struct {
	mu    sync.Mutex
	idle  map[string]*idleManifests
	total int    // entries held by idle
	clock uint64 // orders the puts, for eviction
}{idle: map[string]*idleManifests{}}

type idleManifests struct {
	c       *scan.ManifestCache
	entries int
	at      uint64
}

// takeManifests returns the cache the last build of name left (or a new
// one), begun for a new build. Two builds of name at once get a cache
// each.
func takeManifests(name string) *scan.ManifestCache {
	s := &manifestStore
	s.mu.Lock()
	m := s.idle[name]
	if m != nil {
		delete(s.idle, name)
		s.total -= m.entries
	}
	s.mu.Unlock()
	c := scan.NewManifestCache(0)
	if m != nil {
		c = m.c
	}
	c.Begin()
	return c
}

// keepManifests keeps c, the cache of a build of name that has ended, for
// its next build: only the manifests this build read, within the bound.
func keepManifests(name string, c *scan.ManifestCache) {
	n := c.Retain()
	if n > retainedManifestEntries {
		return
	}
	s := &manifestStore
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.idle[name]; old != nil { // another build of name ended first
		delete(s.idle, name)
		s.total -= old.entries
	}
	for s.total+n > retainedManifestEntries {
		var oldest string
		for k, m := range s.idle {
			if oldest == "" || m.at < s.idle[oldest].at {
				oldest = k
			}
		}
		s.total -= s.idle[oldest].entries
		delete(s.idle, oldest)
	}
	s.clock++
	s.idle[name] = &idleManifests{c: c, entries: n, at: s.clock}
	s.total += n
}

// retainedManifests reports the transforms whose caches are kept and the
// entries they hold, for tests.
func retainedManifests() (map[string]int, int) {
	s := &manifestStore
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, m := range s.idle {
		out[k] = m.entries
	}
	return out, s.total
}

// DropRetainedManifests empties the store, so that the next build of every
// transform decodes its manifests as the first build of a process does
// (benchmarks of one-shot runs).
func DropRetainedManifests() {
	s := &manifestStore
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.idle)
	s.total = 0
}
