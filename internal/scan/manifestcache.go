package scan

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// ManifestCache keeps the live entries of the manifest files read through
// it, so that the steps of one build (the net changes load the state of
// the snapshots before and after each change; each reads nearly the same
// manifests) decode each manifest once. A manifest file is immutable once
// written, and most of the cost of reading one is parsing its Avro schema,
// not reading its bytes: a cache of decoded entries, not of file contents.
//
// It is bounded by the number of entries it holds (maxEntries); past it, a
// manifest is read and not kept. Entries are shared between readers and
// must not be changed. It is safe for concurrent use.
//
// A cache may outlive a build, for the next build of the same transform:
// Begin marks the start of a build and Retain, at its end, drops the
// manifests the build did not read (those a later snapshot no longer
// lists), so that what a cache keeps between builds is the last build's
// working set.
type ManifestCache struct {
	mu         sync.Mutex
	byKey      map[manifestKey]*cached
	entries    int
	maxEntries int
	gen        uint64 // the build under way (Begin)
}

// cached is one manifest's live entries and the last build that read them.
type cached struct {
	es  []*Entry
	gen uint64
}

// DefaultManifestCacheEntries bounds a build's manifest cache: about
// 1-2 KB of memory an entry (a data or delete file with its statistics).
const DefaultManifestCacheEntries = 200_000

// NewManifestCache returns an empty cache holding up to maxEntries
// manifest entries (DefaultManifestCacheEntries when maxEntries <= 0).
func NewManifestCache(maxEntries int) *ManifestCache {
	if maxEntries <= 0 {
		maxEntries = DefaultManifestCacheEntries
	}
	return &ManifestCache{byKey: map[manifestKey]*cached{}, maxEntries: maxEntries}
}

// Begin marks the start of a build that reads through c.
func (c *ManifestCache) Begin() {
	c.mu.Lock()
	c.gen++
	c.mu.Unlock()
}

// Retain drops the manifests no read since the last Begin asked for, and
// returns the number of entries c still holds.
func (c *ManifestCache) Retain() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, m := range c.byKey {
		if m.gen != c.gen {
			delete(c.byKey, k)
			c.entries -= len(m.es)
		}
	}
	return c.entries
}

// manifestKey identifies a manifest's entries as a snapshot sees them:
// entries inherit the sequence number (and, in v3, the first row ID) of
// the manifest list's entry for the manifest, so these are part of the
// key with the path.
type manifestKey struct {
	path       string
	seq        int64
	minSeq     int64
	snapshotID int64
	firstRowID int64
}

func keyOf(m iceberg.ManifestFile) manifestKey {
	k := manifestKey{path: m.FilePath(), seq: m.SequenceNum(), minSeq: m.MinSequenceNum(), snapshotID: m.SnapshotID(), firstRowID: -1}
	if id := m.FirstRowID(); id != nil {
		k.firstRowID = *id
	}
	return k
}

type manifestCacheKey struct{}

// WithManifestCache returns a context whose state loads (LoadState,
// LoadStateIn) read manifests through c.
func WithManifestCache(ctx context.Context, c *ManifestCache) context.Context {
	return context.WithValue(ctx, manifestCacheKey{}, c)
}

// manifestCacheOf is the cache of ctx, or nil.
func manifestCacheOf(ctx context.Context) *ManifestCache {
	c, _ := ctx.Value(manifestCacheKey{}).(*ManifestCache)
	return c
}

// Len is the number of manifests held.
func (c *ManifestCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// entries returns the live entries (deleted ones left out) of manifest m,
// from the cache when c holds them; c may be nil (no cache).
func (c *ManifestCache) entriesOf(ctx context.Context, fs iceio.IO, m iceberg.ManifestFile) ([]*Entry, error) {
	var k manifestKey
	if c != nil {
		k = keyOf(m)
		c.mu.Lock()
		m, ok := c.byKey[k]
		if ok {
			m.gen = c.gen
		}
		c.mu.Unlock()
		if ok {
			return m.es, nil
		}
	}
	var es []*Entry
	for e, err := range m.Entries(fs, true) {
		if err != nil {
			return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		es = append(es, &Entry{File: e.DataFile(), DataSeq: e.SequenceNum(), SnapshotID: e.SnapshotID()})
	}
	if c != nil {
		c.mu.Lock()
		if _, ok := c.byKey[k]; !ok && c.entries+len(es) <= c.maxEntries {
			c.byKey[k] = &cached{es: es, gen: c.gen}
			c.entries += len(es)
		}
		c.mu.Unlock()
	}
	return es, nil
}
