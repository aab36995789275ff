package tableops_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/tableops"
)

// orphanEnv is a catalog with tables ns.a and ns.b, each with one
// committed data file, and a stray file in each data folder.
func orphanEnv(t *testing.T) *tabletest.Env {
	t.Helper()
	e := tabletest.New(t)
	for _, name := range []string{"a", "b"} {
		tbl, err := e.Create(name, "id long not null", "", []string{"id"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := tabletest.ParseTuples("(1) (2)")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(tabletest.ArrowSchema(tbl), rec)); err != nil {
			t.Fatal(err)
		}
		writeStray(t, e, name, "data/stray.parquet")
	}
	return e
}

func tableDir(e *tabletest.Env, name string) string {
	return catalog.NormalizeLocation(e.Load(name).Location(), "")
}

func writeStray(t *testing.T, e *tabletest.Env, name, rel string) string {
	t.Helper()
	p := filepath.Join(tableDir(e, name), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// files lists every file under dir.
func files(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out[p] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func commitUpdates(t *testing.T, e *tabletest.Env, name string, ups ...table.Update) {
	t.Helper()
	if _, _, err := e.Cat.Iceberg().CommitTable(e.Ctx, table.Identifier{"ns", name}, nil, ups); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveOrphansDeletesOnlyUnreferencedFilesOfItsFolders(t *testing.T) {
	e := orphanEnv(t)
	dirA := tableDir(e, "a")
	metaStray := writeStray(t, e, "a", "metadata/stray.avro")
	outside := writeStray(t, e, "a", "notes.txt")
	before := files(t, e.Cat.Warehouse())

	res, err := tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "a"}, tableops.OrphanOptions{OlderThan: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 0 {
		t.Fatalf("files younger than --older-than were listed: %+v", res.Files)
	}

	res, err = tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "a"}, tableops.OrphanOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dirA, "data", "stray.parquet"), metaStray}
	if len(res.Files) != 2 || res.Files[0].Path != want[0] || res.Files[1].Path != want[1] || res.Files[0].Deleted {
		t.Fatalf("dry run listed %+v, want %v not deleted", res.Files, want)
	}
	if _, err := tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "a"}, tableops.OrphanOptions{OlderThan: 0}); err != nil {
		t.Fatal(err)
	}
	after := files(t, e.Cat.Warehouse())
	for p := range before {
		gone := !after[p]
		if gone != (p == want[0] || p == want[1]) {
			t.Errorf("%s: deleted=%v", p, gone)
		}
	}
	if !after[outside] {
		t.Errorf("%s (outside data/ and metadata/) was deleted", outside)
	}
	rows, err := e.Rows(e.Load("a"), scan.At{})
	if err != nil || strings.Join(rows, " ") != "(1) (2)" {
		t.Fatalf("table a after remove-orphans: %v %v", rows, err)
	}
}

// A table whose location was moved onto the warehouse root, another table
// or a folder inside another table is refused before anything is listed.
func TestRemoveOrphansRefusesUnsafeLocations(t *testing.T) {
	for _, tc := range []struct {
		name string
		loc  func(e *tabletest.Env) string
		prop string // write.data.path instead of the location
	}{
		{"warehouse root", func(e *tabletest.Env) string { return "file://" + e.Cat.Warehouse() }, ""},
		{"parent of the warehouse", func(e *tabletest.Env) string { return filepath.Dir(e.Cat.Warehouse()) }, ""},
		{"namespace folder", func(e *tabletest.Env) string { return filepath.Dir(tableDir(e, "a")) }, ""},
		{"another table", func(e *tabletest.Env) string { return "file://" + tableDir(e, "a") }, ""},
		{"inside another table", func(e *tabletest.Env) string { return tableDir(e, "a") + "/data" }, ""},
		{"data path on the warehouse", func(e *tabletest.Env) string { return "file://" + e.Cat.Warehouse() }, table.WriteDataPathKey},
		{"metadata path on another table", func(e *tabletest.Env) string { return tableDir(e, "a") }, table.WriteMetadataPathKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := orphanEnv(t)
			if tc.prop != "" {
				commitUpdates(t, e, "b", table.NewSetPropertiesUpdate(iceberg.Properties{tc.prop: tc.loc(e)}))
			} else {
				commitUpdates(t, e, "b", table.NewSetLocationUpdate(tc.loc(e)))
			}
			before := files(t, e.Cat.Warehouse())
			for _, dry := range []bool{true, false} {
				_, err := tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "b"}, tableops.OrphanOptions{DryRun: dry})
				if !errors.Is(err, catalog.ErrUnsafeLocation) {
					t.Fatalf("dry run %v: got %v, want %v", dry, err, catalog.ErrUnsafeLocation)
				}
			}
			after := files(t, e.Cat.Warehouse())
			if len(after) != len(before) {
				t.Fatalf("%d files before, %d after a refused remove-orphans", len(before), len(after))
			}
		})
	}
}

// A file no snapshot of its own table references stays when another
// table of the catalog references it.
func TestRemoveOrphansKeepsFilesOtherTablesReference(t *testing.T) {
	e := orphanEnv(t)
	// Table a adopts b's data file, then b forgets its snapshot.
	b := e.Load("b")
	var bFile string
	for p := range files(t, filepath.Join(tableDir(e, "b"), "data")) {
		if !strings.HasSuffix(p, "stray.parquet") {
			bFile = p
		}
	}
	tx := e.Load("a").NewTransaction()
	if err := tx.AddFiles(e.Ctx, []string{bFile}, nil, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	commitUpdates(t, e, "b", table.NewRemoveSnapshotRefUpdate(table.MainBranch),
		table.NewRemoveSnapshotsUpdate([]int64{b.CurrentSnapshot().SnapshotID}, false))

	res, err := tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "b"}, tableops.OrphanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bFile); err != nil {
		t.Fatalf("the file table a references was deleted: %v (result %+v)", err, res.Files)
	}
	if _, err := os.Stat(filepath.Join(tableDir(e, "b"), "data", "stray.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the stray file of b was not deleted: %v", err)
	}
	rows, err := e.Rows(e.Load("a"), scan.At{})
	if err != nil || strings.Join(rows, " ") != "(1) (1) (2) (2)" {
		t.Fatalf("table a: %v %v", rows, err)
	}
}

func TestRemoveOrphansNegativeAge(t *testing.T) {
	e := orphanEnv(t)
	if _, err := tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "a"}, tableops.OrphanOptions{OlderThan: -time.Hour}); err == nil {
		t.Fatal("a negative age was accepted")
	}
}

// A table registered with a path root (relative paths in its metadata)
// resolves its references against the root, not the working folder: only
// the stray file goes.
func TestRemoveOrphansPathRootTable(t *testing.T) {
	src := testdir.Shared(t, "iceberg", "duckdb_hive_partitioned_table")
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	e := tabletest.New(t)
	ident := table.Identifier{"ns", "hive"}
	if _, err := e.Cat.Register(e.Ctx, ident, "data/persistent/hive_partitioned_table/metadata/v4.metadata.json", root); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(root, "data/persistent/hive_partitioned_table/data/stray.parquet")
	if err := os.WriteFile(stray, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := files(t, root)
	res, err := tableops.RemoveOrphans(e.Ctx, e.Cat, ident, tableops.OrphanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Path != stray || !res.Files[0].Deleted {
		t.Fatalf("got %+v, want only %s deleted", res.Files, stray)
	}
	after := files(t, root)
	if len(after) != len(before)-1 || after[stray] {
		t.Fatalf("%d files before, %d after", len(before), len(after))
	}
	tbl, err := e.Cat.Load(e.Ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := e.Rows(tbl, scan.At{}); err != nil || len(rows) == 0 {
		t.Fatalf("table after remove-orphans: %d rows, %v", len(rows), err)
	}
}
