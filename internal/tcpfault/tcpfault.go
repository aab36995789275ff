// Package tcpfault is a TCP proxy that resets connections in the middle of
// a request: armed with a byte pattern, it forwards traffic both ways until
// the client sends bytes holding the pattern, then, after a delay, resets
// both sides (TCP RST). Tests put it in front of a gRPC server (Spark
// Connect) to drop the stream of a statement the server has started, so
// that the client cannot know whether it finished.
package tcpfault

import (
	"bytes"
	"io"
	"net"
	"sync"
	"time"
)

// Proxy forwards connections from its address to a target.
type Proxy struct {
	target string
	ln     net.Listener

	mu     sync.Mutex
	armed  []byte
	delay  time.Duration
	resets int
	conns  map[*pair]bool
	wg     sync.WaitGroup
}

type pair struct{ client, server net.Conn }

// Start listens on 127.0.0.1 on a free port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: map[*pair]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's address (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Arm makes the proxy reset every connection delay after the next time a
// client sends bytes containing pattern (once; Arm again for another).
func (p *Proxy) Arm(pattern []byte, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.delay = append([]byte(nil), pattern...), delay
}

// Disarm cancels an armed reset that has not fired.
func (p *Proxy) Disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = nil
}

// Resets counts the resets done.
func (p *Proxy) Resets() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resets
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.client.Close()
		c.server.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pr := &pair{client: c, server: s}
		p.mu.Lock()
		p.conns[pr] = true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(pr, c, s, true)
		go p.pipe(pr, s, c, false)
	}
}

// pipe copies src to dst; from the client, it watches for the pattern.
func (p *Proxy) pipe(pr *pair, src, dst net.Conn, fromClient bool) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.conns, pr)
		p.mu.Unlock()
		dst.Close()
	}()
	buf := make([]byte, 32<<10)
	var tail []byte
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromClient {
				p.watch(append(tail, buf[:n]...))
				if n >= 256 {
					tail = append(tail[:0], buf[n-256:n]...)
				} else {
					tail = append(tail, buf[:n]...)
					if len(tail) > 256 {
						tail = tail[len(tail)-256:]
					}
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *Proxy) watch(b []byte) {
	p.mu.Lock()
	pat, delay := p.armed, p.delay
	hit := pat != nil && bytes.Contains(b, pat)
	if hit {
		p.armed = nil
	}
	p.mu.Unlock()
	if !hit {
		return
	}
	go func() {
		time.Sleep(delay)
		p.ResetAll()
	}()
}

// ResetAll resets every open connection now.
func (p *Proxy) ResetAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resets++
	for c := range p.conns {
		for _, conn := range []net.Conn{c.client, c.server} {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
		}
	}
}
