package main_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestApplyKilledAtRandomPoints kills `floe apply` with SIGKILL at random
// moments: the table is always either as before the apply or as after it,
// never in between, and never holds duplicate keys.
func TestApplyKilledAtRandomPoints(t *testing.T) {
	if testing.Short() {
		t.Skip("kills real processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, props := range [][]string{
		{"--format-version", "2"},
		{"--format-version", "3", "--property", "write.merge.mode=merge-on-read"},
	} {
		t.Run(strings.Join(props, " "), func(t *testing.T) {
			work := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(floeBin, append([]string{"--warehouse", "wh", "--quiet"}, args...)...)
				cmd.Dir = work
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("floe %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			run("namespace", "create", "ns")
			run(append([]string{"table", "create", "ns.t", "--schema", "id long not null, v string", "--partition-by", "bucket(8, id)"}, props...)...)
			var b strings.Builder
			b.WriteString("id,v\n")
			for i := 0; i < 20000; i++ {
				fmt.Fprintf(&b, "%d,v%d\n", i, i)
			}
			os.WriteFile(filepath.Join(work, "rows.csv"), []byte(b.String()), 0o644)
			run("table", "append", "ns.t", "rows.csv")
			b.Reset()
			for i := 0; i < 20000; i += 3 {
				kind := "UPDATE_AFTER"
				if i%2 == 0 {
					kind = "DELETE"
				}
				fmt.Fprintf(&b, `{"id":%d,"v":"new%d","_change_type":"%s"}`+"\n", i, i, kind)
			}
			for i := 20000; i < 21000; i++ {
				fmt.Fprintf(&b, `{"id":%d,"v":"ins%d","_change_type":"INSERT"}`+"\n", i, i)
			}
			os.WriteFile(filepath.Join(work, "changes.jsonl"), []byte(b.String()), 0o644)
			state := func() string {
				out := run("table", "scan", "ns.t", "--format", "csv")
				lines := strings.Split(strings.TrimSpace(out), "\n")[1:]
				sort.Strings(lines)
				seen := map[string]bool{}
				for _, l := range lines {
					id := strings.SplitN(l, ",", 2)[0]
					if seen[id] {
						t.Fatalf("duplicate key %s", id)
					}
					seen[id] = true
				}
				return strings.Join(lines, "\n")
			}
			before := state()
			after := ""
			for i := 0; i < 6; i++ {
				cmd := exec.Command(floeBin, "--warehouse", "wh", "--quiet", "apply", "ns.t", "--changes", "changes.jsonl", "--key", "id")
				cmd.Dir = work
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				delay := time.Duration(rng.IntN(1500)) * time.Millisecond
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					if err != nil {
						t.Fatalf("apply failed: %v", err)
					}
				case <-time.After(delay):
					cmd.Process.Signal(syscall.SIGKILL)
					<-done
				}
				got := state()
				switch {
				case got == before:
				case after == "":
					after = got
				case got != after:
					t.Fatalf("after a kill at %s the table is neither before nor after the apply", delay)
				}
			}
			run("apply", "ns.t", "--changes", "changes.jsonl", "--key", "id")
			final := state()
			if after != "" && final != after {
				t.Fatal("the completed apply differs from a state seen after a killed one")
			}
			if final == before {
				t.Fatal("the apply changed nothing")
			}
			if n := strings.Count(final, "\n") + 1; n != 20000-3334+1000 {
				t.Fatalf("%d rows after the apply", n)
			}
		})
	}
}
