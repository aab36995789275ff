package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileExpressions: expressions past the parser's limits (issue 12,
// item 3: 200k nested parentheses were a fatal stack overflow with a full
// runtime trace, in `floe run` and `floe status` alike) fail with a clear
// error naming the limit, and no trace reaches the user.
func TestHostileExpressions(t *testing.T) {
	work := t.TempDir()
	deep := strings.Repeat("(", 200000) + "id = 1" + strings.Repeat(")", 200000)
	nots := strings.Repeat("NOT ", 30000) + "id = 1"
	// NB: one argument is at most 128 KiB on Linux.
	deepArg := strings.Repeat("(", 30000) + "id = 1" + strings.Repeat(")", 30000)
	yaml := func(filter string) string {
		return "transforms:\n  - name: f\n    type: filter\n    source: s.a\n    destination: s.b\n    filter: \"" + filter + "\"\n"
	}
	for name, text := range map[string]string{"deep.yaml": yaml(deep), "nots.yaml": yaml(nots)} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runFloe(t, work, []string{"namespace", "create", "s"})
	runFloe(t, work, []string{"table", "create", "s.a", "--schema", "id long"})
	noTrace := func(t *testing.T, out string) {
		t.Helper()
		for _, bad := range []string{"goroutine ", "runtime.", "panic", "stack overflow"} {
			if strings.Contains(out, bad) {
				t.Fatalf("output holds %q:\n%.2000s", bad, out)
			}
		}
	}
	for _, args := range [][]string{
		{"status", "deep.yaml"},
		{"run", "deep.yaml", "--once"},
		{"table", "scan", "s.a", "--where", deepArg},
		{"table", "delete", "s.a", "--where", deepArg},
	} {
		out := runFloe(t, work, args)
		noTrace(t, out)
		if !strings.HasPrefix(out, "exit 1") && !strings.HasPrefix(out, "exit 2") || !strings.Contains(out, "nested more than 1000 levels") {
			t.Errorf("floe %s: want a failure naming the nesting limit, got\n%.600s", args[0], out)
		}
	}
	// A long chain of NOT is within the limits and is accepted quickly.
	out := runFloe(t, work, []string{"run", "nots.yaml", "--once"})
	noTrace(t, out)
	if !strings.HasPrefix(out, "exit 0") {
		t.Errorf("floe run nots.yaml: %.600s", out)
	}
}

// TestInvalidUTF8Names: table and namespace names that are not valid UTF-8
// are refused (issue 12, item 10), and nothing is created.
func TestInvalidUTF8Names(t *testing.T) {
	work := t.TempDir()
	runFloe(t, work, []string{"namespace", "create", "s"})
	for _, args := range [][]string{
		{"table", "create", "s.bad\xff", "--schema", "id long"},
		{"namespace", "create", "n\xc3"},
		{"table", "create", "s.a\nb", "--schema", "id long"},
	} {
		out := runFloe(t, work, args)
		if !strings.HasPrefix(out, "exit 2") || !strings.Contains(out, "invalid name") {
			t.Errorf("floe %q: want a usage error, got\n%s", args, out)
		}
	}
	out := runFloe(t, work, []string{"table", "list", "s"})
	if strings.Contains(out, "bad") {
		t.Errorf("a table was created:\n%s", out)
	}
}
