//go:build interop

// Package interop is floe's interoperability harness: it runs the reference
// engines (Apache Spark with Iceberg's Spark runtime and Delta Lake, PyIceberg,
// delta-rs, and Apache Iceberg's REST catalog server) beside floe and
// iceberg-go, so tests can prove that other engines read what floe writes
// identically and that floe's results equal theirs.
//
// The package is built only with the build tag "interop"
// (go test -tags interop ./interop/...), so the main go test ./... stays fast
// and engine-free. The engines are installed, pinned, by .ci/engines.sh into
// $HOME/.cache/floe (or $FLOE_CACHE); when they are absent every test that
// asks for them skips with SkipMessage, unless FLOE_INTEROP_REQUIRED is set
// (as in CI), in which case it fails.
//
// Engines are long-lived processes speaking JSON lines: one Spark worker and
// one Python (PyIceberg, delta-rs) worker per test binary, started on first use
// by SharedSpark and SharedPy and stopped by Main. Rows come back in floe's
// JSON conventions (package internal/rowjson) and are compared as multisets.
//
// A test binary using the shared engines declares
//
//	func TestMain(m *testing.M) { os.Exit(interop.Main(m)) }
package interop
