package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a writer and readers at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// background is a floe process started by a script's start command.
type background struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	err            error
}

func startFloe(t *testing.T, work string, args []string) *background {
	t.Helper()
	b := &background{done: make(chan struct{})}
	b.cmd = exec.Command(floeBin, append([]string{"--warehouse", "wh"}, args...)...)
	b.cmd.Dir = work
	b.cmd.Env = append(os.Environ(), "FLOE_CONFIG=", "FLOE_WAREHOUSE=")
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		b.err = b.cmd.Wait()
		close(b.done)
	}()
	return b
}

// waitFor waits until stderr contains text, or the process exits, or a
// minute passes.
func (b *background) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(b.stderr.String(), text) {
		select {
		case <-b.done:
			t.Fatalf("floe exited (%v) before logging %q:\n%s", b.err, text, b.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe did not log %q within a minute:\n%s", text, b.stderr.String())
		}
	}
}

// waitForOrExit waits until stderr contains text (true) or the process
// exits (false), for at most a minute.
func (b *background) waitForOrExit(text string) bool {
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(b.stderr.String(), text) && time.Now().Before(deadline) {
		select {
		case <-b.done:
			return strings.Contains(b.stderr.String(), text)
		case <-time.After(2 * time.Millisecond):
		}
	}
	return true
}

var (
	logTime  = regexp.MustCompile(`^time=\S+ `)
	jsonTime = regexp.MustCompile(`"time":"[^"]*",`)
)

// stop sends the signal and reports the exit like runFloe.
func (b *background) stop(t *testing.T, work, sig string, keep []string) string {
	t.Helper()
	s := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT}[sig]
	if s == 0 {
		t.Fatalf("unknown signal %q", sig)
	}
	if err := b.cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		b.kill()
		t.Fatalf("floe did not exit within a minute of SIG%s:\n%s", sig, b.stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(b.err, &ee) {
		code = ee.ExitCode()
	} else if b.err != nil {
		t.Fatal(b.err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "exit %d\n", code)
	if o := b.stdout.String(); o != "" {
		out.WriteString(o)
	}
	for _, l := range strings.Split(strings.TrimRight(b.stderr.String(), "\n"), "\n") {
		l = jsonTime.ReplaceAllString(logTime.ReplaceAllString(l, ""), "")
		for _, k := range keep {
			if strings.Contains(l, k) {
				l = strings.ReplaceAll(l, work, "<WORK>")
				l = durationAttr.ReplaceAllString(l, "duration=<DUR>")
				out.WriteString("! " + snapshotID.ReplaceAllString(l, "<ID>") + "\n")
				break
			}
		}
	}
	return out.String()
}

var durationAttr = regexp.MustCompile(`duration=\S+`)

func (b *background) kill() {
	select {
	case <-b.done:
	default:
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}
