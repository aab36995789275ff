// Package testbin serves the end-to-end tests that run a real executable:
// it builds the package under test once per test binary and splits the
// command lines their datadriven scripts hold.
package testbin

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Main builds the main package in the current directory into a temporary
// folder as name, stores its path in *bin, runs the tests and exits with
// their status, removing the folder. A failed build exits 1 with go build's
// output, so no test runs against a stale executable. Call it from TestMain.
func Main(m *testing.M, name string, bin *string) {
	dir, err := os.MkdirTemp("", "floe-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*bin = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", *bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "go build %s: %v\n", name, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// SplitArgs splits a command line into arguments at spaces, tabs and
// newlines; double or single quotes group text (quotes do not nest or
// escape), and a backslash before a newline continues the line.
func SplitArgs(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var q byte
	started := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '"' || c == '\'':
			q, started = c, true
		case c == ' ' || c == '\n' || c == '\t':
			if started {
				out = append(out, cur.String())
				cur.Reset()
				started = false
			}
		case c == '\\' && i+1 < len(s) && s[i+1] == '\n':
			i++
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if q != 0 {
		return nil, errors.New("unterminated quote")
	}
	if started {
		out = append(out, cur.String())
	}
	return out, nil
}
