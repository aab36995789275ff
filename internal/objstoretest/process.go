package objstoretest

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// process is an emulator's process (s3proxy, fake-gcs-server, Azurite): its
// command, its output and a channel closed when it ends. The zero value is
// no process (an external server): stop and the S3 methods do nothing.
type process struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{}
}

// startProcess starts argv in its own process group (killed with the test
// binary), its output kept, and waits up to wait for readyURL to answer.
// If it does not, the process is stopped and the error holds the end of
// its output.
func startProcess(what string, argv []string, readyURL string, wait time.Duration) (process, error) {
	p := process{cmd: exec.Command(argv[0], argv[1:]...), logs: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return process{}, fmt.Errorf("start %s: %w", what, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	if err := waitHTTP(readyURL, p.done, wait); err != nil {
		p.stop()
		return process{}, fmt.Errorf("%s: %w; log:\n%s", what, err, p.logs.tail(4<<10))
	}
	return p, nil
}

// stop stops the process (SIGTERM to its group, SIGKILL after 10 s). Safe
// to call more than once.
func (p *process) stop() {
	if p.cmd == nil || p.cmd.Process == nil {
		return
	}
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}
