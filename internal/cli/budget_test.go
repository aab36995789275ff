package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"512", 512}, {"64KiB", 64 << 10}, {"64k", 64 << 10}, {"256MiB", 256 << 20}, {"256 MB", 256 << 20},
		{"1.5GiB", 3 << 29}, {"2G", 2 << 30}, {"1TiB", 1 << 40}, {"10B", 10},
		{"", -1}, {"-1MiB", -1}, {"0", -1}, {"12 parsecs", -1}, {"MiB", -1}, {"1e30GiB", -1},
	} {
		got, err := parseByteSize(tc.in)
		if tc.want < 0 {
			if err == nil {
				t.Errorf("parseByteSize(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseByteSize(%q) = %d, %v, want %d", tc.in, got, err, tc.want)
		}
	}
}

// TestApplyMemoryBudget: floe apply and floe merge with --memory-budget
// far below the changes' size give the same table as without, and a bad
// size is a usage error (exit 2).
func TestApplyMemoryBudget(t *testing.T) {
	dir := t.TempDir()
	var ch strings.Builder
	for i := range 4000 {
		kind := "UPDATE_AFTER"
		switch {
		case i%4 == 3:
			kind = "DELETE"
		case i >= 3000:
			kind = "INSERT"
		}
		fmt.Fprintf(&ch, `{"id": %d, "v": "new-%d-%s", "_change_type": %q}`+"\n", i*2, i, strings.Repeat("x", 30), kind)
	}
	changes := filepath.Join(dir, "changes.jsonl")
	if err := os.WriteFile(changes, []byte(ch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var base strings.Builder
	for i := range 6000 {
		fmt.Fprintf(&base, `{"id": %d, "v": "old-%d"}`+"\n", i, i)
	}
	rowsFile := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(rowsFile, []byte(base.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	wh := filepath.Join(dir, "wh")
	run := func(code int, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if got := Run(t.Context(), append([]string{"--warehouse", wh, "--quiet"}, args...), strings.NewReader(""), &out, &errb); got != code {
			t.Fatalf("floe %v: exit %d, want %d: %s", args, got, code, errb.String())
		}
		return out.String()
	}
	run(0, "namespace", "create", "ns")
	for _, name := range []string{"a", "b", "c", "d"} {
		run(0, "table", "create", "ns."+name, "--schema", "id long not null, v string")
		run(0, "table", "append", "ns."+name, rowsFile)
	}
	run(0, "apply", "ns.a", "--changes", changes, "--key", "id")
	run(0, "apply", "ns.b", "--changes", changes, "--key", "id", "--memory-budget", "64KiB", "--temp-dir", t.TempDir())
	merge := `MERGE INTO ns.%s t USING '%s' s ON t.id = s.id
		WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v
		WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT (id, v) VALUES (s.id, s.v)`
	run(0, "merge", fmt.Sprintf(merge, "c", changes))
	run(0, "merge", fmt.Sprintf(merge, "d", changes), "--memory-budget", "64KiB")
	want := run(0, "table", "scan", "ns.a", "--format", "csv")
	if n := strings.Count(want, "\n"); n != 6000-750+750+1 {
		t.Fatalf("ns.a has %d lines after apply", n)
	}
	for _, name := range []string{"b", "c", "d"} {
		if got := run(0, "table", "scan", "ns."+name, "--format", "csv"); sortedLines(got) != sortedLines(want) {
			t.Errorf("ns.%s differs from ns.a", name)
		}
	}
	run(2, "apply", "ns.a", "--changes", changes, "--key", "id", "--memory-budget", "lots")
}

func sortedLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
