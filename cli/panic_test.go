package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
