// Package stallnet bounds network connections by progress: a read or a
// write that moves no data for a timeout fails instead of hanging. floe's
// object store IOs (s3://, gs://) dial through it.
package stallnet

import (
	"context"
	"errors"
	"fmt"
	"net"
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

// Dialer returns a DialContext for an http.Transport whose connections
// connect within connect and fail when stalled for stall (key names the
// stall setting in errors).
func Dialer(connect, stall time.Duration, key string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &Conn{Conn: c, Timeout: stall, Key: key}, nil
	}
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
