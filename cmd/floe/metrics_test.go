package main_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMetricsEndpoint runs floe run --every with --metrics-addr on a free
// port, scrapes /metrics after the first builds and stops floe with
// SIGTERM.
func TestMetricsEndpoint(t *testing.T) {
	work := t.TempDir()
	for _, args := range [][]string{
		{"namespace", "create", "shop"},
		{"table", "create", "shop.orders", "--schema", "id long not null, status string", "--identifier", "id"},
	} {
		if out := runFloe(t, work, args); !strings.HasPrefix(out, "exit 0") {
			t.Fatalf("floe %v: %s", args, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "p.yaml"), []byte(`
transforms:
  - {name: copy, type: sync, source: shop.orders, destination: shop.copy, key: [id], every: 1h}
  - {name: broken, type: sync, source: shop.missing, destination: shop.view, key: [id], every: 1h}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startFloe(t, work, []string{"run", "p.yaml", "--metrics-addr", "127.0.0.1:0"})
	defer b.kill()
	b.waitFor(t, "transform failed")
	b.waitFor(t, "msg=\"transform done\" transform=copy")
	addr := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`).FindStringSubmatch(b.stderr.String())
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", b.stderr.String())
	}
	resp, err := http.Get("http://" + addr[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`floe_pipeline_builds_total{outcome="full",transform="copy"} 1`,
		`floe_pipeline_builds_total{outcome="error",transform="broken"} 1`,
		`floe_pipeline_build_duration_seconds_count{transform="copy"} 1`,
		`floe_pipeline_snapshots_behind{input="source",transform="copy"} 0`,
		`floe_pipeline_rows_added_total{output="shop.copy",transform="copy"} 0`,
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
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
	if t.Failed() {
		t.Logf("metrics:\n%s", body)
	}
}
