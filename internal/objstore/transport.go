package objstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// stallConn fails a read or a write that makes no progress for timeout:
// every Read and Write moves the connection's deadline (both directions) to
// now+timeout, so a slow transfer that keeps moving survives while a server
// that stops answering (or stops reading an upload) fails the request after
// timeout instead of hanging it. Moving the deadline on Write also extends
// the read the HTTP transport keeps pending on a pooled connection, so an
// idle connection is closed after timeout without failing a request.
type stallConn struct {
	net.Conn
	timeout time.Duration
}

// StallError reports a request that made no progress for the request timeout.
type StallError struct {
	After time.Duration // the request timeout
	Op    string        // "read" or "write"
}

func (e *StallError) Error() string {
	return fmt.Sprintf("no data %s for %v (%s): server stalled", map[string]string{"read": "received", "write": "sent"}[e.Op], e.After, KeyRequestTimeout)
}

// Timeout makes the error a net timeout, which the AWS SDK retries.
func (e *StallError) Timeout() bool   { return true }
func (e *StallError) Temporary() bool { return true }

func (c *stallConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &StallError{After: c.timeout, Op: "read"}
	}
	return n, err
}

func (c *stallConn) Write(p []byte) (int, error) {
	if err := c.Conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, &StallError{After: c.timeout, Op: "write"}
	}
	return n, err
}

// Transport tuning, as iceberg-go's S3 IO has it: many parallel transfers to
// one host.
const (
	maxIdleConns        = 256
	maxIdleConnsPerHost = 256
	maxConnsPerHost     = 2048
	idleConnTimeout     = 90 * time.Second
)

// newHTTPClient returns the HTTP client of an s3:// IO: the AWS SDK's client
// with connect and stall timeouts, an optional proxy, and no SDK read timeout
// (the stall timeout covers reads and writes).
func newHTTPClient(s s3Settings) *awshttp.BuildableClient {
	dialer := &net.Dialer{Timeout: s.connectTO, KeepAlive: 30 * time.Second}
	stall := s.requestTO
	return awshttp.NewBuildableClient().
		WithReadTimeout(0).
		WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = maxIdleConns
			t.MaxIdleConnsPerHost = maxIdleConnsPerHost
			t.MaxConnsPerHost = maxConnsPerHost
			t.IdleConnTimeout = idleConnTimeout
			t.TLSHandshakeTimeout = s.connectTO
			t.ResponseHeaderTimeout = 0 // the stall timeout bounds the wait
			if s.proxy != nil {
				t.Proxy = http.ProxyURL(s.proxy)
			}
			t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dialer.DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &stallConn{Conn: c, timeout: stall}, nil
			}
		})
}
