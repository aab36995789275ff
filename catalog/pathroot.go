package catalog

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// RelativeIO resolves relative paths (as some engines write them into
// metadata and manifests, e.g. "data/persistent/t/metadata/snap-1.avro")
// against Root, and passes absolute paths and URIs through. The files
// themselves are never modified.
type RelativeIO struct {
	Root string
	iceio.LocalFS
}

func isURI(p string) bool { return strings.Contains(p, "://") }

func (r RelativeIO) resolve(name string) string {
	if r.Root == "" || isURI(name) || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(r.Root, name)
}

// Open opens a file for reading.
func (r RelativeIO) Open(name string) (iceio.File, error) { return r.LocalFS.Open(r.resolve(name)) }

// ReadFile reads a whole file.
func (r RelativeIO) ReadFile(name string) ([]byte, error) { return r.LocalFS.ReadFile(r.resolve(name)) }

// Create creates a file for writing.
func (r RelativeIO) Create(name string) (iceio.FileWriter, error) {
	return r.LocalFS.Create(r.resolve(name))
}

// WriteFile writes a whole file.
func (r RelativeIO) WriteFile(name string, b []byte) error {
	return r.LocalFS.WriteFile(r.resolve(name), b)
}

// Remove removes a file.
func (r RelativeIO) Remove(name string) error { return r.LocalFS.Remove(r.resolve(name)) }

// ReadDir lists a directory.
func (r RelativeIO) ReadDir(name string) ([]fs.DirEntry, error) {
	return r.LocalFS.ReadDir(r.resolve(name))
}

func pathRootFSF(root, location string) table.FSysF {
	if root == "" {
		return iceio.LoadFSFunc(nil, location)
	}
	return func(context.Context) (iceio.IO, error) { return RelativeIO{Root: root}, nil }
}

// OpenTableAt opens a table straight from a metadata file, outside any
// catalog, resolving relative paths against root when root is not empty.
// The table is read-only: it has no catalog to commit to.
func OpenTableAt(ctx context.Context, ident table.Identifier, metadataFile, root string) (*table.Table, error) {
	if root != "" && !isURI(metadataFile) && !filepath.IsAbs(metadataFile) {
		metadataFile = filepath.Join(root, metadataFile)
	}
	return table.NewFromLocation(ctx, ident, metadataFile, pathRootFSF(root, metadataFile), nil)
}
