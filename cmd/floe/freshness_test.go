package main_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

// setupShop creates shop.orders with a few rows in work, and writes the
// pipeline file p.yaml.
func setupShop(t *testing.T, work, pipelineYAML string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(work, "o.csv"), []byte("id,status\n1,active\n2,closed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"namespace", "create", "shop"},
		{"table", "create", "shop.orders", "--schema", "id long not null, status string", "--identifier", "id"},
		{"table", "append", "shop.orders", "o.csv"},
	} {
		if out := runFloe(t, work, args); !strings.HasPrefix(out, "exit 0") {
			t.Fatalf("floe %v: %s", args, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "p.yaml"), []byte(pipelineYAML), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantExit(t *testing.T, out string, code int, texts ...string) {
	t.Helper()
	if !strings.HasPrefix(out, fmt.Sprintf("exit %d\n", code)) {
		t.Fatalf("want exit %d:\n%s", code, out)
	}
	for _, s := range texts {
		if !strings.Contains(out, s) {
			t.Fatalf("no %q in:\n%s", s, out)
		}
	}
}

// TestStatusCheckExitCodes runs floe status --check as cron would (no
// terminal, --quiet, only the exit status looked at) through the states
// of a pipeline: fresh, stale, warned, unmeasurable, and without targets.
func TestStatusCheckExitCodes(t *testing.T) {
	work := t.TempDir()
	setupShop(t, work, `
transforms:
  - {name: active, type: sync, source: shop.orders, destination: shop.active, key: [id], filter: "status = 'active'", freshness: {warn_after: 30m, error_after: 1h}}
  - {name: copy, type: sync, source: shop.orders, destination: shop.copy, key: [id]}
`)
	check := func(extra ...string) string {
		return runFloe(t, work, append([]string{"status", "p.yaml", "--check", "--quiet"}, extra...))
	}
	// Not built yet: behind since the first commit, well within 30m.
	wantExit(t, check(), 0)
	wantExit(t, runFloe(t, work, []string{"run", "p.yaml", "--once", "--quiet"}), 0)
	wantExit(t, check(), 0)
	if err := os.WriteFile(filepath.Join(work, "more.csv"), []byte("id,status\n3,active\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, runFloe(t, work, []string{"table", "append", "shop.orders", "more.csv", "--quiet"}), 0)
	// copy has no target of its own: the command line gives it one that
	// its lag (a commit not yet applied) is past.
	wantExit(t, check("--error-after", "1ms"), 3, "floe: stale: copy (shop.copy): lag", "is past error_after")
	out := check("--warn-after", "1ms", "--error-after", "1h")
	wantExit(t, out, 0, "floe: warning: copy (shop.copy): lag")
	if strings.Contains(out, "active (shop.active)") {
		t.Fatalf("active is within its targets:\n%s", out)
	}
	// After a run everything is fresh again.
	wantExit(t, runFloe(t, work, []string{"run", "p.yaml", "--once", "--quiet"}), 0)
	wantExit(t, check("--error-after", "1h"), 0)

	// A transform with a target whose lag cannot be measured.
	if err := os.WriteFile(filepath.Join(work, "broken.yaml"), []byte(`
transforms:
  - {name: broken, type: sync, source: shop.missing, destination: shop.view, key: [id], freshness: {error_after: 1h}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, runFloe(t, work, []string{"status", "broken.yaml", "--check", "--quiet"}), 1, "cannot tell the freshness of broken (shop.view)", "shop.missing")
	// No target at all: nothing to check is a usage error, not a silent 0.
	wantExit(t, runFloe(t, work, []string{"status", "p.yaml", "copy", "--check", "--quiet"}), 2, "no transform has a freshness target")
	// A catalog that does not answer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if err := os.WriteFile(filepath.Join(work, "cat.yaml"), []byte("catalog:\n  prod:\n    type: rest\n    uri: http://"+addr+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantExit(t, runFloe(t, work, []string{"status", "p.yaml", "--check", "--quiet", "--catalog", "prod", "--config", "cat.yaml"}), 1)

	// The history shows the runs, the last real build first among them.
	out = runFloe(t, work, []string{"status", "p.yaml", "--history", "--format", "jsonl"})
	wantExit(t, out, 0, `"transform":"active"`, `"outcome":"incremental"`, `"rows_added":1`)
	if n := strings.Count(out, `"transform":`); n != 4 {
		t.Fatalf("%d runs in the history, want 4:\n%s", n, out)
	}
	// The default table fits 100 columns, the lag first.
	out = runFloe(t, work, []string{"status", "p.yaml"})
	wantExit(t, out, 0, "LAG ")
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if n := len([]rune(l)); n > 100 {
			t.Fatalf("a line of %d columns:\n%s", n, out)
		}
	}
	if !strings.HasPrefix(strings.Split(out, "\n")[1], "LAG") {
		t.Fatalf("the lag is not first:\n%s", out)
	}
}

// TestConcurrentRunsExitZero: two floe run --once at once on one pipeline,
// as two overlapping cron entries: both exit 0 (the loser of a race is
// superseded, not failed), and the output is right.
func TestConcurrentRunsExitZero(t *testing.T) {
	work := t.TempDir()
	setupShop(t, work, "transforms:\n  - {name: copy, type: sync, source: shop.orders, destination: shop.copy, key: [id]}\n")
	for round := 0; round < 4; round++ {
		csv := fmt.Sprintf("id,status\n%d,active\n", 10+round)
		if err := os.WriteFile(filepath.Join(work, "r.csv"), []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		wantExit(t, runFloe(t, work, []string{"table", "append", "shop.orders", "r.csv", "--quiet"}), 0)
		var wg sync.WaitGroup
		outs := make([]string, 2)
		for i := range outs {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				outs[i] = runFloe(t, work, []string{"run", "p.yaml", "--once"})
			}(i)
		}
		wg.Wait()
		for _, out := range outs {
			wantExit(t, out, 0)
		}
	}
	out := runFloe(t, work, []string{"table", "scan", "shop.copy", "--format", "csv"})
	if n := strings.Count(out, ",active") + strings.Count(out, ",closed"); n != 6 {
		t.Fatalf("copy has %d rows, want 6:\n%s", n, out)
	}
}

// addrOf waits for the address floe logs for what it serves.
func addrOf(t *testing.T, b *background, what string) string {
	t.Helper()
	b.waitFor(t, `msg="serving `+what+`" addr=`)
	m := regexp.MustCompile(`msg="serving ` + regexp.QuoteMeta(what) + `" addr=(\S+)`).FindStringSubmatch(b.stderr.String())
	if m == nil {
		t.Fatalf("no address for %s:\n%s", what, b.stderr.String())
	}
	return m[1]
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady polls /readyz until it answers 200 (within a minute).
func waitReady(t *testing.T, base string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := httpGet(t, base+"/readyz")
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %s", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stopWithTERM(t *testing.T, b *background) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		t.Fatal("no exit after SIGTERM")
	}
	if b.err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", b.err, b.stderr.String())
	}
}

// TestServeLoopbackHealthAndPage (issue 12, item 11): an address given as
// a port alone binds 127.0.0.1; the metrics address answers /healthz and
// /readyz, and the page is served by floe run --http and by floe serve.
func TestServeLoopbackHealthAndPage(t *testing.T) {
	work := t.TempDir()
	setupShop(t, work, "transforms:\n  - {name: copy, type: sync, source: shop.orders, destination: shop.copy, key: [id], every: 1h, freshness: {error_after: 1h}}\n")
	b := startFloe(t, work, []string{"run", "p.yaml", "--metrics-addr", ":0", "--http", ":0"})
	defer b.kill()
	metrics, page := addrOf(t, b, "metrics"), addrOf(t, b, "the status page")
	for _, a := range []string{metrics, page} {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("an address without a host listens on %s, not on the loopback interface", a)
		}
	}
	if strings.Contains(b.stderr.String(), "without authentication") {
		t.Fatalf("a loopback address warns:\n%s", b.stderr.String())
	}
	b.waitFor(t, `msg="transform done" transform=copy`)
	if code, body := httpGet(t, "http://"+metrics+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz %d %q", code, body)
	}
	waitReady(t, "http://"+metrics)
	if _, body := httpGet(t, "http://"+metrics+"/metrics"); !strings.Contains(body, `floe_pipeline_lag_seconds{input="source",transform="copy"}`) ||
		!strings.Contains(body, `floe_pipeline_freshness{output="shop.copy",transform="copy"} 0`) {
		t.Fatalf("/metrics lacks the lag or freshness of copy:\n%s", body)
	}
	if code, body := httpGet(t, "http://"+page+"/"); code != 200 || !strings.Contains(body, `data-node="transform:copy"`) {
		t.Fatalf("the page: %d\n%.500s", code, body)
	}
	stopWithTERM(t, b)

	s := startFloe(t, work, []string{"serve", "p.yaml", "--http", "127.0.0.1:0"})
	defer s.kill()
	page = addrOf(t, s, "the status page")
	waitReady(t, "http://"+page)
	code, body := httpGet(t, "http://"+page+"/")
	if code != 200 || !strings.Contains(body, `data-node="transform:copy"`) || !strings.Contains(body, `class="node transform fresh-ok"`) {
		t.Fatalf("floe serve's page: %d\n%.800s", code, body)
	}
	stopWithTERM(t, s)
}

// TestDeltaSyncEveryMetrics: floe delta sync --every serves floe run's
// metrics, /healthz and /readyz, and its first run counts the migrated
// rows (issue 12, item 9, through the command).
func TestDeltaSyncEveryMetrics(t *testing.T) {
	work := t.TempDir()
	dir := filepath.Join(work, "events")
	writeDelta(t, dir, 100)
	b := startFloe(t, work, []string{"delta", "sync", dir, "shop.people", "--equality-columns", "id", "--every", "1h",
		"--metrics-addr", "127.0.0.1:0", "--log-format", "json"})
	defer b.kill()
	b.waitFor(t, `"msg":"delta sync: run done"`)
	m := regexp.MustCompile(`"msg":"serving metrics","addr":"([^"]+)"`).FindStringSubmatch(b.stderr.String())
	if m == nil {
		t.Fatalf("no metrics address in the JSON log:\n%s", b.stderr.String())
	}
	base := "http://" + m[1]
	waitReady(t, base)
	if code, _ := httpGet(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz %d", code)
	}
	_, body := httpGet(t, base+"/metrics")
	for _, want := range []string{
		`floe_pipeline_builds_total{outcome="full",transform="shop.people"} 1`,
		`floe_pipeline_rows_added_total{output="shop.people",transform="shop.people"} 100`,
		`floe_pipeline_snapshots_behind{input="delta",transform="shop.people"} 0`,
		`floe_pipeline_catalog_up 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
	stopWithTERM(t, b)
}

// writeDelta writes a Delta table of n rows (id, name) at dir, with
// Change Data Feed enabled.
func writeDelta(t *testing.T, dir string, n int) {
	t.Helper()
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	md, err := deltatest.Metadata(schema, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		t.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	for i := 1; i <= n; i++ {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprint("p", i))
	}
	rec := bld.NewRecordBatch()
	bld.Release()
	add, err := w.WriteData("part-0.parquet", rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(deltatest.CommitInfo{Timestamp: time.Now(), Operation: "WRITE"}, delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md, add); err != nil {
		t.Fatal(err)
	}
}
