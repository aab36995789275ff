package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/floedata/floe/internal/safe"
)

// prefixSize is how much of an object Open reads: small files (manifests,
// manifest lists, Delta commits) arrive whole in that one request, and it
// tells the object's size without a HEAD.
const prefixSize = 64 << 10

// blobIO is iceberg-go's blob file IO with reads that survive a failure in
// the middle of a response body (retried from where they stopped) and an
// Open that costs one ranged GET instead of a GET of the whole object
// (iceberg-go's Open starts streaming the object even when the caller only
// reads a footer and a few column chunks with ReadAt).
type blobIO struct {
	*blobfs.FileIO
	bucket  *blob.Bucket
	extract blobfs.ObjectLocationExtractor
	ctx     context.Context
	retry   retryPolicy

	// For error messages.
	bucketName, endpoint, region, accessKey string
}

var (
	_ iceio.ListableIO      = (*blobIO)(nil)
	_ iceio.BulkRemovableIO = (*blobIO)(nil)
	_ iceio.ReadFileIO      = (*blobIO)(nil)
	_ iceio.WriteFileIO     = (*blobIO)(nil)
	_ iceio.StatIO          = (*blobIO)(nil)
)

func (b *blobIO) key(op, name string) (string, error) {
	l, err := b.extract(name)
	if err != nil {
		return "", &fs.PathError{Op: op, Path: name, Err: err}
	}
	if !fs.ValidPath(l.Key()) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return l.Key(), nil
}

func isInvalidRange(err error) bool {
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == 416
}

func pathErr(op, name string, err error) error {
	if notFound(err) {
		err = fs.ErrNotExist
	} else if gcerrors.Code(err) == gcerrors.NotFound {
		err = notNotFound{err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// notNotFound is an error gocloud coded NotFound that notFound says is
// not: its text without gocloud's "(code=NotFound)".
type notNotFound struct{ err error }

func (e notNotFound) Error() string { return strings.Replace(e.err.Error(), " (code=NotFound)", "", 1) }
func (e notNotFound) Unwrap() error { return e.err }

// notFound reports whether err is the server's answer that the key or the
// bucket does not exist: S3's error code, or an HTTP 404. Not gocloud's
// gcerrors.NotFound: its s3blob driver also counts any operation error
// whose text holds "301" (meant for a bucket's region redirect), and a
// timeout naming an endpoint such as 127.0.0.1:43012 matched, so a stalled
// server read as a missing file.
func notFound(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchBucket":
			return true
		}
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == 404
}

// Open opens name for reading with one GET of its first prefixSize bytes.
func (b *blobIO) Open(name string) (iceio.File, error) {
	key, err := b.key("open", name)
	if err != nil {
		return nil, err
	}
	f := &blobFile{io: b, key: key, name: name}
	_, err = retryRead(b.ctx, b.retry, func() (struct{}, error) {
		r, err := b.bucket.NewRangeReader(b.ctx, key, 0, prefixSize, nil)
		if err != nil && isInvalidRange(err) {
			// An empty object has no byte 0 to start a range at.
			r, err = b.bucket.NewReader(b.ctx, key, nil)
		}
		if err != nil {
			return struct{}{}, err
		}
		defer r.Close()
		buf, err := io.ReadAll(r)
		if err != nil {
			return struct{}{}, err
		}
		f.prefix, f.size, f.modTime = buf, r.Size(), r.ModTime()
		return struct{}{}, nil
	})
	if err != nil {
		return nil, b.explain("open", name, pathErr("open", name, err))
	}
	if int64(len(f.prefix)) > f.size {
		f.prefix = f.prefix[:f.size]
	}
	return f, nil
}

// ReadFile reads the whole of name, retrying a broken transfer.
func (b *blobIO) ReadFile(name string) ([]byte, error) {
	key, err := b.key("read", name)
	if err != nil {
		return nil, err
	}
	data, err := retryRead(b.ctx, b.retry, func() ([]byte, error) { return b.bucket.ReadAll(b.ctx, key) })
	if err != nil {
		return nil, b.explain("read", name, pathErr("read", name, err))
	}
	return data, nil
}

// blobFile is an open object: its first bytes in memory, the rest read with
// ranged GETs (ReadAt) or one stream from the current offset (Read).
type blobFile struct {
	io      *blobIO
	key     string
	name    string
	prefix  []byte
	size    int64
	modTime time.Time

	off    int64
	stream *blob.Reader // open at off, for Read
	closed bool
}

func (f *blobFile) Stat() (fs.FileInfo, error) { return fileInfo{f}, nil }

func (f *blobFile) ReadAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, fs.ErrClosed
	}
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: fs.ErrInvalid}
	}
	if off >= f.size {
		return 0, io.EOF
	}
	want := p
	if rest := f.size - off; int64(len(want)) > rest {
		want = want[:rest]
	}
	if off+int64(len(want)) <= int64(len(f.prefix)) {
		n := copy(want, f.prefix[off:])
		if n < len(p) {
			return n, io.EOF
		}
		return n, nil
	}
	n, err := f.readRange(want, off)
	if err != nil {
		return n, pathErr("read", f.name, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Ranged reads larger than 2*partSize are split into parts of partSize
// fetched by up to partConcurrency requests at once: one GET stream is
// bounded by one connection's throughput, and a Parquet column chunk is
// often tens of MiB.
const (
	partSize        = 4 << 20
	partConcurrency = 8
)

// readRange fills p from offset off with ranged GETs, each retried.
func (f *blobFile) readRange(p []byte, off int64) (int, error) {
	get := func(p []byte, off int64) (int, error) {
		return retryRead(f.io.ctx, f.io.retry, func() (int, error) {
			r, err := f.io.bucket.NewRangeReader(f.io.ctx, f.key, off, int64(len(p)), nil)
			if err != nil {
				return 0, err
			}
			defer r.Close()
			return io.ReadFull(r, p)
		})
	}
	if len(p) <= 2*partSize {
		return get(p, off)
	}
	g, _ := safe.WithContext(f.io.ctx)
	g.SetLimit(partConcurrency)
	for start := 0; start < len(p); start += partSize {
		part := p[start:min(start+partSize, len(p))]
		at := off + int64(start)
		g.Go(func() error {
			_, err := get(part, at)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (f *blobFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, fs.ErrClosed
	}
	if f.off >= f.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if f.off < int64(len(f.prefix)) {
		n := copy(p, f.prefix[f.off:])
		f.off += int64(n)
		return n, nil
	}
	n, err := retryRead(f.io.ctx, f.io.retry, func() (int, error) {
		if f.stream == nil {
			r, err := f.io.bucket.NewRangeReader(f.io.ctx, f.key, f.off, -1, nil)
			if err != nil {
				return 0, err
			}
			f.stream = r
		}
		n, err := f.stream.Read(p)
		f.off += int64(n)
		switch {
		case err == nil:
			return n, nil
		case errors.Is(err, io.EOF) && f.off >= f.size:
			f.closeStream()
			return n, io.EOF
		case errors.Is(err, io.EOF):
			err = fmt.Errorf("object ended at %d of %d bytes: %w", f.off, f.size, io.ErrUnexpectedEOF)
		}
		// Read again from where the stream broke.
		f.closeStream()
		if n > 0 {
			return n, nil
		}
		return 0, err
	})
	if err != nil && !errors.Is(err, io.EOF) {
		return n, pathErr("read", f.name, err)
	}
	return n, err
}

func (f *blobFile) Seek(offset int64, whence int) (int64, error) {
	if f.closed {
		return 0, fs.ErrClosed
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.size
	default:
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.name, Err: fs.ErrInvalid}
	}
	if offset != f.off {
		f.closeStream()
		f.off = offset
	}
	return offset, nil
}

func (f *blobFile) closeStream() {
	if f.stream != nil {
		f.stream.Close()
		f.stream = nil
	}
}

func (f *blobFile) Close() error {
	f.closeStream()
	f.closed = true
	return nil
}

type fileInfo struct{ f *blobFile }

func (i fileInfo) Name() string       { return path.Base(i.f.key) }
func (i fileInfo) Size() int64        { return i.f.size }
func (i fileInfo) Mode() fs.FileMode  { return fs.ModeIrregular }
func (i fileInfo) ModTime() time.Time { return i.f.modTime }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
