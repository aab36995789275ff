package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// StatusFileFor returns the run history file of the pipeline file path: a
// hidden file beside it, .<name>.floe-status.json.
func StatusFileFor(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return filepath.Join(filepath.Dir(path), "."+base+".floe-status.json")
}

// RunRecord is what the history keeps about one transform's runs.
type RunRecord struct {
	LastRun      time.Time     `json:"last_run"`               // start of the last run
	LastOutcome  string        `json:"last_outcome"`           // its Outcome kind
	LastDuration time.Duration `json:"last_duration_ns"`       // its duration
	LastSuccess  time.Time     `json:"last_success,omitzero"`  // start of the last run that did not fail
	LastErrorAt  time.Time     `json:"last_error_at,omitzero"` // start of the last failed (or blocked) run
	LastError    string        `json:"last_error,omitempty"`   // its error
	Runs         int64         `json:"runs"`                   // runs recorded
	Failures     int64         `json:"failures"`               // failed or blocked runs recorded
}

type historyFile struct {
	Version    int                  `json:"version"`
	Transforms map[string]RunRecord `json:"transforms"`
}

// History is the run history of a pipeline in a small JSON file, rewritten
// atomically (a temporary file renamed over it) after each run. It is safe
// for concurrent use within a process; two processes recording into the
// same file at once may lose each other's latest record (never corrupt
// it).
type History struct {
	path string
	mu   sync.Mutex
}

// OpenHistory returns the history kept in path (created on first Record).
func OpenHistory(path string) *History { return &History{path: path} }

// Path is the file the history is kept in.
func (h *History) Path() string { return h.path }

// Load returns the records by transform name; a missing file is an empty
// history. A file that is not a history is an error wrapping ErrHistory.
func (h *History) Load() (map[string]RunRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.load()
}

func (h *History) load() (map[string]RunRecord, error) {
	b, err := os.ReadFile(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]RunRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHistory, err)
	}
	var f historyFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %s: %w (delete the file to start a new history)", ErrHistory, h.path, err)
	}
	if f.Transforms == nil {
		f.Transforms = map[string]RunRecord{}
	}
	return f.Transforms, nil
}

// Record adds the outcome of one run. Errors wrap ErrHistory.
func (h *History) Record(o Outcome) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	all, err := h.load()
	if err != nil {
		return err
	}
	r := all[o.Step]
	r.LastRun, r.LastOutcome, r.LastDuration = o.Started.UTC(), o.Kind, o.Duration
	r.Runs++
	if o.Failed() {
		r.Failures++
		r.LastErrorAt = o.Started.UTC()
		r.LastError = o.Err.Error()
	} else if o.Kind != OutcomeAborted {
		r.LastSuccess = o.Started.UTC()
	}
	all[o.Step] = r
	b, err := json.MarshalIndent(historyFile{Version: 1, Transforms: all}, "", "  ")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHistory, err)
	}
	if err := writeAtomic(h.path, append(b, '\n')); err != nil {
		return fmt.Errorf("%w: %w", ErrHistory, err)
	}
	return nil
}

// writeAtomic writes data to a temporary file beside path, syncs it and
// renames it over path, so readers see the old or the new file whole.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	return nil
}
