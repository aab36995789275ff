package main_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillDuringSparkBuilds kills the real binary (SIGKILL) at random
// points of floe sync --engine spark builds while the source changes, then
// reruns it to completion: the output must equal a local twin built from
// the same source after every rerun (nothing lost, nothing doubled), with
// the same watermark. Needs a Spark Connect server (.ci/spark.sh).
func TestKillDuringSparkBuilds(t *testing.T) {
	remote := os.Getenv("FLOE_SPARK_REMOTE")
	if remote == "" {
		msg := "no Spark Connect server: run under .ci/spark.sh (it sets FLOE_SPARK_REMOTE)"
		if os.Getenv("FLOE_SPARK_REQUIRED") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLOE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	work := t.TempDir()
	mode := []string{"copy-on-write", "merge-on-read"}[rng.IntN(2)]
	must := func(args ...string) string {
		t.Helper()
		out := runFloe(t, work, args)
		if !strings.HasPrefix(out, "exit 0") {
			t.Fatalf("floe %v: %s", args, out)
		}
		return out
	}
	must("namespace", "create", "shop")
	must("table", "create", "shop.orders", "--schema", "id long not null, status string, amount long", "--identifier", "id",
		"--property", "write.delete.mode="+mode, "--property", "write.update.mode="+mode)
	next := 0
	appendRows := func(n int) {
		var b strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "{\"id\":%d,\"status\":%q,\"amount\":%d}\n", next, []string{"active", "closed"}[rng.IntN(2)], rng.IntN(100))
			next++
		}
		p := filepath.Join(work, fmt.Sprintf("rows-%d.jsonl", next))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		must("table", "append", "shop.orders", p)
	}
	change := func() {
		switch rng.IntN(3) {
		case 0:
			appendRows(1 + rng.IntN(20))
		case 1:
			must("table", "update", "shop.orders", "--set", "amount = amount + 1, status = 'active'", "--where", fmt.Sprintf("id %% %d = 0", 2+rng.IntN(4)))
		default:
			must("table", "delete", "shop.orders", "--where", fmt.Sprintf("id %% %d = 1", 3+rng.IntN(5)))
		}
	}
	sync := []string{"sync", "shop.orders", "shop.out", "--key", "id", "--filter", "status = 'active'", "--engine", "spark", "--spark-remote", remote}
	appendRows(30)
	killed := 0
	for i := 0; i < 6; i++ {
		change()
		cmd := exec.Command(floeBin, append([]string{"--warehouse", "wh"}, sync...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-time.After(time.Duration(200+rng.IntN(4000)) * time.Millisecond):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			killed++
		case err := <-done:
			if err != nil {
				t.Fatalf("floe sync --engine spark failed: %v: %s", err, stderr.String())
			}
		}
		// Rerun to completion, then compare with the local twin.
		must(sync...)
		must("sync", "shop.orders", "shop.ref", "--key", "id", "--filter", "status = 'active'")
		a, b := scanSorted(t, work, "shop.out"), scanSorted(t, work, "shop.ref")
		if a != b {
			t.Fatalf("after kill %d the Spark-built output differs from the local twin:\nspark:\n%s\nlocal:\n%s", i, a, b)
		}
		wa := must("table", "describe", "shop.out")
		wb := must("table", "describe", "shop.ref")
		if watermark(wa) != watermark(wb) || watermark(wa) == "" {
			t.Fatalf("watermarks differ after kill %d: %q vs %q", i, watermark(wa), watermark(wb))
		}
	}
	t.Logf("%d of 6 Spark builds killed (source %s); every rerun converged", killed, mode)
}

func scanSorted(t *testing.T, work, table string) string {
	t.Helper()
	out := runFloe(t, work, []string{"table", "scan", table, "--format", "jsonl"})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "exit 0") {
		t.Fatalf("scan %s: %s", table, out)
	}
	lines = lines[1:]
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func watermark(describe string) string {
	for _, l := range strings.Split(describe, "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "watermark.source-snapshot-id" && f[1] == "=" {
			return f[2]
		}
	}
	return ""
}
