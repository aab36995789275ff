package main_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/testdir"
)

// TestDeltaSyncFirstRunKilled kills `floe delta sync`'s first run (which
// creates the Iceberg table and migrates the Delta snapshot into it) with
// SIGKILL at random moments. The table must be either missing or complete
// with its watermark: the embedded catalog creates it with the migrated
// snapshot in one commit, so no reader ever sees it empty without a
// watermark (before, 7 of 46 kills left such a table). A rerun completes
// it, and `floe table remove-orphans` then removes what the killed runs
// left (a killed process cannot clean up after itself).
func TestDeltaSyncFirstRunKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	src := testdir.Shared(t, "delta", "deltars-cdf-table")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	work := t.TempDir()
	dir := filepath.Join(work, "src")
	copyDir(t, src, dir)
	sync := func(name string) *exec.Cmd {
		cmd := exec.Command(floeBin, "--warehouse", "wh", "--quiet", "delta", "sync", dir, "shop."+name, "--equality-columns", "id")
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
		return cmd
	}
	// One run to completion gives the scale of a run and the rows.
	start := time.Now()
	if out, err := sync("ref").CombinedOutput(); err != nil {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	scale := time.Since(start)
	ctx := context.Background()
	open := func() *catalog.Catalog {
		cat, err := catalog.Open(ctx, catalog.Options{Warehouse: filepath.Join(work, "wh")})
		if err != nil {
			t.Fatal(err)
		}
		return cat
	}
	// state is "missing", "empty" (no watermark) or the watermark and row
	// count.
	state := func(name string) string {
		cat := open()
		defer cat.Close()
		tbl, err := cat.Load(ctx, table.Identifier{"shop", name})
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return "missing"
		}
		if err != nil {
			t.Fatal(err)
		}
		w, ok := tbl.Properties()["floe.delta.source-version"]
		if !ok {
			return "empty"
		}
		if s := tbl.CurrentSnapshot(); s != nil {
			return fmt.Sprintf("watermark %s, %s rows", w, s.Summary.Properties["total-records"])
		}
		return fmt.Sprintf("watermark %s, no snapshot", w)
	}
	want := state("ref")
	counts := map[string]int{}
	iterations := 12
	for i := 0; i < iterations; i++ {
		name := fmt.Sprintf("t%d", i)
		cmd := sync(name)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		delay := time.Duration(rng.Int64N(int64(scale) + 1))
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
		case <-time.After(delay):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
		}
		got := state(name)
		switch got {
		case "missing":
			counts["killed before the commit (table missing)"]++
		case want:
			counts["complete"]++
		default:
			t.Fatalf("run %d killed after %s left the table %q; want missing or %q", i, delay, got, want)
		}
		if out, err := sync(name).CombinedOutput(); err != nil {
			t.Fatalf("rerun %d: %v\n%s", i, err, out)
		}
		if got := state(name); got != want {
			t.Fatalf("after the rerun %d the table is %q, want %q", i, got, want)
		}
		left := unreferenced(t, open, name)
		counts[fmt.Sprintf("files left by the kill: %d", len(left))]++
		if len(left) > 0 {
			cmd := exec.Command(floeBin, "--warehouse", "wh", "--quiet", "table", "remove-orphans", "shop."+name, "--older-than", "0s")
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("remove-orphans: %v\n%s", err, out)
			}
			if again := unreferenced(t, open, name); len(again) > 0 {
				t.Fatalf("remove-orphans left %v", again)
			}
			if got := state(name); got != want {
				t.Fatalf("after remove-orphans the table is %q, want %q", got, want)
			}
		}
	}
	t.Logf("%d killed first runs: %v", iterations, counts)
}

// unreferenced lists the files under the table's location that no
// metadata file, manifest list or manifest references.
func unreferenced(t *testing.T, open func() *catalog.Catalog, name string) []string {
	t.Helper()
	cat := open()
	defer cat.Close()
	ctx := context.Background()
	tbl, err := cat.Load(ctx, table.Identifier{"shop", name})
	if err != nil {
		t.Fatal(err)
	}
	local := func(p string) string { return filepath.Clean(strings.TrimPrefix(p, "file://")) }
	ref := map[string]bool{local(tbl.MetadataLocation()): true}
	for e := range tbl.Metadata().PreviousFiles() {
		ref[local(e.MetadataFile)] = true
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		ref[local(s.ManifestList)] = true
		mfs, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mfs {
			ref[local(m.FilePath())] = true
			for e, err := range m.Entries(fsys, false) {
				if err != nil {
					t.Fatal(err)
				}
				ref[local(e.DataFile().FilePath())] = true
			}
		}
	}
	var out []string
	filepath.WalkDir(local(tbl.Location()), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !ref[p] {
			out = append(out, p)
		}
		return nil
	})
	return out
}
