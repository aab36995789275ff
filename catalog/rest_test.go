package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// fakeREST is a REST catalog server for one table ns.t whose answers a
// test scripts per request: fault returns true when it answered the
// request itself (an error page, a reset, a hang).
type fakeREST struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	requests []string // "METHOD /path"
	headers  []http.Header
	queries  []string
	fault    func(w http.ResponseWriter, r *http.Request, n int) bool // n: the request's number among those with the same method and path
	counts   map[string]int
	meta     table.Metadata
	created  bool
}

func newFakeREST(t *testing.T) *fakeREST {
	f := &fakeREST{t: t, counts: map[string]int{}}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	meta, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file://"+t.TempDir()+"/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	f.meta = meta
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeREST) serve(w http.ResponseWriter, r *http.Request) {
	key := r.Method + " " + r.URL.Path
	f.mu.Lock()
	f.requests = append(f.requests, key)
	f.headers = append(f.headers, r.Header.Clone())
	f.queries = append(f.queries, r.URL.RawQuery)
	f.counts[key]++
	n := f.counts[key]
	fault := f.fault
	f.mu.Unlock()
	if fault != nil && fault(w, r, n) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/v1/config":
		fmt.Fprint(w, `{"defaults":{},"overrides":{}}`)
	case r.Method == "HEAD" && strings.HasPrefix(r.URL.Path, "/v1/namespaces/"):
		w.WriteHeader(http.StatusNoContent)
	case r.Method == "GET" && r.URL.Path == "/v1/namespaces/ns":
		fmt.Fprint(w, `{"namespace":["ns"],"properties":{}}`)
	case r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/tables/t"):
		b, _ := json.Marshal(map[string]any{"metadata-location": f.meta.Location() + "/metadata/v1.metadata.json", "metadata": f.meta})
		w.Write(b)
	case r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/tables"):
		f.mu.Lock()
		exists := f.created
		f.created = true
		f.mu.Unlock()
		if exists {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"error":{"message":"Table already exists: ns.t","type":"AlreadyExistsException","code":409}}`)
			return
		}
		b, _ := json.Marshal(map[string]any{"metadata-location": f.meta.Location() + "/metadata/v1.metadata.json", "metadata": f.meta})
		w.Write(b)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"error":{"message":"no route %s","type":"NoSuchTableException","code":404}}`, key)
	}
}

func (f *fakeREST) count(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[method+" "+path]
}

// open opens the fake server as a named catalog with extra properties.
func (f *fakeREST) open(ctx context.Context, props ...string) (*Catalog, error) {
	cfg := filepath.Join(f.t.TempDir(), "floe.yaml")
	yaml := "catalog:\n  r:\n    type: rest\n    uri: " + f.srv.URL + "\n"
	for _, p := range props {
		k, v, _ := strings.Cut(p, "=")
		yaml += fmt.Sprintf("    %s: %q\n", k, v)
	}
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return Open(ctx, Options{Name: "r", ConfigFile: cfg})
}

func htmlPage(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<html>\r\n<head><title>%d %s</title></head>\r\n<body><center><h1>%d %s</h1></center><hr><center>nginx</center></body></html>\r\n",
		status, http.StatusText(status), status, http.StatusText(status))
}

func resetConn(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("no hijacker")
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

var ident = table.Identifier{"ns", "t"}

// TestRESTRequestTimeout: a catalog that never answers a table load fails
// the load with a timeout naming rest.request-timeout (after retrying it
// within rest.retry.total-timeout) instead of hanging; before, floe waited
// as long as the server held the answer.
func TestRESTRequestTimeout(t *testing.T) {
	f := newFakeREST(t)
	release := make(chan struct{})
	defer close(release)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/tables/t") {
			select { // held: no answer
			case <-release:
			case <-r.Context().Done():
			}
			return true
		}
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := f.open(ctx, "rest.request-timeout=200ms", "rest.retry.total-timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Load(ctx, ident)
	if ctx.Err() != nil {
		t.Fatalf("the load was not bounded by rest.request-timeout: it ran until the test's deadline (%v)", err)
	}
	if !errors.Is(err, ErrRequestTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a request timeout (wrapping context.DeadlineExceeded), got %v", err)
	}
	for _, want := range []string{PropRESTRequestTimeout, "/v1/namespaces/ns/tables/t", PropRESTRetryBudget} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if n := f.count("GET", "/v1/namespaces/ns/tables/t"); n < 2 {
		t.Errorf("a timed-out load is transient: want it retried, the server saw %d load(s)", n)
	}
}

// TestRESTTransientErrorsRetried: the opening of the catalog, table loads
// and namespace checks that fail with a 5xx (HTML, JSON or empty body) or
// a reset connection are retried until they succeed; 4xx answers are not.
func TestRESTTransientErrorsRetried(t *testing.T) {
	ctx := context.Background()
	f := newFakeREST(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
		switch {
		case r.URL.Path == "/v1/config" && n == 1:
			htmlPage(w, http.StatusBadGateway)
			return true
		case r.URL.Path == "/v1/namespaces/ns/tables/t" && n == 1:
			htmlPage(w, http.StatusServiceUnavailable)
			return true
		case r.URL.Path == "/v1/namespaces/ns/tables/t" && n == 2:
			resetConn(w)
			return true
		case r.URL.Path == "/v1/namespaces/ns/tables/t" && n == 3:
			w.WriteHeader(http.StatusInternalServerError) // empty body
			return true
		case r.URL.Path == "/v1/namespaces/ns" && n == 1:
			w.WriteHeader(http.StatusGatewayTimeout)
			return true
		}
		return false
	}
	c, err := f.open(ctx, "rest.retry.total-timeout=20s")
	if err != nil {
		t.Fatalf("a 502 on /v1/config was not retried: %v", err)
	}
	defer c.Close()
	tbl, err := c.Load(ctx, ident)
	if err != nil {
		t.Fatalf("the load was not retried past 503, reset and 500: %v", err)
	}
	if tbl.Metadata().TableUUID() != f.meta.TableUUID() {
		t.Fatal("loaded another table")
	}
	if n := f.count("GET", "/v1/namespaces/ns/tables/t"); n != 4 {
		t.Errorf("want 4 loads (3 failed), the server saw %d", n)
	}
	if ok, err := c.NamespaceExists(ctx, table.Identifier{"ns"}); err != nil || !ok {
		t.Fatalf("namespace check after a 504: %v %v", ok, err)
	}

	// Definite answers are not retried.
	for _, status := range []int{http.StatusBadRequest, http.StatusForbidden} {
		f2 := newFakeREST(t)
		f2.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
			if r.Method == "GET" && strings.HasSuffix(r.URL.Path, "/tables/t") {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(status)
				fmt.Fprintf(w, `{"error":{"message":"no","type":"X","code":%d}}`, status)
				return true
			}
			return false
		}
		c2, err := f2.open(ctx, "rest.retry.total-timeout=20s")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c2.Load(ctx, ident); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if n := f2.count("GET", "/v1/namespaces/ns/tables/t"); n != 1 {
			t.Errorf("%d: a definite answer was retried (%d loads)", status, n)
		}
		c2.Close()
	}

	// rest.retry.total-timeout=0 turns the retries off.
	f3 := newFakeREST(t)
	f3.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path == "/v1/namespaces/ns/tables/t" && n == 1 {
			htmlPage(w, http.StatusServiceUnavailable)
			return true
		}
		return false
	}
	c3, err := f3.open(ctx, "rest.retry.total-timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if _, err := c3.Load(ctx, ident); !errors.Is(err, rest.ErrServiceUnavailable) {
		t.Fatalf("with retries off, want the 503: %v", err)
	}
}

// TestRESTErrorPageSaysStatusAndPath: a gateway's HTML error page (or an
// empty body) reaches the user as an error naming the HTTP status, the
// method and the URL path, instead of "failed to decode error response:
// invalid character '<'"; iceberg-go still maps the status to its
// sentinels (a 5xx on a commit is rest.ErrCommitStateUnknown).
func TestRESTErrorPageSaysStatusAndPath(t *testing.T) {
	ctx := context.Background()
	f := newFakeREST(t)
	var body func(w http.ResponseWriter, status int)
	status := 0
	f.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.URL.Path == "/v1/config" {
			return false
		}
		body(w, status)
		return true
	}
	c, err := f.open(ctx, "rest.retry.total-timeout=0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	empty := func(w http.ResponseWriter, status int) { w.WriteHeader(status) }
	for _, tc := range []struct {
		status int
		body   func(http.ResponseWriter, int)
		commit bool
		is     error
		want   []string
	}{
		{502, htmlPage, false, rest.ErrServerError, []string{"HTTP 502 Bad Gateway from GET /v1/namespaces/ns/tables/t", `"502 Bad Gateway"`}},
		{503, empty, false, rest.ErrServiceUnavailable, []string{"HTTP 503 Service Unavailable from GET /v1/namespaces/ns/tables/t with an empty body"}},
		{504, htmlPage, true, rest.ErrCommitStateUnknown, []string{"HTTP 504 Gateway Timeout from POST /v1/namespaces/ns/tables/t"}},
		{500, empty, true, rest.ErrCommitStateUnknown, []string{"HTTP 500 Internal Server Error from POST /v1/namespaces/ns/tables/t"}},
		{403, htmlPage, false, rest.ErrForbidden, []string{"HTTP 403 Forbidden from GET"}},
	} {
		status, body = tc.status, tc.body
		if tc.commit {
			_, _, err = c.Iceberg().CommitTable(ctx, ident, nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})})
		} else {
			_, err = c.Load(ctx, ident)
		}
		if !errors.Is(err, tc.is) {
			t.Errorf("%d: %v does not wrap %v", tc.status, err, tc.is)
		}
		if err != nil && strings.Contains(err.Error(), "invalid character") {
			t.Errorf("%d: %v", tc.status, err)
		}
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%d: %v lacks %q", tc.status, err, w)
			}
		}
	}
}

// TestRESTPropertiesStillWork: opened with rest.NewCatalog's options, the
// catalog still honours the properties iceberg-go reads: the token on
// every request (the first one, /v1/config, included), header.* headers,
// the warehouse on /v1/config and the prefix in every path.
func TestRESTPropertiesStillWork(t *testing.T) {
	ctx := context.Background()
	f := newFakeREST(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if strings.HasPrefix(r.URL.Path, "/v1/pre/") {
			r.URL.Path = "/v1/" + strings.TrimPrefix(r.URL.Path, "/v1/pre/")
			f.serve(w, r)
			return true
		}
		return false
	}
	c, err := f.open(ctx, "token=tok123", "header.X-Floe-Test=yes", "warehouse=wh1", "prefix=pre")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Load(ctx, ident); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.requests[0] != "GET /v1/config" || !strings.Contains(f.queries[0], "warehouse=wh1") {
		t.Errorf("first request %s ?%s: want /v1/config with the warehouse", f.requests[0], f.queries[0])
	}
	if f.counts["GET /v1/pre/namespaces/ns/tables/t"] != 1 {
		t.Errorf("the prefix is not in the load's path: %v", f.requests)
	}
	for i, h := range f.headers {
		if h.Get("Authorization") != "Bearer tok123" || h.Get("X-Floe-Test") != "yes" {
			t.Errorf("%s: Authorization %q, X-Floe-Test %q", f.requests[i], h.Get("Authorization"), h.Get("X-Floe-Test"))
		}
	}
}

// TestRESTCreateTableAnswerLost: a table creation whose answer is lost (a
// 502 after the server created it) is retried; the retry's "already
// exists" finds the table as created, with no snapshot and the schema
// asked for, and the creation succeeds. A table that exists with another
// schema stays an error.
func TestRESTCreateTableAnswerLost(t *testing.T) {
	ctx := context.Background()
	f := newFakeREST(t)
	f.fault = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if r.Method == "POST" && strings.HasSuffix(r.URL.Path, "/tables") && n == 1 {
			f.mu.Lock()
			f.created = true // it landed
			f.mu.Unlock()
			htmlPage(w, http.StatusBadGateway)
			return true
		}
		return false
	}
	c, err := f.open(ctx, "rest.retry.total-timeout=20s")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 7, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := c.CreateTable(ctx, ident, sc)
	if err != nil {
		t.Fatalf("a creation whose answer was lost: %v", err)
	}
	if tbl.Metadata().TableUUID() != f.meta.TableUUID() {
		t.Fatal("another table")
	}
	if n := f.count("POST", "/v1/namespaces/ns/tables"); n != 2 {
		t.Errorf("want the creation sent twice, got %d", n)
	}
	// Another caller's table (a different schema) is not taken for ours.
	f.mu.Lock()
	f.counts = map[string]int{}
	f.created = false
	f.mu.Unlock()
	other := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "key", Type: iceberg.PrimitiveTypes.String})
	if _, err := c.CreateTable(ctx, ident, other); !errors.Is(err, icecat.ErrTableAlreadyExists) {
		t.Fatalf("a table with another schema was taken for the one created: %v", err)
	}
}
