//go:build interop

package interop

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// workerScript is the Python side of the JSON-lines protocol (spark and py
// modes). It is passed with python -c so no file has to be located at run time.
//
//go:embed py/floe_worker.py
var workerScript string

// VerboseEnv names the environment variable that, when set, copies every
// engine process's stderr (Spark's log) to the test binary's stderr.
const VerboseEnv = "FLOE_INTEROP_VERBOSE"

// EngineError is a failure reported by an engine: the exception type and
// message in Message, the Python traceback in Trace. It matches ErrEngine with
// errors.Is.
type EngineError struct {
	Engine  string // "spark" or "py"
	Op      string // the request that failed
	Message string // e.g. "AnalysisException: [TABLE_OR_VIEW_NOT_FOUND] ..."
	Trace   string
}

// Error returns "<engine> <op>: <exception>: <message>".
func (e *EngineError) Error() string {
	return fmt.Sprintf("%s %s: %s", e.Engine, e.Op, e.Message)
}

// Unwrap makes errors.Is(err, ErrEngine) hold.
func (e *EngineError) Unwrap() error { return ErrEngine }

type request struct {
	ID   int64  `json:"id"`
	Op   string `json:"op"`
	Args any    `json:"args,omitempty"`
}

type answer struct {
	ID     int64           `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	Trace  string          `json:"trace"`
}

// worker is one engine process speaking the JSON-lines protocol. Calls are
// serialised: one request in flight at a time.
type worker struct {
	mode    string
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	out     *bufio.Reader
	stderr  *tailBuffer
	exited  chan struct{}
	waitErr error

	mu     sync.Mutex
	nextID int64
	dead   error // set once the process is unusable
	closed bool
}

// startWorker starts the worker script in mode ("spark" or "py") with the
// installation's Python, in dir, and waits for its ready line.
func startWorker(ctx context.Context, e *Engines, mode, dir string, env []string) (*worker, error) {
	cmd := exec.Command(e.Python, "-c", workerScript, mode)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(),
		"JAVA_HOME="+e.JavaHome,
		"PYSPARK_PYTHON="+e.Python,
		"PYSPARK_DRIVER_PYTHON="+e.Python,
		"TZ=UTC",
		"PYTHONUNBUFFERED=1",
		"PYTHONDONTWRITEBYTECODE=1",
	)
	cmd.Env = append(cmd.Env, env...)
	// Own process group: Close and cancellation end the whole tree (Python and
	// the JVM it starts) by this group's id.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w := &worker{mode: mode, cmd: cmd, stderr: newTailBuffer(256 << 10), exited: make(chan struct{})}
	var err error
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	w.out = bufio.NewReaderSize(stdout, 1<<20)
	if os.Getenv(VerboseEnv) != "" {
		cmd.Stderr = io.MultiWriter(w.stderr, os.Stderr)
	} else {
		cmd.Stderr = w.stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("interop: starting %s worker (%s): %w", mode, e.Python, err)
	}
	go func() {
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	var ready struct {
		Ready string `json:"ready"`
	}
	w.mu.Lock()
	err = w.readAnswer(ctx, "start", 0, &ready)
	w.mu.Unlock()
	if err != nil {
		_ = w.close(context.Background())
		return nil, err
	}
	if ready.Ready != mode {
		_ = w.close(context.Background())
		return nil, fmt.Errorf("%w: %s worker announced mode %q", ErrProtocol, mode, ready.Ready)
	}
	return w, nil
}

// call sends op with args and decodes the answer's result into result (which
// may be nil to ignore it). A cancelled ctx kills the process: an engine
// cannot be interrupted mid-request and stay consistent.
func (w *worker) call(ctx context.Context, op string, args any, result any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead != nil {
		return w.dead
	}
	w.nextID++
	line, err := json.Marshal(request{ID: w.nextID, Op: op, Args: args})
	if err != nil {
		return fmt.Errorf("interop: encoding %s request: %w", op, err)
	}
	if _, err := w.stdin.Write(append(line, '\n')); err != nil {
		return w.fail(fmt.Sprintf("writing %s request", op), err)
	}
	return w.readAnswer(ctx, op, w.nextID, result)
}

// callRaw is call that returns the undecoded result.
func (w *worker) callRaw(ctx context.Context, op string, args any) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := w.call(ctx, op, args, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// readAnswer reads one answer line; w.mu must be held.
func (w *worker) readAnswer(ctx context.Context, op string, id int64, result any) error {
	type read struct {
		line []byte
		err  error
	}
	ch := make(chan read, 1)
	go func() {
		line, err := w.out.ReadBytes('\n')
		ch <- read{line, err}
	}()
	var r read
	select {
	case r = <-ch:
	case <-ctx.Done():
		w.kill()
		<-ch
		return w.fail(fmt.Sprintf("waiting for %s", op), ctx.Err())
	}
	if r.err != nil {
		return w.fail(fmt.Sprintf("reading the answer to %s", op), r.err)
	}
	var a answer
	if err := json.Unmarshal(r.line, &a); err != nil {
		return w.fail(fmt.Sprintf("answer to %s is not JSON (%q)", op, truncate(string(r.line), 200)), ErrProtocol)
	}
	if a.ID != id {
		return w.fail(fmt.Sprintf("answer to %s has id %d, want %d", op, a.ID, id), ErrProtocol)
	}
	if !a.OK {
		return &EngineError{Engine: w.mode, Op: op, Message: a.Error, Trace: a.Trace}
	}
	if result == nil || len(a.Result) == 0 {
		return nil
	}
	if raw, ok := result.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], a.Result...)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(a.Result))
	dec.UseNumber()
	if err := dec.Decode(result); err != nil {
		return fmt.Errorf("%w: decoding the result of %s: %v", ErrProtocol, op, err)
	}
	return nil
}

// fail marks the worker unusable, kills it and returns the error every later
// call gets; w.mu must be held.
func (w *worker) fail(what string, cause error) error {
	w.kill()
	state := "still running after SIGKILL"
	select {
	case <-w.exited:
		state = fmt.Sprint(w.waitErr)
	case <-time.After(10 * time.Second):
	}
	var err error
	if errors.Is(cause, ErrProtocol) {
		err = fmt.Errorf("%w: %s worker, %s; stderr tail:\n%s", ErrProtocol, w.mode, what, w.stderr.Tail(4<<10))
	} else {
		// Both sentinels wrap: errors.Is(err, context.DeadlineExceeded) holds
		// for a timed-out call.
		err = fmt.Errorf("%w: %s worker, %s: %w (process: %s); stderr tail:\n%s",
			ErrWorkerExited, w.mode, what, cause, state, w.stderr.Tail(4<<10))
	}
	w.dead = err
	return err
}

// kill ends the worker's whole process group.
func (w *worker) kill() {
	if w.cmd.Process != nil {
		_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// close asks the worker to shut down (stopping Spark cleanly), waits up to a
// minute, then kills what is left of its process group. Safe to call twice.
func (w *worker) close(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var err error
	if w.dead == nil {
		w.nextID++
		line, _ := json.Marshal(request{ID: w.nextID, Op: "shutdown"})
		if _, werr := w.stdin.Write(append(line, '\n')); werr == nil {
			sctx, cancel := context.WithTimeout(ctx, time.Minute)
			err = w.readAnswer(sctx, "shutdown", w.nextID, nil)
			cancel()
		}
	}
	_ = w.stdin.Close()
	select {
	case <-w.exited:
	case <-time.After(time.Minute):
	}
	w.kill()
	<-w.exited
	if w.dead == nil {
		w.dead = fmt.Errorf("%w: %s worker was closed", ErrWorkerExited, w.mode)
	}
	return err
}

// tailBuffer keeps the last max bytes written to it. Safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// Tail returns up to n of the last bytes written.
func (t *tailBuffer) Tail(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
