package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"
)

// FileSystem is the storage a Table reads. Locations are the strings the table
// builds by joining its root with '/' and a relative path: plain paths for
// local tables, URIs (s3://bucket/key, gs://..., abfs://...) for object
// stores. An object store is plugged in by implementing these three methods,
// for example over github.com/apache/iceberg-go/io (whose File already
// provides ReaderAt and Stat).
//
// Implementations must be safe for concurrent use, and must report a missing
// file or directory with an error for which errors.Is(err, fs.ErrNotExist)
// holds.
type FileSystem interface {
	// Open opens location for random-access reading.
	Open(ctx context.Context, location string) (File, error)
	// Stat describes location.
	Stat(ctx context.Context, location string) (FileInfo, error)
	// List returns the direct children of directory dir, files and
	// directories, sorted by name. For object stores a "directory" is a key
	// prefix followed by '/'.
	List(ctx context.Context, dir string) ([]FileInfo, error)
}

// File is an open file of a FileSystem.
type File interface {
	io.ReaderAt
	io.Closer
	// Size returns the size of the file in bytes.
	Size() int64
}

// FileInfo describes an entry of a FileSystem.
type FileInfo struct {
	// Name is the last element of the location.
	Name string
	// Location is the full location, usable with Open.
	Location string
	Size     int64     // bytes
	ModTime  time.Time // last modification
	IsDir    bool      // a directory (or object store prefix)
}

// LocalFS is the FileSystem of the local disk. Locations are operating system
// paths. The zero value is ready to use and safe for concurrent use.
type LocalFS struct{}

type localFile struct {
	*os.File
	size int64
}

func (f *localFile) Size() int64 { return f.size }

// Open opens the file at location.
func (LocalFS) Open(ctx context.Context, location string) (File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.FromSlash(location))
	if err != nil {
		return nil, noSuchFile(err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if st.IsDir() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: location, Err: notAFile{errors.New("is a directory")}}
	}
	return &localFile{File: f, size: st.Size()}, nil
}

// notAFile is the cause of a failed open or stat of a location at which no
// file can exist: a directory where a file is named, a path through a file
// (ENOTDIR) or with a name too long for the file system. It reports as
// fs.ErrNotExist, as the FileSystem contract asks of a missing file, and
// keeps the operating system's words.
type notAFile struct{ err error }

func (e notAFile) Error() string        { return e.err.Error() }
func (e notAFile) Unwrap() error        { return e.err }
func (e notAFile) Is(target error) bool { return target == fs.ErrNotExist }

// noSuchFile marks the errors of os.Open and os.Stat that mean that no file
// can be at the path as notAFile; others (permissions, I/O) are returned as
// they are.
func noSuchFile(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && (errors.Is(pe.Err, syscall.ENOTDIR) || errors.Is(pe.Err, syscall.ENAMETOOLONG)) {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: notAFile{pe.Err}}
	}
	return err
}

// Stat describes the file or directory at location.
func (LocalFS) Stat(ctx context.Context, location string) (FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return FileInfo{}, err
	}
	st, err := os.Stat(filepath.FromSlash(location))
	if err != nil {
		return FileInfo{}, noSuchFile(err)
	}
	return FileInfo{Name: st.Name(), Location: location, Size: st.Size(), ModTime: st.ModTime(), IsDir: st.IsDir()}, nil
}

// List lists directory dir, sorted by name.
func (LocalFS) List(ctx context.Context, dir string) ([]FileInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(filepath.FromSlash(dir))
	if err != nil {
		return nil, err
	}
	out := make([]FileInfo, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed while listing
			}
			return nil, err
		}
		out = append(out, FileInfo{
			Name:     e.Name(),
			Location: dir + "/" + e.Name(),
			Size:     info.Size(),
			ModTime:  info.ModTime(),
			IsDir:    e.IsDir(),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// openFile opens location and maps a missing file to ErrFileNotFound, naming
// what the file is for.
func (t *Table) openFile(ctx context.Context, location, what string) (File, error) {
	f, err := t.fs.Open(ctx, location)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %v", ErrFileNotFound, what, err)
		}
		return nil, fmt.Errorf("delta: open %s: %w", what, err)
	}
	return f, nil
}

// readAll reads a whole file.
func readAll(f File) ([]byte, error) {
	buf := make([]byte, f.Size())
	n, err := f.ReadAt(buf, 0)
	if err != nil && !(errors.Is(err, io.EOF) && int64(n) == f.Size()) {
		return nil, err
	}
	return buf[:n], nil
}
