package stallnettest

import (
	"net"
	"sync/atomic"
	"testing"
)

// Silent is an endpoint that accepts connections and never answers (nor
// completes a TLS handshake); it counts the connections it accepted.
func Silent(t testing.TB) (addr string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	held := make(chan net.Conn, 64)
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			select {
			case held <- c: // held open, never answered
			default:
				c.Close()
			}
		}
	}()
	return ln.Addr().String(), accepted
}
