//go:build interop

package interop_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/floedata/floe/interop"
)

// vendingProxy sits in front of the REST catalog server and adds storage
// settings to its answers, as a catalog that vends credentials does: to
// /v1/config's overrides (mode "config") or to the config of every table
// load, create and commit answer (mode "table").
func vendingProxy(t *testing.T, target string, mode string, settings map[string]string) (string, *atomic.Int64) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	var vended atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(u)
	direct := rp.Director
	rp.Director = func(r *http.Request) {
		direct(r)
		r.Header.Del("Accept-Encoding") // answers must arrive as plain JSON to be edited
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Type"), "json") {
			return nil
		}
		path := resp.Request.URL.Path
		isConfig := strings.HasSuffix(path, "/v1/config")
		isTable := strings.Contains(path, "/tables")
		if (mode == "config" && !isConfig) || (mode == "table" && !isTable) {
			return nil
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber() // snapshot ids do not fit a float64
		if err := dec.Decode(&doc); err != nil {
			resp.Body = io.NopCloser(bytes.NewReader(b))
			return nil
		}
		key := "config"
		if isConfig {
			key = "overrides"
		}
		if _, ok := doc["metadata"]; ok || isConfig {
			m, _ := doc[key].(map[string]any)
			if m == nil {
				m = map[string]any{}
			}
			for k, v := range settings {
				m[k] = v
			}
			doc[key] = m
			vended.Add(1)
		}
		b, err = json.Marshal(doc)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(srv.Close)
	return srv.URL + "/", &vended
}

// TestS3VendedSettings checks that floe uses storage settings a REST catalog
// hands out, with none in its own catalog entry: in /v1/config's overrides,
// and per table in the load, create and commit answers (iceberg-go passes a
// table's config to its file IO).
func TestS3VendedSettings(t *testing.T) {
	l := newS3Lab(t)
	// No AWS environment for floe: everything must come from the catalog.
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	if err := os.WriteFile(filepath.Join(l.dir, "rows.csv"), []byte("id,v\n1,a\n2,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, mode := range []string{"config", "table"} {
		t.Run(mode, func(t *testing.T) {
			uri, vended := vendingProxy(t, l.rest.URI, mode, l.srv.Props())
			cfg := filepath.Join(l.dir, mode+".yaml")
			if err := os.WriteFile(cfg, []byte(fmt.Sprintf("catalog:\n  v:\n    type: rest\n    uri: %s\n", uri)), 0o644); err != nil {
				t.Fatal(err)
			}
			f := &interop.Floe{Bin: l.floe.Bin, Global: []string{"--config", cfg, "--catalog", "v"}, Dir: l.dir}
			ns := fmt.Sprintf("vend%d", i)
			for _, args := range [][]string{
				{"namespace", "create", ns},
				{"table", "create", ns + ".t", "--schema", "id long not null, v string", "--identifier", "id", "--property", "write.delete.mode=merge-on-read"},
				{"table", "append", ns + ".t", "rows.csv"},
				{"table", "delete", ns + ".t", "--where", "id = 1"},
			} {
				if out, err := f.Run(l.ctx, args...); err != nil {
					t.Fatalf("floe %s with settings vended in %s: %v\n%s", strings.Join(args, " "), mode, err, out)
				}
			}
			got, err := f.TableRows(l.ctx, ns+".t", "table", "scan", ns+".t")
			if err != nil {
				t.Fatal(err)
			}
			requireSame(t, "scan with vended settings", rowsOf(t, []string{"id", "v"}, `[2, "b"]`), got)
			if vended.Load() == 0 {
				t.Fatal("the proxy vended nothing")
			}
		})
	}
}
