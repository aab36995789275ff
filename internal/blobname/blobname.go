// Package blobname gives the write errors of iceberg-go's blob file IO
// (blobfs) the object's full location: blobfs's writers and WriteFile
// report gocloud's errors, which name only the object key ("blob (key
// "wh/x.parquet") ..."), so a user with several buckets or accounts cannot
// tell where a write failed.
package blobname

import (
	"errors"
	"io"
	"io/fs"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
)

// FileIO is a blobfs.FileIO whose WriteFile and Create errors (and those
// of the writers Create returns) are *fs.PathError naming the location.
type FileIO struct{ *blobfs.FileIO }

// WriteFile writes content to name.
func (f FileIO) WriteFile(name string, content []byte) error {
	return named("write", name, f.FileIO.WriteFile(name, content))
}

// Create returns a writer of name.
func (f FileIO) Create(name string) (iceio.FileWriter, error) {
	w, err := f.FileIO.Create(name)
	if err != nil {
		return nil, named("create", name, err)
	}
	return &writer{w: w, name: name}, nil
}

// named is err as a *fs.PathError of op on name, unless it already is one.
func named(op, name string, err error) error {
	var pe *fs.PathError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

type writer struct {
	w    iceio.FileWriter
	name string
}

func (w *writer) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	return n, named("write", w.name, err)
}

func (w *writer) ReadFrom(r io.Reader) (int64, error) {
	n, err := w.w.ReadFrom(r)
	return n, named("write", w.name, err)
}

func (w *writer) Close() error { return named("close", w.name, w.w.Close()) }
