package objstoretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// GCS is a running fake-gcs-server (the GCS JSON API over a local folder).
type GCS struct {
	Endpoint string // http://127.0.0.1:PORT

	proc process
}

// StartGCS starts fake-gcs-server on a free port for t, stopped when t
// ends. It skips t when the emulator is not installed (see Skip).
func StartGCS(t testing.TB) *GCS {
	t.Helper()
	bin := FakeGCSBinary()
	if bin == "" {
		Skip(t, "fake-gcs-server "+FakeGCSVersion+" is not installed: run `bash .ci/storage.sh` (or set "+EnvFakeGCS+")")
	}
	dir := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		g := &GCS{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port)}
		g.proc, err = startProcess(fmt.Sprintf("fake-gcs-server on port %d", port), []string{bin, "-scheme", "http", "-host", "127.0.0.1", "-port", fmt.Sprint(port),
			"-public-host", fmt.Sprintf("127.0.0.1:%d", port), "-external-url", g.Endpoint,
			"-backend", "filesystem", "-filesystem-root", filepath.Join(dir, "data"), "-log-level", "warn"},
			g.Endpoint+"/storage/v1/b", 30*time.Second)
		if err != nil {
			lastErr = err
			continue
		}
		t.Cleanup(g.Stop)
		return g
	}
	t.Fatal(lastErr)
	return nil
}

// Props returns the storage settings that reach the emulator.
func (g *GCS) Props() map[string]string {
	return map[string]string{"gcs.endpoint": g.Endpoint + "/storage/v1/", "gcs.no-auth": "true"}
}

// Stop stops the emulator. Safe to call more than once.
func (g *GCS) Stop() { g.proc.stop() }

// CreateBucket creates a bucket.
func (g *GCS) CreateBucket(t testing.TB, name string) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name})
	resp, err := http.Post(g.Endpoint+"/storage/v1/b?project=floe", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusConflict {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("create bucket %s: %s: %s", name, resp.Status, b)
	}
}

// Upload copies the local folder dir to gs://bucket/prefix/.
func (g *GCS) Upload(t testing.TB, dir, bucket, prefix string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		key := strings.TrimPrefix(prefix+"/"+filepath.ToSlash(rel), "/")
		u := fmt.Sprintf("%s/upload/storage/v1/b/%s/o?uploadType=media&name=%s", g.Endpoint, bucket, url.QueryEscape(key))
		resp, err := http.Post(u, "application/octet-stream", bytes.NewReader(b))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			return fmt.Errorf("upload %s: %s: %s", key, resp.Status, msg)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("upload %s to gs://%s/%s: %v", dir, bucket, prefix, err)
	}
}

// List returns the names of the objects under gs://bucket/prefix.
func (g *GCS) List(t testing.TB, bucket, prefix string) []string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/storage/v1/b/%s/o?prefix=%s", g.Endpoint, bucket, url.QueryEscape(prefix)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("list gs://%s/%s: %v", bucket, prefix, err)
	}
	var names []string
	for _, it := range out.Items {
		names = append(names, it.Name)
	}
	return names
}
