package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCompletionRegistered: every command whose Use names a table or a
// namespace completes it, and argKinds names only commands that exist
// (a renamed command would silently lose its completion otherwise).
func TestCompletionRegistered(t *testing.T) {
	root := NewCommand(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	paths := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), "floe"))
		paths[path] = true
		fields := strings.Fields(c.Use)
		names := slices.ContainsFunc(fields[min(1, len(fields)):], func(f string) bool {
			f = strings.Trim(f, "[]")
			return f == "NS.T" || f == "NS"
		})
		if !strings.HasPrefix(c.Use, "merge ") && names && c.ValidArgsFunction == nil {
			t.Errorf("%s (%q) has no completion", c.CommandPath(), c.Use)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for path := range argKinds {
		if !paths[path] {
			t.Errorf("argKinds names %q, which is no command", path)
		}
	}
}

func TestCommandArgKinds(t *testing.T) {
	for _, tc := range []struct {
		use      string
		kinds    []argKind
		variadic bool
	}{
		{"describe NS.T", []argKind{argTable}, false},
		{"drop NS [--cascade]", []argKind{argNamespace}, false},
		{"append NS.T FILE...", []argKind{argTable, argFile}, true},
		{"set NS.T KEY=VALUE...", []argKind{argTable, argOther}, true},
		{"expire-snapshots NS.T [--older-than T] [--retain-last N]", []argKind{argTable}, false},
		{"sync PATH NS.T --key COL[,COL...]", []argKind{argFile, argTable}, false},
		{`merge "MERGE INTO NS.T USING ..."`, nil, false},
		{"version", nil, false},
	} {
		kinds, variadic := commandArgKinds(&cobra.Command{Use: tc.use})
		if !slices.Equal(kinds, tc.kinds) || variadic != tc.variadic {
			t.Errorf("%q: kinds %v variadic %v, want %v %v", tc.use, kinds, variadic, tc.kinds, tc.variadic)
		}
	}
}
