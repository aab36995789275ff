// Package stallnet bounds network connections by progress: a read or a
// write that moves no data for a timeout fails instead of hanging. floe's
// object store IOs (s3://, gs://, abfs(s):// and wasb(s)://) dial through it.
package stallnet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Conn fails a read or a write that makes no progress for Timeout: every
// Read and Write moves the connection's deadline (both directions) to
// now+Timeout, so a slow transfer that keeps moving survives while a server
// that stops answering (or stops reading an upload) fails the request after
// Timeout instead of hanging it. Moving the deadline on Write also extends
// the read the HTTP transport keeps pending on a pooled connection, so an
// idle connection is closed after Timeout without failing a request.
type Conn struct {
	net.Conn
	Timeout time.Duration
	Key     string // the setting that sets Timeout, named in errors
}

// Error reports a request that made no progress for the request timeout.
type Error struct {
	After time.Duration // the request timeout
	Op    string        // "read" or "write"
	Key   string        // the setting that sets it
}

func (e *Error) Error() string {
	return fmt.Sprintf("no data %s for %v (%s): server stalled", map[string]string{"read": "received", "write": "sent"}[e.Op], e.After, e.Key)
}

// Timeout makes the error a net timeout, which the SDKs retry.
func (e *Error) Timeout() bool   { return true }
func (e *Error) Temporary() bool { return true }

func (c *Conn) Read(p []byte) (int, error) {
	if err := c.Conn.SetDeadline(time.Now().Add(c.Timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &Error{After: c.Timeout, Op: "read", Key: c.Key}
	}
	return n, err
}

func (c *Conn) Write(p []byte) (int, error) {
	if err := c.Conn.SetDeadline(time.Now().Add(c.Timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &Error{After: c.Timeout, Op: "write", Key: c.Key}
	}
	return n, err
}

// ConnectError reports a connection that was not established within the
// connect timeout, naming the setting that sets it (the dialer's own error
// says only "i/o timeout").
type ConnectError struct {
	Addr  string        // the address dialled
	After time.Duration // the connect timeout
	Key   string        // the setting that sets it
	Err   error         // the dialer's error
}

func (e *ConnectError) Error() string {
	return fmt.Sprintf("connecting to %s: no answer for %v (%s): %v", e.Addr, e.After, e.Key, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Timeout makes the error a net timeout, which the SDKs retry.
func (e *ConnectError) Timeout() bool   { return true }
func (e *ConnectError) Temporary() bool { return true }

// Dialer returns a DialContext for an http.Transport whose connections
// connect within connect and fail when stalled for stall. connectKey and
// stallKey name the settings in errors: a dial that times out fails with a
// *ConnectError, a stalled connection with an *Error. A dial ended by its
// context (the request was cancelled or hit its own deadline) keeps the
// dialer's error (also when the context's deadline comes before the connect
// timeout).
func Dialer(connect time.Duration, connectKey string, stall time.Duration, stallKey string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		start := time.Now()
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil && !ctxFirst(ctx, start.Add(connect)) {
				err = &ConnectError{Addr: addr, After: connect, Key: connectKey, Err: err}
			}
			return nil, err
		}
		return &Conn{Conn: c, Timeout: stall, Key: stallKey}, nil
	}
}

// ctxFirst reports whether ctx's deadline comes before the connect
// deadline: the dialer then times out at the context's deadline, possibly
// before ctx.Err reports it.
func ctxFirst(ctx context.Context, connectDeadline time.Time) bool {
	dl, ok := ctx.Deadline()
	return ok && !dl.After(connectDeadline)
}

// Duration reads the timeout setting key of props: seconds (30, 0.5) or a
// Go duration (30s, 5m); def when unset. The object store IOs read their
// timeouts with it, so a number means the same in s3.* and gcs.* keys.
func Duration(props map[string]string, key string, def time.Duration) (time.Duration, error) {
	v := strings.TrimSpace(props[key])
	if v == "" {
		return def, nil
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, fmt.Errorf("%s %q: want seconds (30) or a duration (30s, 5m)", key, v)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%s %q: want a positive duration", key, v)
	}
	return d, nil
}

// TLSDialer returns a DialTLSContext for the http.Transport t whose
// connections are dialled by dial (see Dialer) and complete their TLS
// handshake within connect: a server that accepts the connection and never
// answers the handshake fails with a *ConnectError naming connectKey, where
// the transport's own TLSHandshakeTimeout says only "net/http: TLS
// handshake timeout". The TLS settings are t.TLSClientConfig's at the time
// of the dial (HTTP/2 is negotiated as the transport configures it).
func TLSDialer(t *http.Transport, dial func(ctx context.Context, network, addr string) (net.Conn, error), connect time.Duration, connectKey string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		start := time.Now()
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		hctx, cancel := context.WithDeadline(ctx, start.Add(connect))
		defer cancel()
		tc := tls.Client(c, cfg)
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			if hctx.Err() != nil && ctx.Err() == nil && !ctxFirst(ctx, start.Add(connect)) {
				err = &ConnectError{Addr: addr, After: connect, Key: connectKey, Err: fmt.Errorf("TLS handshake: %w", err)}
			}
			return nil, err
		}
		return tc, nil
	}
}
