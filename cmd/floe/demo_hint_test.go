package main_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/testbin"
)

// TestDemoKeepHint runs `floe demo --keep` and then every command its
// closing hint suggests: a documented example that fails is a bug.
func TestDemoKeepHint(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo")
	}
	dir := filepath.Join(t.TempDir(), "demo")
	out, err := exec.Command(floeBin, "demo", "--dir", dir, "--keep").CombinedOutput()
	if err != nil {
		t.Fatalf("floe demo --keep: %v\n%s", err, out)
	}
	var hints int
	for _, line := range strings.Split(string(out), "\n") {
		// The hint's commands are indented: "  floe --warehouse DIR ...".
		if !strings.HasPrefix(line, "  floe ") {
			continue
		}
		line = strings.TrimSpace(line)
		args, err := testbin.SplitArgs(strings.TrimPrefix(line, "floe "))
		if err != nil {
			t.Fatal(err)
		}
		hints++
		if out, err := exec.Command(floeBin, args...).CombinedOutput(); err != nil {
			t.Errorf("the demo's hint %q fails: %v\n%s", line, err, out)
		}
	}
	if hints == 0 {
		t.Fatalf("floe demo --keep printed no hint:\n%s", out)
	}
}
