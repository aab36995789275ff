package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/internal/cli"
	"github.com/floedata/floe/internal/testbin"
)

// cdcBin is the example program, built once for these tests.
var cdcBin string

func TestMain(m *testing.M) { testbin.Main(m, "cdc", &cdcBin) }

var (
	snapshotID = regexp.MustCompile(`\b\d{15,19}\b`)
	durRe      = regexp.MustCompile(`\(\d+(\.\d+)?(ms|s|µs)\)`)
	isoTime    = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	logTime    = regexp.MustCompile(`(?m)^time=\S+ `)
	durAttr    = regexp.MustCompile(`duration=\S+`)
	durJSON    = regexp.MustCompile(`"duration_ms":[0-9.]+`)
	lagCSV     = regexp.MustCompile(`(?m)^\d+,\d+,`)
)

func clean(work, s string) string {
	s = strings.ReplaceAll(s, work, "<WORK>")
	s = snapshotID.ReplaceAllString(s, "<ID>")
	s = durRe.ReplaceAllString(s, "(<DUR>)")
	s = isoTime.ReplaceAllString(s, "<TIME>")
	s = logTime.ReplaceAllString(s, "")
	s = durJSON.ReplaceAllString(s, `"duration_ms":<DUR>`)
	return durAttr.ReplaceAllString(s, "duration=<DUR>")
}

func report(work string, code int, stdout, stderr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d\n", code)
	if out := clean(work, stdout); out != "" {
		b.WriteString(strings.TrimRight(out, "\n") + "\n")
	}
	if e := clean(work, stderr); e != "" {
		for _, l := range strings.Split(strings.TrimRight(e, "\n"), "\n") {
			b.WriteString("! " + l + "\n")
		}
	}
	return b.String()
}

// TestExample drives the example program with testdata/cdc. Commands:
//
//	file NAME     writes the input to NAME in the work folder
//	floe ARGS     runs floe's own command line in this process (to create
//	              and change tables), $WORK standing for the work folder
//	cdc ARGS      runs the example program in the work folder (warehouse
//	              ./wh) and prints its exit status, stdout and stderr
//	              (snapshot ids as <ID>, times as <TIME>, durations as <DUR>)
//	              with the sorted argument, stdout lines sorted
func TestExample(t *testing.T) {
	work := t.TempDir()
	datadriven.RunTest(t, "testdata/cdc", func(t *testing.T, d *datadriven.TestData) string {
		args, err := testbin.SplitArgs(strings.ReplaceAll(d.Input, "$WORK", work))
		if err != nil {
			t.Fatal(err)
		}
		switch d.Cmd {
		case "file":
			if err := os.WriteFile(filepath.Join(work, d.CmdArgs[0].Key), []byte(d.Input), 0o644); err != nil {
				t.Fatal(err)
			}
			return ""
		case "floe":
			var stdout, stderr bytes.Buffer
			code := cli.Run(context.Background(), append([]string{"--warehouse", filepath.Join(work, "wh")}, args...), nil, &stdout, &stderr)
			return report(work, code, stdout.String(), stderr.String())
		case "cdc":
			cmd := exec.Command(cdcBin, append([]string{"--warehouse", "wh"}, args...)...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			var ee *exec.ExitError
			if err := cmd.Run(); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			out := stdout.String()
			if d.HasArg("nolag") {
				// status's lag_s and own_lag_s depend on when it runs.
				out = lagCSV.ReplaceAllString(out, "<LAG>,<LAG>,")
			}
			if d.HasArg("sorted") {
				lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
				sort.Strings(lines)
				out = strings.Join(lines, "\n")
			}
			return report(work, code, out, stderr.String())
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}

// TestExampleScheduleStopsOnSIGTERM runs the example on a schedule and
// stops it with SIGTERM: it exits 0 after building both transforms in
// dependency order.
func TestExampleScheduleStopsOnSIGTERM(t *testing.T) {
	work := t.TempDir()
	wh := filepath.Join(work, "wh")
	var out bytes.Buffer
	for _, args := range [][]string{
		{"namespace", "create", "shop"},
		{"table", "create", "shop.orders", "--schema", "id long not null, status string", "--key", "id"},
	} {
		if code := cli.Run(context.Background(), append([]string{"--warehouse", wh, "--quiet"}, args...), nil, &out, &out); code != 0 {
			t.Fatalf("floe %v: %s", args, out.String())
		}
	}
	cmd := exec.Command(cdcBin, "--warehouse", wh, "run", "--every", "1h", "--log-format", "json")
	cmd.Dir = work
	var stderr safeBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(time.Minute)
	for !strings.Contains(stderr.String(), `"msg":"transform done","transform":"active_orders"`) {
		select {
		case err := <-done:
			t.Fatalf("exited early (%v): %s", err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("no build within a minute: %s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("did not stop: %s", stderr.String())
	}
	logs := stderr.String()
	copyDone := strings.Index(logs, `"msg":"transform done","transform":"orders_copy"`)
	activeDone := strings.Index(logs, `"msg":"transform done","transform":"active_orders"`)
	if copyDone < 0 || activeDone < copyDone || !strings.Contains(logs, `"msg":"scheduler stopped"`) {
		t.Fatalf("want orders_copy built before active_orders, then a clean stop:\n%s", logs)
	}
}
