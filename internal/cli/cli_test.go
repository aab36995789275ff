package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEveryCommandHasHelpAndExample: --help on every command shows an
// example.
func TestEveryCommandHasHelpAndExample(t *testing.T) {
	root := NewCommand(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Name() != "completion" && !strings.HasPrefix(c.CommandPath(), "floe completion") {
			if c.Short == "" {
				t.Errorf("%s has no short help", c.CommandPath())
			}
			if c.Example == "" {
				t.Errorf("%s has no example", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"version"}, 0},
		{[]string{"nope"}, 2},
		{[]string{"table", "scan"}, 2},
		{[]string{"--format", "xml", "namespace", "list", "--warehouse", t.TempDir()}, 2},
		{[]string{"table", "scan", "ns.t", "--warehouse", t.TempDir()}, 1},
	} {
		var out, errb bytes.Buffer
		if got := Run(t.Context(), tc.args, strings.NewReader(""), &out, &errb); got != tc.code {
			t.Errorf("floe %v: exit %d, want %d (%s)", tc.args, got, tc.code, errb.String())
		}
	}
}
