// Package lazysubstrait keeps the floe binary from loading Substrait's
// default extension collection at package initialisation. Only the floe
// binary imports it (cmd/floe); a program built on floe's Go API keeps
// iceberg-go's eager load.
//
// Why: iceberg-go v0.7's table/substrait package initialises a package
// variable with substrait-go's default collection, which parses every YAML
// extension file substrait embeds: about 32 MB and 530,000 allocations,
// 50-200 ms of CPU, before main runs, in every floe process, `floe version`
// and `floe --help` included. iceberg-go uses the collection only to turn
// filters into Arrow compute expressions when it scans or writes.
//
// How: by Go's package initialisation order (the spec: packages sorted by
// import path, each initialised once its imports are), this package, whose
// only non-standard import is substrait-go's extensions package, is
// initialised right after that package and before iceberg-go's
// table/substrait, whose imports include substrait-go packages that sort
// after this one. Its init replaces the extensions package's once-function
// behind GetDefaultCollection (linked by name) with one that returns an
// empty collection, which iceberg-go's init then extends with its own
// function set as before. Load adds the default extension files to that
// same collection, once.
//
// The binary never calls Load: iceberg-go looks functions up in the
// collection only to convert a row filter it is given into an Arrow
// compute expression (a scan's residual filter, Transaction.Delete and
// Overwrite with a filter), and floe gives it none: its reads hand
// iceberg-go one file with no filter (package scan), its filters are its
// own (package expr), its deletes and rewrites its own (package tableops).
// Without Load such a conversion fails with an error naming the missing
// function, not a wrong answer (TestLoadMatchesEager); a floe path that
// ever hands iceberg-go a filter must call Load first. Every command of
// the binary runs in cmd/floe's end-to-end tests with the collection
// deferred. The pinned substrait-go version is what this is written
// against: TestLoadMatchesEager fails if the collection Load builds
// differs from the eager one.
package lazysubstrait

import (
	"fmt"
	"path"
	"strings"
	"sync"
	_ "unsafe" // go:linkname

	"github.com/substrait-io/substrait"
	"github.com/substrait-io/substrait-go/v8/extensions"
)

//go:linkname defaultCollection github.com/substrait-io/substrait-go/v8/extensions.getDefaultCollectionOnce
var defaultCollection func() (*extensions.Collection, error)

var (
	deferred *extensions.Collection // what GetDefaultCollection returns
	loadOnce = sync.OnceValue(load)
	active   bool // init replaced the eager load
)

func init() {
	if defaultCollection == nil {
		return // the variable moved: keep the eager load
	}
	// A Collection's maps are made by its first Load (iceberg-go's init
	// asks URILoaded first): an extension file without functions makes
	// them, under a URN of floe's own that nothing looks up.
	c := &extensions.Collection{}
	if err := c.Load("floe:lazysubstrait", strings.NewReader("urn: extension:floedata:deferred\n")); err != nil {
		return // keep the eager load
	}
	deferred = c
	defaultCollection = func() (*extensions.Collection, error) { return deferred, nil }
	active = true
}

// Active reports whether the deferral is in place (Load then loads).
func Active() bool { return active }

// Load adds Substrait's default extensions to the collection iceberg-go
// holds, once; later calls return the first call's error. Without the
// deferral (a program that does not import this package loads eagerly) it
// does nothing.
func Load() error {
	if !active {
		return nil
	}
	return loadOnce()
}

// load adds every default extension file, as substrait-go's own default
// load does (the same URIs, the same files left out).
func load() error {
	fsys := substrait.GetSubstraitExtensionsFS()
	entries, err := fsys.ReadDir("extensions")
	if err != nil {
		return fmt.Errorf("substrait extensions: %w", err)
	}
	for _, ent := range entries {
		if ent.Name() == "unknown.yaml" {
			continue
		}
		f, err := fsys.Open(path.Join("extensions", ent.Name()))
		if err != nil {
			return fmt.Errorf("substrait extensions: %w", err)
		}
		err = deferred.Load(extensions.SubstraitDefaultURIPrefix+ent.Name(), f)
		f.Close()
		if err != nil {
			return fmt.Errorf("substrait extension %s: %w", ent.Name(), err)
		}
	}
	return nil
}
