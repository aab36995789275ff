package pipeline

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// StatusFileFor returns the run history file of the pipeline file path: a
// hidden file beside it, .<name>.floe-history.jsonl.
func StatusFileFor(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	return filepath.Join(filepath.Dir(path), "."+base+".floe-history.jsonl")
}

// HistoryFormat is the format of run history files this floe writes: JSON
// Lines, a header line {"floe_history": 2, ...} and one RunRecord per
// line, oldest first.
const HistoryFormat = 2

// Bounds of a run history.
const (
	// DefaultHistoryKeep is how many records per transform a compaction
	// keeps (runs of skipped builds in a row count as one record).
	DefaultHistoryKeep = 200
	// DefaultHistoryMaxBytes is the size past which an append compacts
	// the file.
	DefaultHistoryMaxBytes = 4 << 20
)

// RunRecord is one run of a transform as the history keeps it.
type RunRecord struct {
	Transform string    `json:"transform"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Outcome   string    `json:"outcome"` // an Outcome* kind
	// Repeat, when above 1, says the record stands for that many skipped
	// runs in a row (Start of the first, End of the last), merged by a
	// compaction.
	Repeat int    `json:"repeat,omitempty"`
	Reason string `json:"reason,omitempty"` // why a build was full
	Error  string `json:"error,omitempty"`
	Engine string `json:"engine,omitempty"`
	// EngineReason says why the engine was chosen (auto, or a build kept
	// local); SparkRemote, SparkSession and SparkApp name where a Spark
	// build ran.
	EngineReason string `json:"engine_reason,omitempty"`
	SparkRemote  string `json:"spark_remote,omitempty"`
	SparkSession string `json:"spark_session,omitempty"`
	SparkApp     string `json:"spark_app,omitempty"`
	RowsAdded    int64  `json:"rows_added"`
	RowsRemoved  int64  `json:"rows_removed"`
	BytesRead    int64  `json:"bytes_read"`
	BytesWritten int64  `json:"bytes_written"`
	// CommitAttempts counts the commit attempts of the run's outputs (more
	// than one per output: it lost races with other writers and retried).
	CommitAttempts int         `json:"commit_attempts,omitempty"`
	Inputs         []RunInput  `json:"inputs,omitempty"`
	Outputs        []RunOutput `json:"outputs,omitempty"`
	// LagBefore and LagAfter are the transform's end-to-end lag in seconds
	// at the start and at the end of the run (absent when not measured).
	LagBefore *float64 `json:"lag_before_s,omitempty"`
	LagAfter  *float64 `json:"lag_after_s,omitempty"`
	// Definition is the Step.Definition the run ran.
	Definition string `json:"definition,omitempty"`
	PID        int    `json:"pid,omitempty"`
}

// RunInput is the range of one input a run read.
type RunInput struct {
	Name      string `json:"name"`
	Table     string `json:"table"`
	From      string `json:"from,omitempty"`
	To        string `json:"to,omitempty"`
	Snapshots int    `json:"snapshots"`
}

// RunOutput is what a run committed to one output.
type RunOutput struct {
	Table       string `json:"table"`
	Committed   bool   `json:"committed"`
	SnapshotID  int64  `json:"snapshot_id,omitempty"`
	RowsAdded   int64  `json:"rows_added"`
	RowsRemoved int64  `json:"rows_removed"`
	Attempts    int    `json:"attempts,omitempty"`
	AnswerLost  bool   `json:"answer_lost,omitempty"`
}

// Failed reports whether the run failed or was blocked.
func (r RunRecord) Failed() bool { return r.Outcome == OutcomeError || r.Outcome == OutcomeBlocked }

// Built reports whether the run was a build (incremental or full), as
// opposed to a skipped, failed, blocked, aborted or superseded run.
func (r RunRecord) Built() bool { return r.Outcome == OutcomeIncremental || r.Outcome == OutcomeFull }

// runs is how many runs the record stands for.
func (r RunRecord) runs() int64 { return int64(max(r.Repeat, 1)) }

// RunSummary is what the history says about one transform.
type RunSummary struct {
	LastRun      time.Time     // start of the last run
	LastOutcome  string        // its Outcome kind
	LastDuration time.Duration // its duration
	LastSuccess  time.Time     // start of the last run that did not fail
	LastErrorAt  time.Time     // start of the last failed (or blocked) run
	LastError    string        // its error
	Runs         int64         // runs in the kept history
	Failures     int64         // failed or blocked runs in the kept history
	// LastBuild is the last run that built (incremental or full): skipped
	// runs after it never hide it. nil when none is kept.
	LastBuild *RunRecord
	// Definition is the definition the last run ran.
	Definition string
}

// HistoryData is a run history as read from its file.
type HistoryData struct {
	Path    string
	Records []RunRecord // oldest first
	// Warnings say what was wrong with the file: unreadable lines were
	// skipped, or the file is not a history of this floe and was ignored.
	Warnings []string
}

// Summaries summarizes the records by transform. It may be called on a
// nil *HistoryData (no history).
func (d *HistoryData) Summaries() map[string]RunSummary {
	out := map[string]RunSummary{}
	if d == nil {
		return out
	}
	for i := range d.Records {
		r := &d.Records[i]
		s := out[r.Transform]
		s.LastRun, s.LastOutcome, s.LastDuration, s.Definition = r.Start, r.Outcome, r.End.Sub(r.Start), r.Definition
		if r.Repeat > 1 {
			s.LastDuration = 0
		}
		s.Runs += r.runs()
		switch {
		case r.Failed():
			s.Failures += r.runs()
			s.LastErrorAt, s.LastError = r.Start, r.Error
		case r.Outcome != OutcomeAborted:
			s.LastSuccess = r.Start
		}
		if r.Built() {
			s.LastBuild = r
		}
		out[r.Transform] = s
	}
	return out
}

// Runs returns the records of one transform, oldest first.
func (d *HistoryData) Runs(transform string) []RunRecord {
	if d == nil {
		return nil
	}
	var out []RunRecord
	for _, r := range d.Records {
		if r.Transform == transform {
			out = append(out, r)
		}
	}
	return out
}

// Recent returns the last n records of any transform, newest first.
func (d *HistoryData) Recent(n int) []RunRecord {
	if d == nil {
		return nil
	}
	var out []RunRecord
	for i := len(d.Records) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, d.Records[i])
	}
	return out
}

// History is the run history of a pipeline: a JSON Lines file that every
// floe process running or reading the pipeline shares. Each run appends
// one line with a single write while holding an exclusive lock on the
// file (flock), and readers take a shared lock, so several floe run and
// floe status processes may use one file at once; the process whose
// append takes the file past MaxBytes compacts it (under the same lock,
// into a temporary file renamed over it; a process that waited for the
// lock on the replaced file notices and appends to the new one). A
// compaction keeps, per transform, the last Keep records, merges skipped
// runs in a row into one record, and always keeps the last build and the
// last failure. A line cut short by a crash is skipped with a warning; a
// file of another format is ignored by readers and moved aside (to
// <file>.old) by the next writer. Without flock (not Unix), appends still
// happen in one write, but compactions may lose a concurrent append.
type History struct {
	path string
	// Keep is how many records per transform a compaction keeps (0 =
	// DefaultHistoryKeep).
	Keep int
	// MaxBytes is the size past which an append compacts the file (0 =
	// DefaultHistoryMaxBytes).
	MaxBytes int64
	// Pipeline names the pipeline in the file's header.
	Pipeline string
	// Logger receives warnings about the file (nil = slog.Default()).
	Logger *slog.Logger
	mu     sync.Mutex
}

// OpenHistory returns the history kept in path (created on first Record).
func OpenHistory(path string) *History { return &History{path: path} }

// Path is the file the history is kept in.
func (h *History) Path() string { return h.path }

func (h *History) keep() int {
	if h.Keep > 0 {
		return h.Keep
	}
	return DefaultHistoryKeep
}

func (h *History) maxBytes() int64 {
	if h.MaxBytes > 0 {
		return h.MaxBytes
	}
	return DefaultHistoryMaxBytes
}

func (h *History) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.Default()
}

// historyHeader is the first line of a history file.
type historyHeader struct {
	Format   int       `json:"floe_history"`
	Pipeline string    `json:"pipeline,omitempty"`
	Created  time.Time `json:"created"`
}

// Read reads the history. A missing file is an empty history; unreadable
// lines and a file of another format are warnings (in the result), not
// errors. The error wraps ErrHistory and is for a file that cannot be
// read at all (permissions, I/O).
func (h *History) Read() (*HistoryData, error) {
	d := &HistoryData{Path: h.path}
	f, err := os.Open(h.path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHistory, err)
	}
	defer f.Close()
	if err := lockFile(f, false); err != nil {
		return nil, fmt.Errorf("%w: lock %s: %w", ErrHistory, h.path, err)
	}
	b, err := io.ReadAll(f)
	_ = unlockFile(f)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrHistory, h.path, err)
	}
	d.Records, d.Warnings = parseHistory(h.path, b)
	return d, nil
}

// Load returns the summaries of Read by transform name.
func (h *History) Load() (map[string]RunSummary, error) {
	d, err := h.Read()
	if err != nil {
		return nil, err
	}
	return d.Summaries(), nil
}

// parseHistory parses a history file's contents.
func parseHistory(path string, b []byte) ([]RunRecord, []string) {
	if len(b) == 0 {
		return nil, nil
	}
	first, rest, _ := bytes.Cut(b, []byte("\n"))
	if why := foreignHeader(first); why != "" {
		return nil, []string{fmt.Sprintf("%s %s: ignored; the next run moves it to %s.old and starts a new history", path, why, filepath.Base(path))}
	}
	var recs []RunRecord
	bad, torn := 0, false
	lines := bytes.Split(rest, []byte("\n"))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r RunRecord
		if err := json.Unmarshal(line, &r); err != nil || r.Transform == "" {
			if i == len(lines)-1 {
				torn = true
			} else {
				bad++
			}
			continue
		}
		recs = append(recs, r)
	}
	var warn []string
	if bad > 0 {
		warn = append(warn, fmt.Sprintf("%s: %d unreadable lines skipped (damaged file?)", path, bad))
	}
	if torn {
		warn = append(warn, fmt.Sprintf("%s: its last line is incomplete (a run stopped while writing it) and was skipped", path))
	}
	return recs, warn
}

// foreignHeader says why a first line is not the header of a history of
// this format ("" when it is).
func foreignHeader(line []byte) string {
	var hdr struct {
		Format  *int `json:"floe_history"`
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(line, &hdr); err != nil {
		if bytes.Equal(bytes.TrimSpace(line), []byte("{")) {
			return "is not a run history of this floe (an older floe's status file?)"
		}
		return "is not a run history of floe (its first line is not a history header)"
	}
	switch {
	case hdr.Format == nil && hdr.Version != nil:
		return fmt.Sprintf("is a status file of an older floe (version %d)", *hdr.Version)
	case hdr.Format == nil:
		return "is not a run history of floe (no floe_history in its header)"
	case *hdr.Format != HistoryFormat:
		return fmt.Sprintf("is a run history of format %d; this floe reads format %d", *hdr.Format, HistoryFormat)
	}
	return ""
}

// Record appends a run to the history. Errors wrap ErrHistory.
func (h *History) Record(rec RunRecord) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if rec.PID == 0 {
		rec.PID = os.Getpid()
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHistory, err)
	}
	line = append(line, '\n')
	unlock, err := h.writerLock()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHistory, h.path, err)
	}
	defer unlock()
	for attempt := 0; attempt < 20; attempt++ {
		done, err := h.appendOnce(line)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrHistory, h.path, err)
		}
		if done {
			return nil
		}
	}
	return fmt.Errorf("%w: %s: the file kept being replaced while appending", ErrHistory, h.path)
}

// writerLock takes the exclusive lock the writers of the history share,
// on a file beside it (the history's name plus .lock) that is never
// replaced. Without it, writers waiting for the history's own lock could
// find it replaced by a compaction each time they got the lock, and give
// up (seen with four processes appending at once). The history's own lock
// still keeps readers from seeing half-written lines.
func (h *History) writerLock() (func(), error) {
	if err := os.MkdirAll(filepath.Dir(h.path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(h.path+".lock", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f, true); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		_ = unlockFile(f)
		f.Close()
	}, nil
}

// appendOnce appends line under the file's lock; done is false when the
// file was replaced (compacted or moved aside) before the lock was
// taken, and the append must be tried again.
func (h *History) appendOnce(line []byte) (done bool, err error) {
	if err := os.MkdirAll(filepath.Dir(h.path), 0o755); err != nil {
		return false, err
	}
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := lockFile(f, true); err != nil {
		return false, err
	}
	defer unlockFile(f)
	if same, err := samePath(f, h.path); err != nil || !same {
		return false, err
	}
	st, err := f.Stat()
	if err != nil {
		return false, err
	}
	var buf []byte
	if st.Size() == 0 {
		hdr, _ := json.Marshal(historyHeader{Format: HistoryFormat, Pipeline: h.Pipeline, Created: time.Now().UTC()})
		buf = append(hdr, '\n')
	} else {
		head, last, err := edges(h.path, st.Size())
		if err != nil {
			return false, err
		}
		if why := foreignHeader(head); why != "" {
			old := h.path + ".old"
			if err := os.Rename(h.path, old); err != nil {
				return false, err
			}
			h.logger().Warn("the run history file "+why+": moved aside, starting a new history", "file", h.path, "moved_to", old)
			return false, nil
		}
		if last != '\n' {
			buf = append(buf, '\n') // end a line cut short by a crash
		}
	}
	buf = append(buf, line...)
	if _, err := f.Write(buf); err != nil {
		return false, err
	}
	if st.Size()+int64(len(buf)) > h.maxBytes() {
		if err := h.compactLocked(); err != nil {
			h.logger().Warn("cannot compact the run history", "file", h.path, "error", err.Error())
		}
	}
	return true, nil
}

// samePath reports whether f is still the file at path.
func samePath(f *os.File, path string) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// edges returns the first line (up to 64 KiB) and the last byte of the
// file at path.
func edges(path string, size int64) (first []byte, last byte, err error) {
	r, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	br := bufio.NewReaderSize(io.LimitReader(r, 64<<10), 4096)
	first, err = br.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	first = bytes.TrimSuffix(first, []byte("\n"))
	b := make([]byte, 1)
	if _, err := r.ReadAt(b, size-1); err != nil {
		return nil, 0, err
	}
	return first, b[0], nil
}

// Compact rewrites the history within its bounds now.
func (h *History) Compact() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	unlock, err := h.writerLock()
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHistory, h.path, err)
	}
	defer unlock()
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHistory, err)
	}
	defer f.Close()
	if err := lockFile(f, true); err != nil {
		return fmt.Errorf("%w: %w", ErrHistory, err)
	}
	defer unlockFile(f)
	if err := h.compactLocked(); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrHistory, h.path, err)
	}
	return nil
}

// compactLocked rewrites the file with compacted records; the caller
// holds the exclusive lock.
func (h *History) compactLocked() error {
	b, err := os.ReadFile(h.path)
	if err != nil {
		return err
	}
	recs, _ := parseHistory(h.path, b)
	keep := h.keep()
	var out []byte
	for {
		kept := compactRecords(recs, keep)
		hdr, _ := json.Marshal(historyHeader{Format: HistoryFormat, Pipeline: h.Pipeline, Created: time.Now().UTC()})
		out = append(hdr[:len(hdr):len(hdr)], '\n')
		for _, r := range kept {
			line, err := json.Marshal(r)
			if err != nil {
				return err
			}
			out = append(append(out, line...), '\n')
		}
		if int64(len(out)) <= h.maxBytes()/2 || keep <= 1 {
			break
		}
		keep /= 2
	}
	return writeAtomic(h.path, out)
}

// compactRecords merges skipped runs in a row and keeps, per transform,
// the last keep records plus its last build and last failure.
func compactRecords(recs []RunRecord, keep int) []RunRecord {
	var merged []RunRecord
	lastOf := map[string]int{} // transform -> index in merged
	for _, r := range recs {
		if i, ok := lastOf[r.Transform]; ok && r.Outcome == OutcomeSkipped && merged[i].Outcome == OutcomeSkipped {
			m := &merged[i]
			m.Repeat = int(m.runs() + r.runs())
			m.End = r.End
			m.LagAfter = r.LagAfter
			continue
		}
		merged = append(merged, r)
		lastOf[r.Transform] = len(merged) - 1
	}
	count := map[string]int{}
	keepIdx := map[int]bool{}
	lastBuild, lastFail := map[string]int{}, map[string]int{}
	for i := len(merged) - 1; i >= 0; i-- {
		r := merged[i]
		if count[r.Transform] < keep {
			keepIdx[i] = true
			count[r.Transform]++
		}
		if _, ok := lastBuild[r.Transform]; !ok && r.Built() {
			lastBuild[r.Transform] = i
		}
		if _, ok := lastFail[r.Transform]; !ok && r.Failed() {
			lastFail[r.Transform] = i
		}
	}
	for _, i := range lastBuild {
		keepIdx[i] = true
	}
	for _, i := range lastFail {
		keepIdx[i] = true
	}
	idx := make([]int, 0, len(keepIdx))
	for i := range keepIdx {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]RunRecord, 0, len(idx))
	for _, i := range idx {
		out = append(out, merged[i])
	}
	return out
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
		err = os.Chmod(name, 0o644)
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
