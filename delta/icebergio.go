package delta

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"
)

// FromIcebergIO adapts an iceberg-go file IO (local, s3://, gs://, abfs://,
// mem:// through iceberg-go's registry and gocloud backends) to a
// FileSystem, so a Delta table is read through the same storage
// configuration as the Iceberg side of a sync:
//
//	fsys, err := icebergio.LoadFS(ctx, props, "s3://bucket/table")
//	tbl, err := delta.Open(ctx, "s3://bucket/table", delta.WithFileSystem(delta.FromIcebergIO(fsys)))
//
// Listing needs an IO that implements icebergio.ListableIO (all of
// iceberg-go's do); List fails otherwise. The adapter adds no state of its
// own, so it is as safe for concurrent use as the IO it wraps.
func FromIcebergIO(fsys icebergio.IO) FileSystem { return icebergFS{fsys} }

// OpenLocation opens the Delta table at location: a local folder or file://
// URI directly, any other URI (s3://, gs://, abfs://, ...) through
// iceberg-go's file IO for that scheme with the storage settings props (the
// same keys as a catalog's: s3.endpoint, s3.region, gcs.endpoint, ...),
// which a local table ignores. The scheme's IO must be registered (floe's
// CLI registers s3, gs and the Azure schemes).
func OpenLocation(ctx context.Context, location string, props map[string]string, opts ...Option) (*Table, error) {
	scheme, _, ok := strings.Cut(location, "://")
	if !ok || scheme == "file" {
		return Open(ctx, location, opts...)
	}
	fsys, err := icebergio.LoadFS(ctx, props, location)
	if errors.Is(err, icebergio.ErrIOSchemeNotFound) {
		var named []string
		for _, s := range icebergio.GetRegisteredSchemes() {
			if s != "" && s != "file" {
				named = append(named, s+"://")
			}
		}
		sort.Strings(named)
		return nil, fmt.Errorf("open Delta table %s: no file IO for scheme %q (this floe reads local paths, file:// and %s)",
			location, scheme, strings.Join(named, ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("open Delta table %s: %w", location, err)
	}
	return Open(ctx, location, append([]Option{WithFileSystem(FromIcebergIO(fsys))}, opts...)...)
}

type icebergFS struct{ io icebergio.IO }

type icebergFile struct {
	icebergio.File
	size int64
}

func (f icebergFile) Size() int64 { return f.size }

func (a icebergFS) Open(ctx context.Context, location string) (File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := a.io.Open(location)
	if err != nil {
		return nil, noSuchFile(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return icebergFile{File: f, size: st.Size()}, nil
}

func (a icebergFS) Stat(ctx context.Context, location string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	var st fs.FileInfo
	var err error
	if s, ok := a.io.(icebergio.StatIO); ok {
		st, err = s.Stat(location)
	} else {
		var f icebergio.File
		if f, err = a.io.Open(location); err == nil {
			st, err = f.Stat()
			f.Close()
		}
	}
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Name: path.Base(location), Location: location, Size: st.Size(), ModTime: st.ModTime(), IsDir: st.IsDir()}, nil
}

func (a icebergFS) List(ctx context.Context, dir string) ([]FileInfo, error) {
	l, ok := a.io.(icebergio.ListableIO)
	if !ok {
		return nil, fmt.Errorf("delta: iceberg-go IO %T cannot list directories (no WalkDir)", a.io)
	}
	root := strings.TrimSuffix(dir, "/")
	var out []FileInfo
	err := l.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.TrimSuffix(p, "/") == root {
			return nil // the directory itself
		}
		fi := FileInfo{Name: path.Base(strings.TrimSuffix(p, "/")), Location: root + "/" + path.Base(strings.TrimSuffix(p, "/")), IsDir: d.IsDir()}
		if info, err := d.Info(); err == nil {
			fi.Size, fi.ModTime = info.Size(), info.ModTime()
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		out = append(out, fi)
		if d.IsDir() {
			return fs.SkipDir // direct children only
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
