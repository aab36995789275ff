package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// TestNotFound: only the server's answer that a key or bucket does not
// exist is fs.ErrNotExist; an operation error whose text holds "301"
// (which gocloud's s3blob counts as not found) is not.
func TestNotFound(t *testing.T) {
	status := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("answer")}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"NoSuchKey", &smithy.GenericAPIError{Code: "NoSuchKey"}, true},
		{"NotFound", fmt.Errorf("head: %w", &smithy.GenericAPIError{Code: "NotFound"}), true},
		{"NoSuchBucket", &smithy.GenericAPIError{Code: "NoSuchBucket"}, true},
		{"404", status(404), true},
		{"AccessDenied", &smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{"503", status(503), false},
		{"timeout naming port 43012", &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
			Err: errors.New("dial tcp 127.0.0.1:43012: i/o timeout")}, false},
	} {
		if got := notFound(tc.err); got != tc.want {
			t.Errorf("%s: notFound = %t, want %t", tc.name, got, tc.want)
		}
		if got := errors.Is(pathErr("read", "s3://b/k", tc.err), fs.ErrNotExist); got != tc.want {
			t.Errorf("%s: pathErr is fs.ErrNotExist = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestStalledServerIsNotMissingFile reads from a server that never
// answers, on a port whose number holds "301": the read fails after the
// timeouts as a timeout, not as a missing file (it read as one in CI,
// "file does not exist", through gocloud's error codes).
func TestStalledServerIsNotMissingFile(t *testing.T) {
	var ln net.Listener
	for _, p := range []int{43010, 43011, 43012, 43013, 33010, 33011, 23010, 23011, 13010, 13011, 30100, 30101} {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			ln = l
			break
		}
	}
	if ln == nil {
		t.Skip("no free port holding 301 to listen on")
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	props := s3Props(srv.URL, "s3.request-timeout", "200ms", "s3.retry.total-timeout", "1s")
	fsys, err := iceio.LoadFS(context.Background(), props, "s3://bkt/")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.(iceio.ReadFileIO).ReadFile("s3://bkt/wh/t/metadata/v1.metadata.json")
	if err == nil || errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "NotFound") ||
		!strings.Contains(err.Error(), "s3.request-timeout") {
		t.Fatalf("a stalled server on %s: got %v, want a timeout", srv.URL, err)
	}
	if _, err := fsys.Open("s3://bkt/k"); err == nil || errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open against a stalled server: got %v, want a timeout", err)
	}
	t.Log(err)
}
