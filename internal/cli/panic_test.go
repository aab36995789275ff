package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/internal/safe"
)

// TestPanicBecomesError: a panic escaping a command is reported as an
// internal error naming the command line, without a stack dump unless
// FLOE_DEBUG=1, with exit status 70.
func TestPanicBecomesError(t *testing.T) {
	panicky := func() *cobra.Command {
		root := &cobra.Command{Use: "floe", SilenceErrors: true, SilenceUsage: true}
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error {
			var s []int
			_ = s[len(os.Args)+1] // an index out of range: a runtime panic, as a bug would make
			return nil
		}})
		return root
	}
	for _, debug := range []string{"", "1"} {
		t.Setenv(EnvDebug, debug)
		var stderr bytes.Buffer
		code := execute(context.Background(), panicky(), "floe", []string{"boom", "ns.t", "id = 1"}, &stderr)
		out := stderr.String()
		if code != ExitInternal {
			t.Fatalf("exit %d, want %d", code, ExitInternal)
		}
		for _, want := range []string{"internal error", "index out of range", `floe boom ns.t "id = 1"`} {
			if !strings.Contains(out, want) {
				t.Errorf("FLOE_DEBUG=%q: %q lacks %q", debug, out, want)
			}
		}
		hasStack := strings.Contains(out, "goroutine") || strings.Contains(out, "panic.go")
		if hasStack != (debug == "1") {
			t.Errorf("FLOE_DEBUG=%q: stack trace printed %t:\n%s", debug, hasStack, out)
		}
	}
}

func TestCommandLine(t *testing.T) {
	got := commandLine("floe", []string{"apply", "ns.t", "--where", "a = 'x'", ""})
	want := `floe apply ns.t --where "a = 'x'" ""`
	if got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestGoroutinePanicBecomesError: a panic in a goroutine a command starts
// (recovered by internal/safe into an error) is reported like one on the
// command's own goroutine: an internal error naming the command line,
// exit status 70, the stack only with FLOE_DEBUG=1.
func TestGoroutinePanicBecomesError(t *testing.T) {
	for _, debug := range []string{"", "1"} {
		t.Setenv(EnvDebug, debug)
		root := &cobra.Command{Use: "floe", SilenceErrors: true, SilenceUsage: true}
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(cmd *cobra.Command, _ []string) error {
			g, _ := safe.WithContext(cmd.Context())
			g.Go(func() error {
				var m map[string]int
				//lint:ignore SA5000 the test panics on purpose
				m["k"]++ // a bug in a worker goroutine
				return nil
			})
			return g.Wait()
		}})
		var stderr bytes.Buffer
		code := execute(context.Background(), root, "floe", []string{"boom", "ns.t"}, &stderr)
		out := stderr.String()
		if code != ExitInternal {
			t.Fatalf("exit %d, want %d:\n%s", code, ExitInternal, out)
		}
		for _, want := range []string{"floe: internal error: assignment to entry in nil map", "floe: command: floe boom ns.t"} {
			if !strings.Contains(out, want) {
				t.Errorf("FLOE_DEBUG=%q: %q lacks %q", debug, out, want)
			}
		}
		if hasStack := strings.Contains(out, "goroutine "); hasStack != (debug == "1") {
			t.Errorf("FLOE_DEBUG=%q: stack trace printed %t:\n%s", debug, hasStack, out)
		}
	}
}
