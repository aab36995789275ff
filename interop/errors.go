//go:build interop

package interop

import "errors"

var (
	// ErrEnginesMissing reports that no installation matching the repository's
	// pins was found (run .ci/engines.sh).
	ErrEnginesMissing = errors.New("interop: engines not installed")
	// ErrEngine reports a failure the engine itself returned (a Spark
	// AnalysisException, a PyIceberg error...); the message carries the
	// engine's exception type and text.
	ErrEngine = errors.New("interop: engine error")
	// ErrWorkerExited reports that an engine process died or was stopped; the
	// message carries the tail of its stderr.
	ErrWorkerExited = errors.New("interop: engine process exited")
	// ErrProtocol reports an answer that breaks the JSON-lines protocol.
	ErrProtocol = errors.New("interop: protocol error")
	// ErrServerStart reports a server (the REST catalog) that did not become
	// ready.
	ErrServerStart = errors.New("interop: server did not start")
	// ErrFloe reports a floe command that exited with a non-zero status; the
	// *FloeError carries the status and floe's stderr.
	ErrFloe = errors.New("interop: floe failed")
)
