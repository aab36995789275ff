package tableops_test

import (
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
	"github.com/floedata/floe/tableops"
)

// A warehouse folder whose name holds characters that mean something in a
// URI keeps its tables inside it, and the operations that delete files
// find them there: the embedded catalog's warehouse URI is percent-encoded,
// and floe reads file URIs decoded, as its file IO opens them. Before,
// "w%20x" put the tables in "w x", "ha#sh" in "ha" (the rest a fragment),
// "bad%b" failed to create a table, and with "sp ace" remove-orphans and
// drop --purge listed a folder that does not exist.
func TestWarehouseFolderWithURICharacters(t *testing.T) {
	for _, name := range []string{"sp ace", "w%20x", "bad%b", "ha#sh", "q?m", "a+b&c=d"} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			wh := filepath.Join(parent, name)
			e := tabletest.NewIn(t, wh)
			tbl, err := e.Create("t", "id long not null", "", []string{"id"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			loc, ok := catalog.FileURIPath(tbl.Location())
			if !ok {
				loc = tbl.Location()
			}
			if want := filepath.Join(wh, "ns.db", "t"); loc != want {
				t.Fatalf("table location %s names %s, want %s", tbl.Location(), loc, want)
			}
			rec, err := tabletest.ParseTuples("(1) (2)")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), rec)); err != nil {
				t.Fatal(err)
			}
			// Every file is inside the warehouse: nothing beside it.
			entries, err := os.ReadDir(parent)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 || entries[0].Name() != name {
				var names []string
				for _, en := range entries {
					names = append(names, en.Name())
				}
				t.Fatalf("folders beside the warehouse %q: %v", name, names)
			}
			live := files(t, filepath.Join(wh, "ns.db", "t", "data"))
			if len(live) != 1 {
				t.Fatalf("data files under the warehouse: %v", live)
			}
			stray := writeStray(t, e, "t", "data/stray.parquet")
			old := time.Now().Add(-48 * time.Hour)
			if err := os.Chtimes(stray, old, old); err != nil {
				t.Fatal(err)
			}
			for p := range live {
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			id := table.Identifier{"ns", "t"}
			res, err := tableops.RemoveOrphans(e.Ctx, e.Cat, id, tableops.OrphanOptions{OlderThan: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != 1 || res.Files[0].Path != stray || !res.Files[0].Deleted {
				t.Fatalf("remove-orphans: %+v, want %s deleted", res.Files, stray)
			}
			for p := range live {
				if _, err := os.Stat(p); err != nil {
					t.Fatalf("live file %s: %v", p, err)
				}
			}
			rows, err := e.Rows(e.Load("t"), scan.At{})
			if err != nil || strings.Join(rows, " ") != "(1) (2)" {
				t.Fatalf("table after remove-orphans: %v %v", rows, err)
			}
			out, err := tableops.Drop(e.Ctx, e.Cat, id, true)
			if err != nil || out.PurgeErr != nil {
				t.Fatalf("drop --purge: %v %v", err, out.PurgeErr)
			}
			if _, err := os.Stat(filepath.Join(wh, "ns.db", "t")); !os.IsNotExist(err) {
				t.Fatalf("the table's folder after drop --purge: %v (left: %v)", err, files(t, filepath.Join(wh, "ns.db")))
			}
		})
	}
}

// A file a table references under a URI whose path holds a percent escape
// ("p=a%3Ab", as Spark names the folder of a partition value "a:b") is
// read decoded by floe's file IO ("p=a:b") but literally by engines that
// do not decode: remove-orphans keeps a file found under either spelling.
func TestRemoveOrphansKeepsLiterallySpelledFiles(t *testing.T) {
	e := orphanEnv(t)
	tbl := e.Load("a")
	dir := tableDir(e, "a")
	var src string
	for p := range files(t, filepath.Join(dir, "data")) {
		if !strings.HasSuffix(p, "stray.parquet") {
			src = p
		}
	}
	body, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	literal := filepath.Join(dir, "data", "p=a%3Ab", "x.parquet")
	if err := os.MkdirAll(filepath.Dir(literal), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(literal, body, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData,
		strings.TrimSuffix(tbl.Location(), "/")+"/data/p=a%3Ab/x.parquet", iceberg.ParquetFile, nil, nil, nil, 2, int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(e.Ctx, []iceberg.DataFile{b.Build()}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	res, err := tableops.RemoveOrphans(e.Ctx, e.Cat, table.Identifier{"ns", "a"}, tableops.OrphanOptions{OlderThan: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != 1 || res.Files[0].Path != filepath.Join(dir, "data", "stray.parquet") {
		t.Fatalf("remove-orphans deleted %+v, want only the stray file", res.Files)
	}
	if _, err := os.Stat(literal); err != nil {
		t.Fatalf("the literally spelled file: %v", err)
	}
}
