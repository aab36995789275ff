//go:build interop

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/rowjson"
)

// FloeError is a floe command that failed: it ran and exited with a non-zero
// status (1 for a failure, 2 for a usage error), or could not be started
// (ExitCode -1). It matches ErrFloe with errors.Is.
type FloeError struct {
	Args     []string // the arguments floe was given
	ExitCode int
	Stderr   string // floe's standard error, trimmed (its message starts with "floe: ")
	Cause    error  // the exec error
}

// Error returns "floe <args>: exit <n>: <stderr>".
func (e *FloeError) Error() string {
	return fmt.Sprintf("floe %s: exit %d: %s", strings.Join(e.Args, " "), e.ExitCode, e.Stderr)
}

// Unwrap makes errors.Is(err, ErrFloe) hold.
func (e *FloeError) Unwrap() error { return ErrFloe }

// RunFloe runs the floe executable bin with args in dir and returns its
// standard output. A failure is a *FloeError carrying the exit status and
// (up to 64 KiB of the end of) standard error.
func RunFloe(ctx context.Context, bin, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	stderr := newTailBuffer(64 << 10)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		return out, &FloeError{Args: args, ExitCode: code, Stderr: stderr.Tail(64 << 10), Cause: err}
	}
	return out, nil
}

// Floe runs the floe executable against one catalog: every command gets the
// Global flags (--warehouse DIR for a warehouse's embedded catalog, or
// --config FILE --catalog NAME) and runs in Dir. Methods are safe for
// concurrent use (each runs its own process), though commits to one table
// from concurrent commands may conflict as they would for any two writers.
type Floe struct {
	// Bin is the floe executable (see FloeBinary).
	Bin string
	// Global are the flags given before every command's own arguments.
	Global []string
	// Dir is the working directory of the commands (input files given by
	// relative paths resolve against it).
	Dir string
}

// Floe returns a runner of the floe binary (built once per test binary by
// FloeBinary) on this warehouse's embedded catalog (--warehouse), working in
// the warehouse directory. It fails tb when the binary does not build.
func (w *Warehouse) Floe(tb testing.TB) *Floe {
	tb.Helper()
	return &Floe{Bin: FloeBinary(tb), Global: []string{"--warehouse", w.Dir}, Dir: w.Dir}
}

// Floe returns a runner of the floe binary on this REST server: it writes a
// catalog configuration file (pyiceberg's format, catalog name, type rest,
// the server's uri) into dir and passes --config and --catalog. It fails tb
// when the binary does not build or the file cannot be written.
func (s *RESTServer) Floe(tb testing.TB, name, dir string) *Floe {
	tb.Helper()
	cfg := filepath.Join(dir, "floe-rest.yaml")
	text := fmt.Sprintf("catalog:\n  %s:\n    type: rest\n    uri: %s\n", name, s.URI)
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		tb.Fatalf("interop: writing %s: %v", cfg, err)
	}
	return &Floe{Bin: FloeBinary(tb), Global: []string{"--config", cfg, "--catalog", name}, Dir: dir}
}

// Run runs floe with the Global flags and args and returns its standard
// output; failures are *FloeError values.
func (f *Floe) Run(ctx context.Context, args ...string) ([]byte, error) {
	return RunFloe(ctx, f.Bin, f.Dir, append(append([]string{}, f.Global...), args...)...)
}

// Rows runs a floe command that prints rows (table scan, changelog) with
// --format jsonl and returns them decoded (rowjson.DecodeLines: columns in
// floe's order; no columns when no rows were printed).
func (f *Floe) Rows(ctx context.Context, args ...string) (*rowjson.Table, error) {
	out, err := f.Run(ctx, append([]string{"--format", "jsonl"}, args...)...)
	if err != nil {
		return nil, err
	}
	t, err := rowjson.DecodeLines(out)
	if err != nil {
		return nil, fmt.Errorf("floe %s: %w", strings.Join(args, " "), err)
	}
	return t, nil
}

// JSON runs a floe command with --format jsonl that prints one JSON object
// (a DML report, a description) and decodes it into v, numbers as json.Number
// when v holds interfaces.
func (f *Floe) JSON(ctx context.Context, v any, args ...string) error {
	out, err := f.Run(ctx, append([]string{"--format", "jsonl"}, args...)...)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: floe %s printed %q: %v", ErrProtocol, strings.Join(args, " "), truncate(string(out), 200), err)
	}
	return nil
}

// FloeReport is what a floe DML command (table append, delete, update,
// overwrite) prints with --format jsonl.
type FloeReport struct {
	Table       string `json:"table"`
	Operation   string `json:"operation"`
	Mode        string `json:"mode"` // "copy-on-write" or "merge-on-read"
	RowsAdded   int64  `json:"rows_added"`
	RowsRemoved int64  `json:"rows_removed"`
	// SnapshotID is the committed snapshot; nil when nothing changed.
	SnapshotID *int64 `json:"snapshot_id"`
	Attempts   int    `json:"attempts"`
}

// DML runs a floe DML command (e.g. "table", "delete", "ns.t", "--where",
// "id = 1") and returns its report.
func (f *Floe) DML(ctx context.Context, args ...string) (*FloeReport, error) {
	var r FloeReport
	if err := f.JSON(ctx, &r, args...); err != nil {
		return nil, err
	}
	return &r, nil
}

// FloeSnapshot is one snapshot as floe's `table snapshots` lists it.
type FloeSnapshot struct {
	SnapshotID  int64             `json:"snapshot_id"`
	ParentID    *int64            `json:"parent_id"`
	Operation   string            `json:"operation"`
	TimestampMs int64             `json:"timestamp_ms"`
	Heads       []string          `json:"heads"`
	Summary     map[string]string `json:"summary"`
}

// Snapshots lists every snapshot of table (on every branch) in commit order.
func (f *Floe) Snapshots(ctx context.Context, table string) ([]FloeSnapshot, error) {
	out, err := f.Run(ctx, "--format", "jsonl", "table", "snapshots", table)
	if err != nil {
		return nil, err
	}
	var snaps []FloeSnapshot
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var s FloeSnapshot
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("%w: floe table snapshots %s: %v", ErrProtocol, table, err)
		}
		snaps = append(snaps, s)
	}
	return snaps, nil
}
