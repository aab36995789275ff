package gcsio

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"

	"github.com/floedata/floe/internal/stallnet"
)

// boundedReopen bounds how often Google's client reads a download again
// after its body broke without delivering a byte. The client resumes a
// broken body itself (a ranged GET from the offset reached) but without a
// bound as long as each GET is answered, so a server that answers and
// then never sends the body would hold the read forever, one request
// timeout per GET. This transport counts, per object and range, the GETs
// in a row whose body failed before its first byte, and refuses the next
// GET after maxRetries of them with an error the client does not retry.
// Bodies that deliver bytes reset the count (the next GET asks for
// another range anyway). Concurrent reads of the same object and range
// share a count; the count of a read abandoned mid-way (its context
// ended) stays until that object and range deliver a byte.
type boundedReopen struct {
	base       http.RoundTripper
	maxRetries int

	mu    sync.Mutex
	fails map[string]*reopenFails // by download key
}

type reopenFails struct {
	n    int
	last error
}

// downloadKey is what a GET and the GETs resuming it from the same offset
// share: the object (the path; the query may gain a generation) and the
// range.
func downloadKey(r *http.Request) string {
	return r.URL.Host + r.URL.Path + " " + r.Header.Get("Range")
}

func (b *boundedReopen) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		return b.base.RoundTrip(r)
	}
	key := downloadKey(r)
	b.mu.Lock()
	f := b.fails[key]
	if f != nil && f.n > b.maxRetries {
		delete(b.fails, key)
	}
	b.mu.Unlock()
	if f != nil && f.n > b.maxRetries {
		return nil, &noProgressError{gets: f.n, rng: r.Header.Get("Range"), err: f.last}
	}
	resp, err := b.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	resp.Body = &countedBody{ReadCloser: resp.Body, b: b, key: key}
	return resp, nil
}

// countedBody reports to its transport whether it failed before its first
// byte.
type countedBody struct {
	io.ReadCloser
	b    *boundedReopen
	key  string
	seen bool
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	if n > 0 && !c.seen {
		c.seen = true
		c.b.mu.Lock()
		delete(c.b.fails, c.key)
		c.b.mu.Unlock()
	}
	if err != nil && !errors.Is(err, io.EOF) && !c.seen {
		c.b.mu.Lock()
		if c.b.fails == nil {
			c.b.fails = map[string]*reopenFails{}
		}
		f := c.b.fails[c.key]
		if f == nil {
			f = &reopenFails{}
			c.b.fails[c.key] = f
		}
		f.n++
		f.last = err
		c.b.mu.Unlock()
	}
	return n, err
}

// noProgressError is a download given up: GETs in a row answered without
// a byte of body. Google's client must not retry it: it has no Temporary
// or Unwrap method (the last body error is a stall, which is Temporary),
// and its text avoids the words the client retries on ("connection
// reset", "connection refused", "broken pipe").
type noProgressError struct {
	gets int
	rng  string
	err  error
}

func (e *noProgressError) Error() string {
	at := "the start"
	if e.rng != "" {
		at = e.rng
	}
	return fmt.Sprintf("download from %s given up: %d GETs in a row sent no byte of the body (%s); the last: %s", at, e.gets, KeyNumRetries, describe(e.err))
}

// describe is err's text, or what it means where that text has words
// Google's client retries on.
func describe(err error) string {
	var se *stallnet.Error
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, syscall.ECONNRESET):
		return "the server reset the connection"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the body ended early"
	}
	msg := err.Error()
	for _, w := range []string{"connection reset", "connection refused", "broken pipe"} {
		if strings.Contains(msg, w) {
			return "the connection broke"
		}
	}
	return msg
}
