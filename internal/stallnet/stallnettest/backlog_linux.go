package stallnettest

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// FullBacklog listens on a loopback port with an accept backlog of zero and
// fills it with one connection that is never accepted: Linux drops the SYN
// of any further connection, so dialling it waits until the dialler gives
// up, as for an unreachable host. It returns the address (host:port), and
// skips the test where the kernel accepts connections past the backlog.
func FullBacklog(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	filler, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { filler.Close() })
	if c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond); err == nil {
		c.Close()
		t.Skip("this kernel accepts connections past a full backlog; cannot test the connect timeout")
	}
	return addr
}
