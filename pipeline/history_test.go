package pipeline_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedata/floe/pipeline"
)

func rec(transform, outcome string, at time.Time) pipeline.RunRecord {
	return pipeline.RunRecord{Transform: transform, Outcome: outcome, Start: at, End: at.Add(time.Second)}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	h := pipeline.OpenHistory(filepath.Join(dir, ".p.floe-history.jsonl"))
	d, err := h.Read()
	if err != nil || len(d.Records) != 0 || len(d.Warnings) != 0 {
		t.Fatalf("a missing file is an empty history: %+v %v", d, err)
	}
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	failed := rec("a", pipeline.OutcomeError, t0)
	failed.Error = "boom"
	built := rec("a", pipeline.OutcomeIncremental, t0.Add(time.Minute))
	built.RowsAdded, built.BytesWritten = 7, 1234
	for _, r := range []pipeline.RunRecord{failed, built, rec("b", pipeline.OutcomeAborted, t0)} {
		if err := h.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	sums, err := h.Load()
	if err != nil {
		t.Fatal(err)
	}
	if a := sums["a"]; a.Runs != 2 || a.Failures != 1 || a.LastOutcome != "incremental" || a.LastError != "boom" ||
		a.LastBuild == nil || a.LastBuild.RowsAdded != 7 || a.LastBuild.BytesWritten != 1234 {
		t.Fatalf("a: %+v", a)
	}
	if b := sums["b"]; b.LastOutcome != "aborted" || b.Failures != 0 || b.LastError != "" || !b.LastSuccess.IsZero() {
		t.Fatalf("an aborted run is neither a failure nor a success: %+v", b)
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	// The history and the writers' lock file, no temporary file left.
	base := filepath.Base(h.Path())
	if len(names) != 2 || names[0] != base || names[1] != base+".lock" {
		t.Fatalf("files beside the history: %v", names)
	}
	b, _ := os.ReadFile(h.Path())
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], `{"floe_history":2`) || !strings.Contains(lines[2], `"rows_added":7`) {
		t.Fatalf("the file is a header and one JSON line per run:\n%s", b)
	}
}

// TestHistoryBounded: appends past MaxBytes compact the file: it stays
// bounded, skipped runs in a row merge into one record (counted), and
// however many skipped runs follow, the last build and the last failure
// stay.
func TestHistoryBounded(t *testing.T) {
	h := pipeline.OpenHistory(filepath.Join(t.TempDir(), "h.jsonl"))
	h.MaxBytes, h.Keep = 4096, 5
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	failed := rec("a", pipeline.OutcomeError, t0)
	failed.Error = "the failure"
	build := rec("a", pipeline.OutcomeFull, t0.Add(time.Second))
	build.RowsAdded = 42
	for _, r := range []pipeline.RunRecord{failed, build} {
		if err := h.Record(r); err != nil {
			t.Fatal(err)
		}
	}
	const skipped = 2000
	for i := 0; i < skipped; i++ {
		other := rec("b", pipeline.OutcomeIncremental, t0.Add(time.Duration(i)*time.Minute))
		for _, r := range []pipeline.RunRecord{rec("a", pipeline.OutcomeSkipped, t0.Add(time.Duration(i)*time.Minute)), other} {
			if err := h.Record(r); err != nil {
				t.Fatal(err)
			}
		}
		if fi, err := os.Stat(h.Path()); err != nil || fi.Size() > h.MaxBytes+1024 {
			t.Fatalf("after %d appends the file has %d bytes (max %d)", i, fi.Size(), h.MaxBytes)
		}
	}
	if err := h.Compact(); err != nil {
		t.Fatal(err)
	}
	d, err := h.Read()
	if err != nil || len(d.Warnings) > 0 {
		t.Fatal(err, d.Warnings)
	}
	a := d.Summaries()["a"]
	if a.LastBuild == nil || a.LastBuild.RowsAdded != 42 || a.LastError != "the failure" || a.LastOutcome != pipeline.OutcomeSkipped {
		t.Fatalf("a after %d skipped runs: %+v (last build %+v)", skipped, a, a.LastBuild)
	}
	if n := len(d.Runs("b")); n > h.Keep {
		t.Fatalf("%d records of b kept, want at most %d", n, h.Keep)
	}
	var merged int
	for _, r := range d.Runs("a") {
		merged = max(merged, r.Repeat)
	}
	if merged < 2 {
		t.Fatalf("skipped runs in a row were not merged: %+v", d.Runs("a"))
	}
}

// TestHistoryConcurrentProcesses: several processes append to one history
// at once while its appends compact it; no run is lost (skipped runs
// merge, so every run stays counted) and no line is torn.
func TestHistoryConcurrentProcesses(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("flock is Unix only")
	}
	path := filepath.Join(t.TempDir(), "h.jsonl")
	const procs, runs = 4, 150
	var wg sync.WaitGroup
	errs := make(chan error, procs+2)
	for i := 0; i < procs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHistoryHelperProcess$")
			cmd.Env = append(os.Environ(), "FLOE_HISTORY_HELPER="+path, "FLOE_HISTORY_NAME=p"+strconv.Itoa(i), "FLOE_HISTORY_RUNS="+strconv.Itoa(runs))
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("process %d: %v\n%s", i, err, out)
			}
		}(i)
	}
	// Readers at the same time, in this process.
	stop := make(chan struct{})
	var rg sync.WaitGroup
	rg.Add(1)
	go func() {
		defer rg.Done()
		h := pipeline.OpenHistory(path)
		for {
			select {
			case <-stop:
				return
			default:
			}
			d, err := h.Read()
			if err != nil {
				errs <- err
				return
			}
			if len(d.Warnings) > 0 {
				errs <- fmt.Errorf("a reader saw %v", d.Warnings)
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	d, err := pipeline.OpenHistory(path).Read()
	if err != nil || len(d.Warnings) > 0 {
		t.Fatal(err, d.Warnings)
	}
	sums := d.Summaries()
	for i := 0; i < procs; i++ {
		if got := sums["p"+strconv.Itoa(i)].Runs; got != runs {
			t.Errorf("process %d: %d runs in the history, want %d", i, got, runs)
		}
	}
}

// TestHistoryHelperProcess appends skipped runs to the history named by
// FLOE_HISTORY_HELPER (run by TestHistoryConcurrentProcesses).
func TestHistoryHelperProcess(t *testing.T) {
	path := os.Getenv("FLOE_HISTORY_HELPER")
	if path == "" {
		t.Skip("a helper of TestHistoryConcurrentProcesses")
	}
	n, _ := strconv.Atoi(os.Getenv("FLOE_HISTORY_RUNS"))
	h := pipeline.OpenHistory(path)
	h.MaxBytes = 2048
	name := os.Getenv("FLOE_HISTORY_NAME")
	for i := 0; i < n; i++ {
		if err := h.Record(rec(name, pipeline.OutcomeSkipped, time.Now())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryBadFiles: a status file of an older floe, a file that is not
// a history, damaged lines and a line cut short: readers warn and go on,
// the next writer moves a foreign file aside and starts a new history,
// and never fails or crashes.
func TestHistoryBadFiles(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, content, warning string
		moved                  bool
	}{
		{"older floe", "{\n  \"version\": 1,\n  \"transforms\": {}\n}\n", "an older floe", true},
		{"older floe, one line", `{"version":1,"transforms":{}}` + "\n", "older floe (version 1)", true},
		{"another format", `{"floe_history":99}` + "\n", "format 99", true},
		{"not json", "garbage\x00\x01", "not a run history", true},
		{"damaged line", `{"floe_history":2}` + "\n" + `{"transform":"a","outcome":"full","start":"2024-05-01T12:00:00Z"}` + "\n" + "{\"transf\x00\n" +
			`{"transform":"a","outcome":"skipped","start":"2024-05-01T12:01:00Z"}` + "\n", "1 unreadable lines skipped", false},
		{"torn last line", `{"floe_history":2}` + "\n" + `{"transform":"a","outcome":"full","start":"2024-05-01T12:00:00Z"}` + "\n" + `{"transform":"a","outc`,
			"last line is incomplete", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := pipeline.OpenHistory(filepath.Join(t.TempDir(), "h.jsonl"))
			if err := os.WriteFile(h.Path(), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := h.Read()
			if err != nil {
				t.Fatalf("reading must not fail: %v", err)
			}
			if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], tc.warning) || !strings.Contains(d.Warnings[0], h.Path()) {
				t.Fatalf("warnings %q, want one naming the file and %q", d.Warnings, tc.warning)
			}
			before := len(d.Records)
			h.Logger = discardLogger()
			if err := h.Record(rec("a", pipeline.OutcomeIncremental, t0.Add(time.Hour))); err != nil {
				t.Fatalf("recording must not fail: %v", err)
			}
			d, err = h.Read()
			if err != nil {
				t.Fatal(err)
			}
			_, oldErr := os.Stat(h.Path() + ".old")
			switch {
			case tc.moved && (oldErr != nil || len(d.Records) != 1 || len(d.Warnings) != 0):
				t.Fatalf("a foreign file is moved aside and a new history started: %v, %+v", oldErr, d)
			case !tc.moved && (!errors.Is(oldErr, os.ErrNotExist) || len(d.Records) != before+1):
				t.Fatalf("a history with damaged lines is kept and appended to: %d records (were %d), %v", len(d.Records), before, d.Warnings)
			}
			if last := d.Records[len(d.Records)-1]; last.Outcome != pipeline.OutcomeIncremental {
				t.Fatalf("the new record is not readable: %+v", d.Records)
			}
		})
	}
	// A history that cannot be read at all is an error naming it.
	if runtime.GOOS != "windows" && os.Getuid() != 0 {
		h := pipeline.OpenHistory(filepath.Join(t.TempDir(), "h.jsonl"))
		if err := os.WriteFile(h.Path(), nil, 0o000); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Read(); !errors.Is(err, pipeline.ErrHistory) {
			t.Fatalf("an unreadable file: %v", err)
		}
	}
}
