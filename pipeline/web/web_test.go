package web_test

import (
	"context"

	"image"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/pipeline/web"
	"github.com/floedata/floe/tableops"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fixture is a pipeline with three transforms: fresh (up to date), late
// (its source moved on two hours ago, past its error_after) and broken
// (its source is missing: its build failed), each run once and sampled.
type fixture struct {
	mon *pipeline.Monitor
	url string
}

const secret = "SECRET-ROW-VALUE"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	e := tabletest.New(t)
	for _, name := range []string{"static", "orders"} {
		if _, err := e.Create(name, "id long not null, note string", "", []string{"id"}, nil); err != nil {
			t.Fatal(err)
		}
		insert(t, e, name, []any{1, secret}, []any{2, "b"})
	}
	path := filepath.Join(t.TempDir(), "shop.yaml")
	if err := os.WriteFile(path, []byte(`
transforms:
  - {name: fresh, type: sync, source: ns.static, destination: ns.fresh, key: [id], freshness: {warn_after: 30m, error_after: 1h}}
  - {name: late, type: sync, source: ns.orders, destination: ns.late, key: [id], freshness: {warn_after: 10m, error_after: 1h}}
  - {name: downstream, type: filter, source: ns.late, destination: ns.downstream}
  - {name: broken, type: sync, source: ns.missing, destination: ns.view, key: [id]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	// The status is read two hours from now: the change committed below
	// has then waited two hours.
	later := func() time.Time { return time.Now().Add(2 * time.Hour) }
	r := &pipeline.Runner{Catalog: e.Cat, Logger: quiet(), History: pipeline.OpenHistory(p.StatusFile), Pipeline: p}
	if _, err := r.RunOnce(e.Ctx, p, nil); err == nil {
		t.Fatal("broken did not fail")
	}
	insert(t, e, "orders", []any{3, "c"})
	r.Now = later
	mon := &pipeline.Monitor{Pipeline: p, Runner: r, Logger: quiet()}
	mon.Sample(e.Ctx)
	srv := httptest.NewServer((&web.Server{Monitor: mon, Logger: quiet()}).Handler())
	t.Cleanup(srv.Close)
	return &fixture{mon: mon, url: srv.URL}
}

func insert(t *testing.T, e *tabletest.Env, name string, rows ...[]any) {
	t.Helper()
	tbl := e.Load(name)
	if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(tabletest.ArrowSchema(tbl), rows)); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// node returns the class attribute of the graph node id in html.
func node(t *testing.T, html, id string) string {
	t.Helper()
	m := regexp.MustCompile(`<g class="([^"]*)" data-node="` + regexp.QuoteMeta(id) + `"`).FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no graph node %s in the page", id)
	}
	return m[1]
}

// checkPage asserts what the page of the fixture must show.
func checkPage(t *testing.T, html string) {
	t.Helper()
	for id, want := range map[string]string{
		"transform:fresh":      "fresh-ok",
		"transform:late":       "fresh-error",
		"table:ns.late":        "fresh-error",
		"table:ns.downstream":  "fresh-none",
		"transform:broken":     "failed",
		"table:ns.static":      "source",
		"table:ns.orders":      "source",
		"table:ns.missing":     "fresh-unknown",
		"transform:downstream": "transform",
	} {
		if c := node(t, html, id); !strings.Contains(c, want) {
			t.Errorf("graph node %s has classes %q, want %s", id, c, want)
		}
	}
	if n := strings.Count(html, `class="edge"`); n != 8 {
		t.Errorf("%d arrows in the graph, want 8", n)
	}
	for _, a := range []string{`data-from="table:ns.orders" data-to="transform:late"`, `data-from="transform:late" data-to="table:ns.late"`,
		`data-from="table:ns.late" data-to="transform:downstream"`} {
		if !strings.Contains(html, a) {
			t.Errorf("no arrow %s", a)
		}
	}
	if !regexp.MustCompile(`class="error-text[^"]*">[^<]*table does not exist: ns.missing`).MatchString(html) {
		t.Error("the failed build's error is not shown")
	}
	// The lag plot of late has points (before and after its build, now);
	// the end-to-end lag of downstream (2h, through late) is shown.
	late := section(t, html, "late")
	m := regexp.MustCompile(`<svg class="plot" [^>]*data-points="(\d+)"`).FindStringSubmatch(late)
	if m == nil {
		t.Fatal("no plot for late")
	}
	if n, _ := strconv.Atoi(m[1]); n < 2 || strings.Count(late, `class="pt"`) < 2 {
		t.Errorf("late's lag plot has %s points", m[1])
	}
	if !strings.Contains(late, "rule-error") || !strings.Contains(late, `class="bar bar-added"`) {
		t.Error("late's plots lack the error_after rule or the bars of its build")
	}
	if !strings.Contains(section(t, html, "downstream"), "end to end 2h") {
		t.Error("downstream does not show its end-to-end lag of 2h")
	}
	if strings.Contains(html, secret) {
		t.Error("the page shows a data row")
	}
	if strings.Contains(html, "<script") || regexp.MustCompile(`(src|href)="https?:`).MatchString(html) {
		t.Error("the page loads scripts or external resources")
	}
}

func section(t *testing.T, html, transform string) string {
	t.Helper()
	i := strings.Index(html, `id="transform-`+transform+`"`)
	if i < 0 {
		t.Fatalf("no section for %s", transform)
	}
	j := strings.Index(html[i:], "</section>")
	return html[i : i+j]
}

// TestPage checks the served page, its headers and endpoints, without a
// browser.
func TestPage(t *testing.T) {
	f := newFixture(t)
	code, h, html := get(t, f.url+"/")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("GET /: %d %v", code, h)
	}
	checkPage(t, html)
	if code, _, body := get(t, f.url+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	if code, _, body := get(t, f.url+"/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz %d %q", code, body)
	}
	if code, _, _ := get(t, f.url+"/other"); code != 404 {
		t.Fatalf("/other: %d", code)
	}
	resp, err := http.Post(f.url+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
}

// TestPageUnreachableCatalog: a catalog that does not answer is shown as
// such, with the pipeline's graph in grey, and /readyz fails.
func TestPageUnreachableCatalog(t *testing.T) {
	url := unreachableServer(t)
	code, _, html := get(t, url+"/")
	if code != 200 || !strings.Contains(html, `id="catalog-error"`) || !strings.Contains(html, "Catalog unreachable") {
		t.Fatalf("the page does not say the catalog is unreachable:\n%s", html)
	}
	if c := node(t, html, "table:ns.orders"); !strings.Contains(c, "fresh-unknown") {
		t.Fatalf("the source of an unreachable catalog: %q", c)
	}
	if code, _, body := get(t, url+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "catalog") {
		t.Fatalf("/readyz %d %q", code, body)
	}
}

// unreachableServer serves the page of a pipeline whose REST catalog
// listens nowhere.
func unreachableServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	dir := t.TempDir()
	cfg := filepath.Join(dir, "catalogs.yaml")
	if err := os.WriteFile(cfg, []byte("catalog:\n  prod:\n    type: rest\n    uri: http://"+addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("transforms:\n  - {name: copy, type: sync, source: ns.orders, destination: ns.copy, key: [id], freshness: {error_after: 1h}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := pipeline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Pipeline()
	if err != nil {
		t.Fatal(err)
	}
	mon := &pipeline.Monitor{Pipeline: p, Runner: &pipeline.Runner{Pipeline: p}, Logger: quiet(),
		Open: func(ctx context.Context) (*catalog.Catalog, error) {
			return catalog.Open(ctx, catalog.Options{Name: "prod", ConfigFile: cfg})
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mon.Sample(ctx)
	srv := httptest.NewServer((&web.Server{Monitor: mon, Logger: quiet()}).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// chromium returns the browser to test with, or skips (fails with
// FLOE_BROWSER_REQUIRED=1) when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	for _, c := range []string{os.Getenv("FLOE_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	msg := "chromium not found (install it with `bash .ci/browser.sh`, or set FLOE_CHROMIUM): the status page is not tested in a browser"
	if os.Getenv("FLOE_BROWSER_REQUIRED") == "1" {
		t.Fatal(msg + "; FLOE_BROWSER_REQUIRED=1")
	}
	t.Skip(msg)
	return ""
}

// browse runs headless chromium on url with args (--dump-dom or
// --screenshot=FILE) and returns its standard output.
func browse(t *testing.T, bin, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,1400"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// TestPageInBrowser loads the page in headless Chromium: the DOM it builds
// has the graph, the freshness classes, the error and the plots' points,
// and its screenshot shows the freshness colors (saved in the test's
// artifact directory: go test -run TestPageInBrowser -artifacts keeps it).
func TestPageInBrowser(t *testing.T) {
	bin := chromium(t)
	f := newFixture(t)
	dom := browse(t, bin, f.url+"/", "--dump-dom")
	if !strings.Contains(dom, "<svg") {
		t.Fatalf("chromium's DOM has no SVG:\n%.2000s", dom)
	}
	checkPage(t, dom)
	shot := filepath.Join(t.ArtifactDir(), "status-page.png")
	browse(t, bin, f.url+"/", "--screenshot="+shot)
	t.Logf("screenshot: %s", shot)
	img := readPNG(t, shot)
	for _, c := range []struct {
		name    string
		r, g, b uint8
		min     int
	}{
		{"error red (late's box, its badge)", 0xc6, 0x28, 0x28, 200},
		{"ok green (fresh's box, its badge)", 0x2e, 0x7d, 0x32, 200},
		{"the bars of the rows plot", 0x66, 0xbb, 0x6a, 100},
		{"the lag plot's line and points", 0x3b, 0x5b, 0xdb, 50},
	} {
		if n := countColor(img, c.r, c.g, c.b); n < c.min {
			t.Errorf("the screenshot has %d pixels of %s (#%02x%02x%02x), want at least %d", n, c.name, c.r, c.g, c.b, c.min)
		}
	}

	// The page of an unreachable catalog, in the browser too.
	dom = browse(t, bin, unreachableServer(t)+"/", "--dump-dom")
	if !strings.Contains(dom, "Catalog unreachable") || !strings.Contains(node(t, dom, "table:ns.orders"), "fresh-unknown") {
		t.Fatalf("unreachable catalog in chromium:\n%.3000s", dom)
	}
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	img, err := png.Decode(fh)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// countColor counts the pixels within a small distance of a color.
func countColor(img image.Image, r, g, b uint8) int {
	n := 0
	bounds := img.Bounds()
	near := func(a uint32, want uint8) bool {
		d := int(a>>8) - int(want)
		return d > -12 && d < 12
	}
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr, r) && near(pg, g) && near(pb, b) {
				n++
			}
		}
	}
	return n
}
