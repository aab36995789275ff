package main_test

import (
	"bufio"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/floedata/floe/internal/testdir"
)

// TestDeltaSyncEvery runs `floe delta sync --every` as a process: it
// migrates the table, picks up Delta commits made while it runs, and exits
// cleanly with status 0 on SIGTERM after finishing its run.
func TestDeltaSyncEvery(t *testing.T) {
	src := testdir.Shared(t, "delta", "deltars-cdf-table")
	work := t.TempDir()
	dir := filepath.Join(work, "src")
	copyDir(t, src, dir)
	// Hold back versions 2 and 3: the table starts at version 1.
	held := t.TempDir()
	for _, v := range []string{"00000000000000000002.json", "00000000000000000003.json"} {
		if err := os.Rename(filepath.Join(dir, "_delta_log", v), filepath.Join(held, v)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(floeBin, "--warehouse", "wh", "delta", "sync", dir, "shop.people", "--equality-columns", "id", "--every", "100ms")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var log []string
	waitFor := func(substr string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("floe exited before logging %q:\n%s", substr, strings.Join(log, "\n"))
				}
				log = append(log, l)
				if strings.Contains(l, substr) {
					return
				}
			case <-deadline:
				t.Fatalf("no %q in the log after 60s:\n%s", substr, strings.Join(log, "\n"))
			}
		}
	}
	waitFor(`msg="delta sync: run done" table=shop.people watermark=1`)
	for _, v := range []string{"00000000000000000002.json", "00000000000000000003.json"} {
		if err := os.Rename(filepath.Join(held, v), filepath.Join(dir, "_delta_log", v)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(`msg="delta sync: run done" table=shop.people watermark=3 batches=1 committed=true`)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(`msg="delta sync: stopped"`)
	for l := range lines {
		log = append(log, l)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("floe did not exit cleanly: %v\n%s", err, strings.Join(log, "\n"))
	}
	out := runFloe(t, work, []string{"table", "scan", "shop.people", "--columns", "id,birthday", "--format", "csv"})
	for _, want := range []string{"exit 0", "5,2023-12-29", "2,2023-12-22"} {
		if !strings.Contains(out, want) {
			t.Fatalf("table after the sync lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "7,") {
		t.Fatalf("row 7, deleted at version 3, is still there:\n%s", out)
	}
}

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
