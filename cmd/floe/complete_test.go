package main_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompletionCreatesNothing: where no catalog exists, completing a
// table or namespace offers nothing, prints nothing of floe's own, and
// leaves no file or folder behind, whichever way the catalog is named.
// (testdata/complete shows what is offered where one exists.)
func TestCompletionCreatesNothing(t *testing.T) {
	lake := "catalog:\n  lake:\n    type: sql\n    uri: sqlite:///lake.db\n    warehouse: file:///nowhere\n"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"default warehouse", nil, []string{"table", "describe", ""}},
		{"--warehouse", nil, []string{"--warehouse", "a/b", "table", "describe", "sh"}},
		{"FLOE_WAREHOUSE", []string{"FLOE_WAREHOUSE=wh"}, []string{"namespace", "drop", ""}},
		{"named SQLite catalog", nil, []string{"--config", "lake.yaml", "--catalog", "lake", "table", "describe", "shop."}},
		{"PyIceberg variables", []string{"PYICEBERG_CATALOG__LAKE__URI=sqlite:///env.db", "PYICEBERG_CATALOG__LAKE__TYPE=sql"},
			[]string{"--catalog", "lake", "table", "scan", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work, home := t.TempDir(), t.TempDir()
			if err := os.WriteFile(filepath.Join(work, "lake.yaml"), []byte(lake), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(floeBin, append([]string{"__complete"}, tc.args...)...)
			cmd.Dir = work
			var env []string
			for _, e := range os.Environ() {
				if !strings.HasPrefix(e, "PYICEBERG_") && !strings.HasPrefix(e, "FLOE_") && !strings.HasPrefix(e, "HOME=") {
					env = append(env, e)
				}
			}
			cmd.Env = append(append(env, "HOME="+home), tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("floe %v: %v\n%s", cmd.Args, err, stderr.String())
			}
			if got := stdout.String(); got != ":4\n" {
				t.Errorf("offered %q, want nothing (:4)", got)
			}
			if got := stderr.String(); got != "Completion ended with directive: ShellCompDirectiveNoFileComp\n" {
				t.Errorf("stderr %q: want only cobra's own line", got)
			}
			for dir, want := range map[string][]string{work: {"lake.yaml"}, home: nil} {
				var got []string
				filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
					if p != dir {
						rel, _ := filepath.Rel(dir, p)
						got = append(got, rel)
					}
					return err
				})
				if strings.Join(got, ",") != strings.Join(want, ",") {
					t.Errorf("%s holds %v after completion, want %v", dir, got, want)
				}
			}
		})
	}
}

// TestCompletionScripts: floe completion writes a script for each shell
// cobra supports, each calling back into floe __complete.
func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		out, err := exec.Command(floeBin, "completion", shell).Output()
		if err != nil {
			t.Fatalf("floe completion %s: %v", shell, err)
		}
		if !bytes.Contains(out, []byte("__complete")) {
			t.Errorf("floe completion %s: no call to __complete in %d bytes", shell, len(out))
		}
	}
}
