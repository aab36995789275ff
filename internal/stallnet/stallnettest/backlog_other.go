//go:build !linux

package stallnettest

import "testing"

// FullBacklog skips the test: it relies on Linux dropping the SYN of a
// connection to a listener whose accept backlog is full.
func FullBacklog(t testing.TB) string {
	t.Helper()
	t.Skip("the connect timeout test needs Linux (a listener with a full backlog)")
	return ""
}
