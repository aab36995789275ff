package tcpfault

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves lines back.
func echo(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestForwardsThenResetsAfterPattern(t *testing.T) {
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "hello\n" {
		t.Fatalf("echo through the proxy: %q, %v", line, err)
	}
	p.Arm([]byte("MERGE INTO"), 0)
	if _, err := c.Write([]byte("please MERGE INTO t\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, err = r.ReadString('\n'); err != nil {
			break
		}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection was not reset after the pattern")
	}
	if p.Resets() != 1 {
		t.Fatalf("resets = %d, want 1", p.Resets())
	}
	// Disarmed after firing: a new connection passes the pattern.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("MERGE INTO again\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(c2).ReadString('\n'); err != nil || line != "MERGE INTO again\n" {
		t.Fatalf("after the reset: %q, %v", line, err)
	}
}
