package azio_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
)

// fullBacklog listens on a loopback port with an accept backlog of zero and
// fills it with one connection that is never accepted: Linux drops the SYN
// of any further connection, so dialling it waits until the dialler gives
// up, as for an unreachable host.
func fullBacklog(t *testing.T) string {
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

// An endpoint that does not complete the connection fails after the
// connect timeout and the retries, with an error naming adls.connect-timeout.
func TestConnectTimeout(t *testing.T) {
	addr := fullBacklog(t)
	props := map[string]string{
		"adls.endpoint":                     addr,
		"adls.protocol":                     "http",
		"adls.auth.shared-key.account.name": devAccount,
		"adls.auth.shared-key.account.key":  devKey,
		"adls.connect-timeout":              "0.3",
		"adls.retry.num-retries":            "1",
	}
	const wh = "abfss://lake@" + devAccount + ".dfs.core.windows.net/wh"
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = fsys.(iceio.ReadFileIO).ReadFile(wh + "/x.json")
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "no answer for 300ms (adls.connect-timeout)") || !strings.Contains(err.Error(), wh+"/x.json") {
		t.Fatalf("error %v, want one naming the location and adls.connect-timeout", err)
	}
	if took > 20*time.Second {
		t.Errorf("took %v with a 0.3s connect timeout and one retry", took)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}
