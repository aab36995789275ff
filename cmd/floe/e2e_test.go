package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/internal/testbin"
	"github.com/floedata/floe/internal/testdir"
)

// floeBin is the floe binary built once for these tests.
var floeBin string

func TestMain(m *testing.M) { testbin.Main(m, "floe", &floeBin) }

var (
	snapshotID  = regexp.MustCompile(`\b\d{15,19}\b`)
	tmpPath     = regexp.MustCompile(`/tmp/[^\s"']*`)
	timeRe      = regexp.MustCompile(`"current_snapshot_time": "[^"]*"`)
	metaRe      = regexp.MustCompile(`\d{5}-<UUID>\.metadata\.json`)
	durRe       = regexp.MustCompile(`\(\d+(\.\d+)?(ms|s|µs|m\d+(\.\d+)?s)\)$`)
	versionRe   = regexp.MustCompile(`semantic version changed from \d+ to \d+`)
	snapshotRef = regexp.MustCompile(`\$SNAPSHOT\(([^,]+),(\d+)\)`)
	epochMs     = regexp.MustCompile(`\b1\d{12}\b`)
	fileSize    = regexp.MustCompile(`(files-size"*:"*)\d+`)
	isoTime     = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	lagJSON     = regexp.MustCompile(`"(own_)?lag_s":\d+`)
	lagCSV      = regexp.MustCompile(`(?m)^\d+,\d+,`)
	uuidRe      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
)

// TestScripts runs the real binary on the scripts in testdata. Commands:
//
//	file NAME          writes the input to NAME in the work folder
//	floe ARGS...       runs floe with ARGS in the work folder (warehouse ./wh)
//	                   and prints the exit status, stdout and stderr;
//	                   snapshot ids print as <ID>, temporary paths as <TMP>,
//	                   log lines without their time=; with the notime
//	                   argument, ISO-8601 UTC times print as <TIME>; with
//	                   nolag, status's lag_s figures (jsonl, csv) as <LAG>
//	start NAME         starts floe with the input's ARGS in the background
//	wait NAME          waits until its stderr contains the input (times out
//	                   after a minute)
//	stop NAME signal=TERM|INT [keep=(A,B)]
//	                   sends the signal, waits for the exit and prints it
//	                   like floe, logs without their time=, only the stderr
//	                   lines containing one of the keep texts
//
// $SHARED in arguments is the shared testdata folder.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		work := t.TempDir()
		bg := map[string]*background{}
		defer func() {
			for _, b := range bg {
				b.kill()
			}
		}()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "start":
				args, err := testbin.SplitArgs(d.Input)
				if err != nil {
					t.Fatal(err)
				}
				bg[d.CmdArgs[0].Key] = startFloe(t, work, args)
				return ""
			case "wait":
				bg[d.CmdArgs[0].Key].waitFor(t, strings.TrimSpace(d.Input))
				return ""
			case "stop":
				var sig string
				d.ScanArgs(t, "signal", &sig)
				var keep []string
				if d.HasArg("keep") {
					d.ScanArgs(t, "keep", &keep)
				}
				b := bg[d.CmdArgs[0].Key]
				delete(bg, d.CmdArgs[0].Key)
				return b.stop(t, work, sig, keep)
			case "file":
				name := d.CmdArgs[0].Key
				if err := os.WriteFile(filepath.Join(work, name), []byte(d.Input), 0o644); err != nil {
					t.Fatal(err)
				}
				return ""
			case "floe":
				args, err := testbin.SplitArgs(d.Input)
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range args {
					if strings.Contains(a, "$SHARED") {
						args[i] = strings.ReplaceAll(a, "$SHARED", testdir.Shared(t))
					}
					args[i] = snapshotRef.ReplaceAllStringFunc(args[i], func(m string) string {
						sub := snapshotRef.FindStringSubmatch(m)
						return nthSnapshot(t, work, sub[1], sub[2])
					})
				}
				out := runFloe(t, work, args)
				if d.HasArg("mask-times") {
					out = epochMs.ReplaceAllString(out, "<MS>")
				}
				if d.HasArg("mask-times") || d.HasArg("notime") {
					out = isoTime.ReplaceAllString(out, "<TIME>")
				}
				if d.HasArg("nolag") {
					out = lagJSON.ReplaceAllString(out, `"${1}lag_s":<LAG>`)
					out = lagCSV.ReplaceAllString(out, "<LAG>,<LAG>,")
				}
				if d.HasArg("mask-sizes") {
					// Delete files hold data file paths, which differ in
					// length from one test directory to the next.
					out = fileSize.ReplaceAllString(out, "${1}<SIZE>")
				}
				if d.HasArg("sorted") {
					out = sortStdout(out)
				}
				return out
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func runFloe(t *testing.T, work string, args []string) string {
	cmd := exec.Command(floeBin, append([]string{"--warehouse", "wh"}, args...)...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	clean := func(s string) string {
		s = strings.ReplaceAll(s, work, "<WORK>")
		if root := testdir.ModuleRoot(); root != "" {
			// Paths of shared fixtures print as the scripts write them.
			s = strings.ReplaceAll(s, filepath.Join(root, "..", "shared", "testdata"), "$SHARED")
		}
		s = snapshotID.ReplaceAllString(s, "<ID>")
		s = tmpPath.ReplaceAllString(s, "<TMP>")
		s = uuidRe.ReplaceAllString(s, "<UUID>")
		s = metaRe.ReplaceAllString(s, "<META>")
		s = versionRe.ReplaceAllString(s, "semantic version changed from <N> to <N>")
		var lines []string
		for _, l := range strings.Split(s, "\n") {
			l = logTime.ReplaceAllString(l, "")
			l = durationAttr.ReplaceAllString(l, "duration=<DUR>")
			lines = append(lines, durRe.ReplaceAllString(l, "(<DUR>)"))
		}
		s = strings.Join(lines, "\n")
		s = timeRe.ReplaceAllString(s, `"current_snapshot_time": "<TIME>"`)
		return s
	}
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d\n", code)
	if out := clean(stdout.String()); out != "" {
		b.WriteString(out)
		if !strings.HasSuffix(out, "\n") {
			b.WriteString("\n")
		}
	}
	if e := clean(stderr.String()); e != "" {
		for _, l := range strings.Split(strings.TrimRight(e, "\n"), "\n") {
			b.WriteString("! " + l + "\n")
		}
	}
	return b.String()
}

// sortStdout sorts the stdout lines of a runFloe result (tables of rows
// whose order is not defined), keeping the exit line first and stderr last.
func sortStdout(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var body, errs []string
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "! ") {
			errs = append(errs, l)
		} else {
			body = append(body, l)
		}
	}
	sort.Strings(body)
	return strings.Join(append(append([]string{lines[0]}, body...), errs...), "\n") + "\n"
}

// nthSnapshot returns the id of the n-th snapshot (commit order) of table.
func nthSnapshot(t *testing.T, work, table, n string) string {
	cmd := exec.Command(floeBin, "--warehouse", "wh", "table", "snapshots", table, "--format", "csv")
	cmd.Dir = work
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("list snapshots of %s: %v", table, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")[1:]
	i, _ := strconv.Atoi(n)
	if i >= len(lines) {
		t.Fatalf("%s has %d snapshots", table, len(lines))
	}
	return strings.SplitN(lines[i], ",", 2)[0]
}
