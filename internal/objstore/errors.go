package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/smithy-go"
)

// hintError is a storage error with what it most likely means and which
// setting to check, in front of the server's own message.
type hintError struct {
	hint string
	err  error
}

func (e *hintError) Error() string { return e.hint + ": " + e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

// explain adds to err what an S3 error code says about the settings, and
// the location; fs.ErrNotExist stays detectable for a missing key (not for
// a missing bucket, which is a setting problem).
func (b *blobIO) explain(op, name string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && errors.Is(err, fs.ErrNotExist) {
		return err
	}
	wrap := func(err error) error {
		if pe != nil && pe == err {
			return err
		}
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	if pe != nil && pe == err {
		// Already names the location: put the hint inside.
		op, name, err = pe.Op, pe.Path, pe.Err
		pe = nil
	}
	var api smithy.APIError
	if !errors.As(err, &api) {
		return wrap(err)
	}
	hint := ""
	switch api.ErrorCode() {
	case "NoSuchBucket":
		hint = fmt.Sprintf("bucket %q does not exist (at %s): check the location and %s", b.bucketName, b.describeEndpoint(), keyEndpoint)
	case "InvalidAccessKeyId":
		hint = fmt.Sprintf("the server does not know the access key %s: check %s (or AWS_ACCESS_KEY_ID, or the AWS profile)", b.accessKeyDesc(), keyAccessKey)
	case "SignatureDoesNotMatch":
		hint = fmt.Sprintf("the server rejected the request signature of access key %s: check %s (and %s), or this machine's clock", b.accessKeyDesc(), keySecretKey, keySessionToken)
	case "AccessDenied", "AllAccessDisabled":
		hint = fmt.Sprintf("access denied to access key %s: the credentials (%s, %s, or the AWS environment) lack permission for this location", b.accessKeyDesc(), keyAccessKey, keySecretKey)
	case "RequestTimeTooSkewed":
		hint = "this machine's clock and the server's differ by more than the 15 minutes S3 signatures allow: fix the clock (NTP)"
	case "ExpiredToken", "TokenRefreshRequired":
		hint = fmt.Sprintf("the session credentials expired: renew %s (or the AWS profile's)", keySessionToken)
	case "InvalidToken":
		hint = fmt.Sprintf("the session token is not valid: check %s", keySessionToken)
	case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
		hint = fmt.Sprintf("the bucket is in another region than %s: set %s to the bucket's region", b.region, keyRegion)
	}
	if hint == "" {
		return wrap(err)
	}
	return &fs.PathError{Op: op, Path: name, Err: &hintError{hint: hint, err: err}}
}

func (b *blobIO) describeEndpoint() string {
	if b.endpoint == "" {
		return "AWS S3, region " + b.region
	}
	return keyEndpoint + " " + b.endpoint
}

func (b *blobIO) accessKeyDesc() string {
	if b.accessKey == "" {
		return "(from the AWS environment)"
	}
	return fmt.Sprintf("%q", b.accessKey)
}

// The write and metadata operations of blobfs, with explained errors.

func (b *blobIO) Create(name string) (iceio.FileWriter, error) {
	w, err := b.FileIO.Create(name)
	if err != nil {
		return nil, b.explain("create", name, err)
	}
	return &blobWriter{FileWriter: w, io: b, name: name}, nil
}

func (b *blobIO) WriteFile(name string, p []byte) error {
	return b.explain("write", name, b.FileIO.WriteFile(name, p))
}

func (b *blobIO) Remove(name string) error {
	return b.explain("remove", name, b.FileIO.Remove(name))
}

func (b *blobIO) Stat(name string) (fs.FileInfo, error) {
	fi, err := b.FileIO.Stat(name)
	return fi, b.explain("stat", name, err)
}

func (b *blobIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	return b.explain("list", root, b.FileIO.WalkDir(root, fn))
}

func (b *blobIO) DeleteFiles(ctx context.Context, paths []string) ([]string, error) {
	done, err := b.FileIO.DeleteFiles(ctx, paths)
	if err != nil && len(paths) > 0 {
		err = b.explain("delete", paths[0], err)
	}
	return done, err
}

type blobWriter struct {
	iceio.FileWriter
	io   *blobIO
	name string
}

func (w *blobWriter) Write(p []byte) (int, error) {
	n, err := w.FileWriter.Write(p)
	return n, w.io.explain("write", w.name, err)
}

func (w *blobWriter) ReadFrom(r io.Reader) (int64, error) {
	n, err := w.FileWriter.ReadFrom(r)
	return n, w.io.explain("write", w.name, err)
}

func (w *blobWriter) Close() error {
	return w.io.explain("write", w.name, w.FileWriter.Close())
}
