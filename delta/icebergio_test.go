package delta_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/testdir"
)

// TestIcebergIOFileSystem reads fixture tables through iceberg-go's local
// file IO and requires the same change data and snapshot rows as through
// LocalFS: the path by which object stores plug in.
func TestIcebergIOFileSystem(t *testing.T) {
	root := testdir.Shared(t, "delta")
	ctx := context.Background()
	for _, name := range []string{"deltars-cdf-table-with-cdc-and-dvs", "deltars-checkpoint-cdf-table", "kernelrs-cdf-table-simple"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(root, name)
			viaLocal, err := delta.Open(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			viaIceberg, err := delta.Open(ctx, dir, delta.WithFileSystem(delta.FromIcebergIO(icebergio.LocalFS{})))
			if err != nil {
				t.Fatal(err)
			}
			start, err := viaLocal.EarliestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			opts := delta.ChangesOptions{Start: delta.AtVersion(start)}
			_, want, err := readChanges(t, viaLocal, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := readChanges(t, viaIceberg, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatal("no rows to compare")
			}
			if d := deltatest.DiffMultisets(got, want); d != "" {
				t.Fatal(d)
			}
			s1, err := viaLocal.LatestSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s2, err := viaIceberg.LatestSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, r1 := scanRows(t, s1)
			_, r2 := scanRows(t, s2)
			if d := deltatest.DiffMultisets(r2, r1); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// TestIcebergMemFileSystem copies fixture tables into iceberg-go's in-memory
// IO and reads them as mem://bucket/<table>: table roots that are URIs, not
// local paths, end to end.
func TestIcebergMemFileSystem(t *testing.T) {
	root := testdir.Shared(t, "delta")
	ctx := context.Background()
	mem := icebergio.NewMemFS()
	for _, name := range []string{"kernelrs-cdf-table-simple", "deltars-checkpoint-cdf-table", "kernelrs-cdf-table-with-dv"} {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join(root, name)
			uri := "mem://bucket/tables/" + name
			err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(src, p)
				return mem.WriteFile(uri+"/"+filepath.ToSlash(rel), data)
			})
			if err != nil {
				t.Fatal(err)
			}
			local, err := delta.Open(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			remote, err := delta.Open(ctx, uri, delta.WithFileSystem(delta.FromIcebergIO(mem)))
			if err != nil {
				t.Fatal(err)
			}
			if remote.Location() != uri {
				t.Fatalf("Location() = %q, want %q", remote.Location(), uri)
			}
			start, _ := local.EarliestVersion(ctx)
			// Versions without commitInfo take the file time, which differs
			// between the copies: compare without _commit_timestamp.
			cols := []string{delta.ChangeTypeColumn, delta.CommitVersionColumn}
			s, err := local.LatestSnapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range s.Schema().Fields {
				cols = append(cols, f.Name)
			}
			opts := delta.ChangesOptions{Start: delta.AtVersion(start), Columns: cols}
			_, want, err := readChanges(t, local, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, got, err := readChanges(t, remote, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatal("no rows to compare")
			}
			if d := deltatest.DiffMultisets(got, want); d != "" {
				t.Fatal(d)
			}
		})
	}
	if _, err := delta.Open(ctx, "mem://bucket/nothing-here", delta.WithFileSystem(delta.FromIcebergIO(mem))); !errors.Is(err, delta.ErrNotATable) {
		t.Fatalf("empty location: want ErrNotATable, got %v", err)
	}
	if _, err := delta.Open(ctx, "s3://bucket/t"); !errors.Is(err, delta.ErrUnsupportedFeature) {
		t.Fatalf("s3 without a file system: want ErrUnsupportedFeature, got %v", err)
	}
}
