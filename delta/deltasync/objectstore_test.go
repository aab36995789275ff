package deltasync

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/testdir"
)

// TestSyncFromObjectStore reads the Delta table through iceberg-go's file
// IO at a non-local URI (its in-memory store, mem://, registered like s3://
// and gs://), the path object stores take, and syncs it version by
// version.
func TestSyncFromObjectStore(t *testing.T) {
	ctx := context.Background()
	local := testdir.Shared(t, "delta", "deltars-cdf-table-with-cdc-and-dvs")
	uri := "mem://deltasync-test/" + t.Name()
	fsys, err := iceio.LoadFS(ctx, nil, uri)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		t.Fatalf("%T cannot write", fsys)
	}
	err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(local, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return w.WriteFile(uri+"/"+filepath.ToSlash(rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	src, err := delta.Open(ctx, uri, delta.WithFileSystem(delta.FromIcebergIO(fsys)))
	if err != nil {
		t.Fatal(err)
	}
	ref, err := delta.Open(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	cat := openCatalog(t)
	ident := table.Identifier{"db", "remote"}
	opts := Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(0), End: delta.AtVersion(0)}
	if _, err := Sync(ctx, cat, src, ident, opts); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{0, 5, 12, 25} {
		opts.End = delta.AtVersion(v)
		if _, err := Sync(ctx, cat, src, ident, opts); err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		want, names := deltaRows(t, ref, v)
		if d := diffRows(icebergRows(t, cat, ident, names), want); d != "" {
			t.Fatalf("version %d: %s", v, d)
		}
	}
	tbl, _ := cat.Load(ctx, ident)
	if loc := tbl.Properties()[PropSourceLocation]; loc != uri {
		t.Fatalf("source location %q, want %q", loc, uri)
	}
}
