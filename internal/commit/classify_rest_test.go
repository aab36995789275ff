package commit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
)

// TestClassifyRESTThroughFloeTransport: through floe's REST transport
// (catalog.Open of a rest catalog), a commit whose answer does not come
// within rest.request-timeout, and a commit answered by a gateway's HTML
// 502 or 504 page (which the transport turns into an error naming the
// status), are unknown outcomes: floe reloads the table to decide.
func TestClassifyRESTThroughFloeTransport(t *testing.T) {
	mode := ""
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/config" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"defaults":{},"overrides":{}}`)
			return
		}
		switch mode {
		case "hold":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "502", "504":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(map[string]int{"502": 502, "504": 504}[mode])
			fmt.Fprint(w, "<html><head><title>Bad Gateway</title></head><body>nginx</body></html>")
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the held request
	cfg := filepath.Join(t.TempDir(), "floe.yaml")
	if err := os.WriteFile(cfg, []byte("catalog:\n  r:\n    type: rest\n    uri: "+srv.URL+"\n    rest.request-timeout: 300ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat, err := catalog.Open(ctx, catalog.Options{Name: "r", ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	for _, m := range []string{"hold", "502", "504"} {
		mode = m
		_, _, err := cat.Iceberg().CommitTable(ctx, table.Identifier{"ns", "t"}, nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})})
		if err == nil {
			t.Fatalf("%s: no error", m)
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: the commit call was not bounded by rest.request-timeout", m)
		}
		if m == "hold" && !errors.Is(err, catalog.ErrRequestTimeout) {
			t.Errorf("hold: %v is not a request timeout", err)
		}
		if got := commit.Classify("rest", err); got != commit.Unknown {
			t.Errorf("%s: %q classified %v, want unknown", m, err, got)
		}
	}
}
