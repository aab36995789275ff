package gcsio_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/gcsio"
)

// answering is a GCS endpoint that answers every request with status and
// body, counting the requests.
func answering(t *testing.T, status int, body string) (iceio.IO, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(hs.Close)
	props := map[string]string{
		"gcs.endpoint":          hs.URL + "/storage/v1/",
		"gcs.no-auth":           "true",
		"gcs.retry.num-retries": "1",
	}
	fsys, err := iceio.LoadFS(context.Background(), props, "gs://bucket/wh")
	if err != nil {
		t.Fatal(err)
	}
	return fsys, &n
}

// gcsOps are the operations of an IO on gs://bucket/wh/x.json, each
// returning its error.
func gcsOps(fsys iceio.IO) map[string]func() error {
	const name = "gs://bucket/wh/x.json"
	return map[string]func() error{
		"open":     func() error { _, err := fsys.Open(name); return err },
		"readfile": func() error { _, err := fsys.(iceio.ReadFileIO).ReadFile(name); return err },
		"stat":     func() error { _, err := fsys.(iceio.StatIO).Stat(name); return err },
		"remove":   func() error { return fsys.Remove(name) },
		"writefile": func() error {
			return fsys.(iceio.WriteFileIO).WriteFile(name, []byte("{}"))
		},
		"create": func() error {
			w, err := fsys.(iceio.WriteFileIO).Create(name)
			if err != nil {
				return err
			}
			if _, err := w.Write([]byte("{}")); err != nil {
				w.Close()
				return err
			}
			return w.Close()
		},
	}
}

// A request the server refuses with 403 is an access-denied error naming
// the location and the credential settings, not a missing file: gocloud's
// GCS driver codes every 403 as NotFound, so a metadata file floe may not
// read read as absent, and a denied delete as done.
func TestForbiddenIsNotMissing(t *testing.T) {
	fsys, n := answering(t, http.StatusForbidden,
		`{"error": {"code": 403, "message": "floe@p.iam.gserviceaccount.com does not have storage.objects.get access to the Google Cloud Storage object."}}`)
	for op, do := range gcsOps(fsys) {
		n.Store(0)
		err := do()
		if err == nil {
			t.Errorf("%s: no error from a server that refuses everything", op)
			continue
		}
		t.Logf("%s: %v", op, err)
		if errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v: a refused request reads as a missing file", op, err)
		}
		var fe *gcsio.ForbiddenError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v (%T): not a ForbiddenError", op, err, err)
		}
		for _, want := range []string{"gs://bucket/wh/x.json", "access denied (HTTP 403)", "does not have storage.objects.get access", "gcs.keypath"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v: does not say %q", op, err, want)
			}
		}
		if n.Load() > 2 {
			t.Errorf("%s: %d requests: a 403 is not retried", op, n.Load())
		}
	}
}

// A 404 stays a missing file, for the operations that report one, and
// other failures name the full location (blobfs's writers name only the
// key).
func TestNotFoundAndServerErrors(t *testing.T) {
	fsys, _ := answering(t, http.StatusNotFound, `{"error": {"code": 404, "message": "No such object: bucket/wh/x.json"}}`)
	ops := gcsOps(fsys)
	for _, op := range []string{"open", "readfile", "stat"} {
		if err := ops[op](); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("404, %s: %v, want fs.ErrNotExist", op, err)
		}
	}
	fsys, _ = answering(t, http.StatusInternalServerError, `{"error": {"code": 500, "message": "backend broke"}}`)
	for op, do := range gcsOps(fsys) {
		err := do()
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("500, %s: %v, want an error that is not fs.ErrNotExist", op, err)
			continue
		}
		if !strings.Contains(err.Error(), "gs://bucket/wh/x.json") {
			t.Errorf("500, %s: %v: does not name gs://bucket/wh/x.json", op, err)
		}
	}
}
