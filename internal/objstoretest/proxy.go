package objstoretest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is an HTTP proxy in front of a storage server: it counts requests
// and bytes by kind, and injects faults into a share of the requests. Point
// floe's endpoint setting at URL. Requests keep their Host header, so the
// server checks SigV4 signatures as if it had been called directly.
type Proxy struct {
	URL string // http://127.0.0.1:PORT

	target *url.URL
	srv    *http.Server
	tr     *http.Transport

	mu       sync.Mutex
	counts   Counts
	plan     FaultPlan
	rng      *rand.Rand
	injected map[Fault]int
	seen     atomic.Int64
	// inflight counts requests whose handler has not yet counted them: a
	// client may have its answer before the handler returns.
	inflight atomic.Int64
	logOn    bool
	log      []string
}

// LogRequests starts (or stops) recording each request as "KIND path?query".
func (p *Proxy) LogRequests(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.logOn = on
}

// Logged returns the requests recorded since the last call.
func (p *Proxy) Logged() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.log
	p.log = nil
	return out
}

// Counts are the requests and bytes seen by a Proxy.
type Counts struct {
	// Requests by kind: LIST, HEAD, GET (a whole object), GET-RANGE, PUT
	// (objects and parts), POST (multipart create and complete, bulk
	// delete), DELETE.
	Requests map[string]int
	// Status counts the answers by HTTP status (injected faults included).
	Status   map[int]int
	BytesIn  int64 // request bodies (uploads)
	BytesOut int64 // response bodies (downloads)
}

// Total is the number of requests.
func (c Counts) Total() int {
	n := 0
	for _, v := range c.Requests {
		n += v
	}
	return n
}

func (c Counts) String() string {
	keys := make([]string, 0, len(c.Requests))
	for k := range c.Requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests (", c.Total())
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, c.Requests[k])
	}
	fmt.Fprintf(&b, "), %s up, %s down", humanBytes(c.BytesIn), humanBytes(c.BytesOut))
	return b.String()
}

func humanBytes(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Fault is a kind of injected failure.
type Fault int

const (
	// SlowDown answers 503 SlowDown without reaching the server.
	SlowDown Fault = iota + 1
	// Reset closes the connection without an answer.
	Reset
	// ResetMidBody forwards the request and breaks the connection halfway
	// through the response body (a request body is forwarded whole).
	ResetMidBody
	// Pause holds the request for FaultPlan.Pause before forwarding it (a
	// stall longer than floe's request timeout when Pause is).
	Pause
	// Latency delays the request by FaultPlan.Latency.
	Latency
	// InternalError answers 500 InternalError without reaching the server.
	InternalError
)

func (f Fault) String() string {
	switch f {
	case SlowDown:
		return "503-slowdown"
	case Reset:
		return "reset"
	case ResetMidBody:
		return "reset-mid-body"
	case Pause:
		return "pause"
	case Latency:
		return "latency"
	case InternalError:
		return "500"
	}
	return fmt.Sprintf("fault(%d)", int(f))
}

// FaultPlan says which requests fail and how.
type FaultPlan struct {
	// Rate is the share of requests that get a fault, 0 to 1.
	Rate float64
	// Kinds are drawn from uniformly.
	Kinds []Fault
	// Pause and Latency are the delays of those kinds.
	Pause, Latency time.Duration
	// After skips this many requests before faults start (a "random point"
	// in a command).
	After int64
	// Limit stops injecting after this many faults (0: no limit).
	Limit int
	// Seed seeds the choice of requests.
	Seed uint64
}

// NewProxy starts a proxy in front of target (http://host:port), stopped when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := StartProxy(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy starts a proxy in front of target; Close stops it.
func StartProxy(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), target: u,
		tr:       &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
		counts:   Counts{Requests: map[string]int{}, Status: map[int]int{}},
		injected: map[Fault]int{}, rng: rand.New(rand.NewPCG(1, 2))}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: time.Minute}
	go p.srv.Serve(l)
	return p, nil
}

// Close stops the proxy.
func (p *Proxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	_ = p.srv.Close()
	p.tr.CloseIdleConnections()
}

// Counts returns the counts so far and starts new ones.
func (p *Proxy) Counts() Counts {
	// Wait (briefly) for the handlers of answered requests to count them.
	for deadline := time.Now().Add(5 * time.Second); p.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.counts
	p.counts = Counts{Requests: map[string]int{}, Status: map[int]int{}}
	return c
}

// SetFaults replaces the fault plan (the zero plan injects none) and resets
// the request count After refers to.
func (p *Proxy) SetFaults(plan FaultPlan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.plan = plan
	p.rng = rand.New(rand.NewPCG(plan.Seed, plan.Seed^0x9e3779b97f4a7c15))
	p.seen.Store(0)
}

// Injected returns the faults injected since the last call, by kind.
func (p *Proxy) Injected() map[Fault]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.injected
	p.injected = map[Fault]int{}
	return out
}

func kind(r *http.Request) string {
	q := r.URL.Query()
	switch r.Method {
	case http.MethodGet:
		path := strings.Trim(r.URL.Path, "/")
		if q.Has("list-type") || !strings.Contains(path, "/") {
			return "LIST"
		}
		if r.Header.Get("Range") != "" {
			return "GET-RANGE"
		}
		return "GET"
	}
	return r.Method
}

func (p *Proxy) pick() (Fault, FaultPlan) {
	n := p.seen.Add(1)
	p.mu.Lock()
	defer p.mu.Unlock()
	plan := p.plan
	if plan.Rate <= 0 || len(plan.Kinds) == 0 || n <= plan.After {
		return 0, plan
	}
	total := 0
	for _, v := range p.injected {
		total += v
	}
	if plan.Limit > 0 && total >= plan.Limit {
		return 0, plan
	}
	if p.rng.Float64() >= plan.Rate {
		return 0, plan
	}
	f := plan.Kinds[p.rng.IntN(len(plan.Kinds))]
	p.injected[f]++
	return f, plan
}

type countingReader struct {
	r io.ReadCloser
	n *int64
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	atomic.AddInt64(c.n, int64(n))
	return n, err
}

func (c countingReader) Close() error { return c.r.Close() }

var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Te", "Trailer", "Upgrade"}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	k := kind(r)
	fault, plan := p.pick()
	var in, out int64
	status := 0
	defer func() {
		defer p.inflight.Add(-1)
		p.mu.Lock()
		p.counts.Requests[k]++
		p.counts.Status[status]++
		if p.logOn {
			p.log = append(p.log, k+" "+r.URL.RequestURI())
		}
		p.counts.BytesIn += atomic.LoadInt64(&in)
		p.counts.BytesOut += out
		p.mu.Unlock()
	}()
	switch fault {
	case SlowDown, InternalError:
		io.Copy(io.Discard, r.Body)
		code, code2, msg := "SlowDown", http.StatusServiceUnavailable, "Please reduce your request rate."
		if fault == InternalError {
			code, code2, msg = "InternalError", http.StatusInternalServerError, "We encountered an internal error. Please try again."
		}
		status = code2
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(code2)
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>floe-fault</RequestId></Error>`, code, msg)
		return
	case Reset:
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				if tc, ok := c.(*net.TCPConn); ok {
					tc.SetLinger(0) // RST, not FIN
				}
				c.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case Pause:
		sleepCtx(r.Context(), plan.Pause)
	case Latency:
		sleepCtx(r.Context(), plan.Latency)
	}
	if r.Context().Err() != nil {
		return
	}

	outURL := *p.target
	outURL.Path = r.URL.Path
	outURL.RawPath = r.URL.RawPath
	outURL.RawQuery = r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, outURL.String(), countingReader{r.Body, &in})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	for _, h := range hopHeaders {
		req.Header.Del(h)
	}
	req.Host = r.Host
	req.ContentLength = r.ContentLength
	if r.ContentLength == 0 {
		req.Body = http.NoBody
	}
	req.TransferEncoding = r.TransferEncoding
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		if r.Context().Err() == nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, h := range hopHeaders {
		w.Header().Del(h)
	}
	status = resp.StatusCode
	w.WriteHeader(resp.StatusCode)
	if fault == ResetMidBody && resp.ContentLength > 1 {
		n, _ := io.CopyN(w, resp.Body, resp.ContentLength/2)
		out += n
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	n, err := io.Copy(w, resp.Body)
	out += n
	if err != nil && !errors.Is(err, context.Canceled) {
		panic(http.ErrAbortHandler)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
