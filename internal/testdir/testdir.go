// Package testdir locates the shared test fixtures that live beside the
// repository (../shared/testdata), so that tests read data nobody on the team
// wrote without copying it into the repository.
package testdir

import (
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the directory holding go.mod, searching upwards from the
// working directory of the test. It returns "" when none is found.
func ModuleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Shared returns the path of ../shared/testdata/<sub> relative to the module
// root. When it is absent the test is skipped with a message saying so, so a
// clone of the repository alone still passes its tests.
func Shared(tb testing.TB, sub ...string) string {
	tb.Helper()
	root := ModuleRoot()
	if root == "" {
		tb.Skip("shared testdata: module root not found")
	}
	p := filepath.Join(append([]string{root, "..", "shared", "testdata"}, sub...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared testdata %s is absent (expected beside the repository at ../shared/testdata); skipping", p)
	}
	return p
}
