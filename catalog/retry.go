package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"syscall"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Backoff between the retries of a catalog call: exponential from
// retryMinWait, capped at retryMaxWait, with jitter.
const (
	retryMinWait = 100 * time.Millisecond
	retryMaxWait = 5 * time.Second
)

// transientErrors say, per catalog kind, which errors of a call are worth
// retrying: the catalog did not answer, or answered that it cannot answer
// now. A catalog's definite answers (a missing table, a 4xx, a conflict)
// never are. Kinds not listed are not retried (Glue's AWS SDK retries on
// its own; Hive and Hadoop: not yet).
var transientErrors = map[string]func(error) bool{
	"rest":     transientREST,
	"embedded": sqliteBusy,
	"sql":      sqliteBusy,
}

// IsTransient reports whether err, from a call to a catalog of the given
// kind (Catalog.Kind), is one floe retries.
func IsTransient(kind string, err error) bool {
	f := transientErrors[kind]
	return err != nil && f != nil && f(err)
}

// transientREST: iceberg-go's REST client maps 5xx answers to
// ErrServerError, ErrServiceUnavailable (503) or, on commits,
// ErrCommitStateUnknown; network errors come through as they are.
func transientREST(err error) bool {
	switch {
	case errors.Is(err, rest.ErrServerError), errors.Is(err, rest.ErrServiceUnavailable), errors.Is(err, rest.ErrCommitStateUnknown):
		return true
	case errors.Is(err, rest.ErrRESTError):
		// Any other answer of the server (4xx, a body it could not
		// decode).
		return false
	}
	return transientNet(err)
}

// transientNet: the connection failed, was reset or closed before the
// answer, or the request timed out.
func transientNet(err error) bool {
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	switch {
	case errors.Is(err, ErrRequestTimeout), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		// Not "remote error" (a TLS alert) and the like: a definite no.
		return op.Op == "dial" || op.Op == "read" || op.Op == "write"
	}
	return false
}

// sqliteBusy: another process holds the SQLite file's lock longer than
// the busy timeout floe opens it with (see sqliteDSN).
func sqliteBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}

type noRetryKey struct{}

// WithoutRetry returns a context whose catalog calls are not retried by
// Catalog (a caller with its own retry policy, such as package commit's
// loop, which retries loads by the table's commit.retry.* properties).
func WithoutRetry(ctx context.Context) context.Context {
	return context.WithValue(ctx, noRetryKey{}, true)
}

// budget is the time a catalog call may be retried for.
func (c *Catalog) budget() time.Duration {
	if c.retryBudgetSet {
		return c.retryBudget
	}
	return DefaultRetryBudget
}

// retry runs f, and again with jittered exponential backoff while it fails
// with an error IsTransient says is transient, within the catalog's retry
// budget and ctx. what names the call in the log and in the error.
func (c *Catalog) retry(ctx context.Context, what string, f func(context.Context) error) error {
	if v, _ := ctx.Value(noRetryKey{}).(bool); v || transientErrors[c.kind] == nil {
		return f(ctx)
	}
	start := time.Now()
	deadline := start.Add(c.budget())
	wait := retryMinWait
	for n := 1; ; n++ {
		err := f(ctx)
		if err == nil || ctx.Err() != nil || !IsTransient(c.kind, err) {
			return err
		}
		d := wait/2 + time.Duration(rand.Int64N(int64(wait)))
		if time.Now().Add(d).After(deadline) {
			if n == 1 {
				return err
			}
			budget := fmt.Sprintf("floe's retry budget of %s", c.budget())
			if c.kind == "rest" {
				budget = fmt.Sprintf("the retry budget %s=%s", PropRESTRetryBudget, c.budget())
			}
			return fmt.Errorf("%w (%d attempts in %s: %s is spent)", err, n, time.Since(start).Round(time.Millisecond), budget)
		}
		slog.Default().Warn("catalog: call failed; retrying", "catalog", c.name, "call", what, "attempt", n, "error", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, retryMaxWait)
	}
}
