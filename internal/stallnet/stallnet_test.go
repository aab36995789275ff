package stallnet_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/stallnet"
	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

// A dial that gets no answer within the connect timeout fails with a
// ConnectError naming the connect setting, still a net timeout (the SDKs
// retry those) wrapping the dialer's error.
func TestDialerConnectTimeout(t *testing.T) {
	addr := stallnettest.FullBacklog(t)
	dial := stallnet.Dialer(200*time.Millisecond, "x.connect-timeout", time.Second, "x.request-timeout")
	start := time.Now()
	c, err := dial(context.Background(), "tcp", addr)
	took := time.Since(start)
	if c != nil {
		c.Close()
	}
	var ce *stallnet.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *stallnet.ConnectError", err, err)
	}
	if ce.Addr != addr || ce.After != 200*time.Millisecond || ce.Key != "x.connect-timeout" {
		t.Errorf("ConnectError %+v, want addr %s, 200ms, x.connect-timeout", ce, addr)
	}
	want := "connecting to " + addr + ": no answer for 200ms (x.connect-timeout): "
	if !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "i/o timeout") {
		t.Errorf("error %q, want it to start with %q and keep the dialer's i/o timeout", err, want)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v is not a net timeout", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" {
		t.Errorf("error %v does not wrap the dialer's *net.OpError", err)
	}
	if took < 150*time.Millisecond || took > 10*time.Second {
		t.Errorf("dial failed after %v with a 200ms connect timeout", took)
	}
}

// A dial ended by its context is the caller's doing, not the connect
// timeout: its error names no setting.
func TestDialerContextEnded(t *testing.T) {
	addr := stallnettest.FullBacklog(t)
	dial := stallnet.Dialer(10*time.Second, "x.connect-timeout", time.Second, "x.request-timeout")
	for name, ctx := range map[string]func() (context.Context, context.CancelFunc){
		"cancelled": func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		},
		"deadline": func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := ctx()
			defer cancel()
			c, err := dial(ctx, "tcp", addr)
			if c != nil {
				c.Close()
			}
			var ce *stallnet.ConnectError
			if err == nil || errors.As(err, &ce) || strings.Contains(err.Error(), "x.connect-timeout") {
				t.Fatalf("error %v, want the dialer's own error, naming no setting", err)
			}
		})
	}
}

// A connection that receives nothing for the stall timeout fails the read
// with an Error naming the stall setting.
func TestDialerStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Write([]byte("ab")) // part of an answer, then silence
			accepted <- c
		}
	}()
	dial := stallnet.Dialer(time.Second, "x.connect-timeout", 200*time.Millisecond, "x.request-timeout")
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer func() {
		select {
		case s := <-accepted:
			s.Close()
		default:
		}
	}()
	buf := make([]byte, 10)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "ab" {
		t.Fatalf("first read %q, %v, want \"ab\"", buf[:n], err)
	}
	start := time.Now()
	_, err = c.Read(buf)
	var se *stallnet.Error
	if !errors.As(err, &se) || se.Op != "read" || se.Key != "x.request-timeout" {
		t.Fatalf("stalled read: %v, want a *stallnet.Error of a read naming x.request-timeout", err)
	}
	if want := "no data received for 200ms (x.request-timeout): server stalled"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if took := time.Since(start); took < 150*time.Millisecond || took > 10*time.Second {
		t.Errorf("read failed after %v with a 200ms stall timeout", took)
	}
}
