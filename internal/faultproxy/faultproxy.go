// Package faultproxy is an HTTP proxy that injects the faults a load
// balancer or gateway in front of a catalog produces: error answers before
// a request reaches the server, error answers after it did (the request took
// effect, its answer is lost), reset connections, and answers held past the
// client's timeout. Tests put it in front of a real REST catalog server and
// check what the client does.
//
// Faults are chosen by Rules (method and path pattern, the nth matching
// request, or each matching request with a probability drawn from a seeded
// random source) grouped in Plans. Several plans may be active at once when
// their scopes (path patterns) are disjoint, so concurrent tests can share
// one proxy and one server, each in its own namespace. Every request is
// recorded as an Event in the plan whose scope it falls in.
//
// A Proxy is safe for concurrent use.
package faultproxy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Action is what a fault does to a request.
type Action int

const (
	// Pass forwards the request and returns the server's answer.
	Pass Action = iota
	// FailBefore answers Fault.Status without forwarding: the server never
	// sees the request.
	FailBefore
	// FailAfter forwards the request, waits for the server's whole answer,
	// drops it and answers Fault.Status: the request took effect, the
	// client cannot know.
	FailAfter
	// ResetBefore resets the client's connection (TCP RST) without
	// forwarding.
	ResetBefore
	// ResetAfter forwards the request, waits for the server's answer, and
	// resets the client's connection instead of answering.
	ResetAfter
	// DelayAfter forwards the request at once, then holds the server's
	// answer for Fault.Delay before passing it on, the way a slow server
	// behind a load balancer looks to a client with a shorter timeout. The
	// request is completed even when the client gives up.
	DelayAfter
	// DelayBefore waits Fault.Delay, then forwards the request (unless the
	// client went away meanwhile, in which case the server never sees it).
	DelayBefore
	// FailThenForward answers Fault.Status at once and forwards the request
	// Fault.Delay later, whatever the client does meanwhile: a gateway that
	// timed out on a slow server, whose request still lands afterwards. The
	// event's Upstream is filled in when the late request is answered (see
	// Run.Wait).
	FailThenForward
)

var actionNames = map[Action]string{
	Pass: "pass", FailBefore: "fail-before", FailAfter: "fail-after",
	ResetBefore: "reset-before", ResetAfter: "reset-after",
	DelayAfter: "delay-after", DelayBefore: "delay-before", FailThenForward: "fail-then-forward",
}

// String returns the action's name (fail-after, reset-before, ...).
func (a Action) String() string {
	if s, ok := actionNames[a]; ok {
		return s
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Forwards says whether the server sees a request this action is applied to
// (DelayBefore: unless the client gives up first).
func (a Action) Forwards() bool {
	switch a {
	case FailBefore, ResetBefore:
		return false
	}
	return true
}

// BodyStyle is the body of an injected error answer.
type BodyStyle int

const (
	// HTMLBody is a gateway's HTML error page (text/html), as nginx or a
	// cloud load balancer sends.
	HTMLBody BodyStyle = iota
	// JSONBody is an Iceberg REST ErrorModel ({"error": {...}}).
	JSONBody
	// EmptyBody is no body at all.
	EmptyBody
)

// Fault is one injected fault.
type Fault struct {
	Action Action
	// Status is the HTTP status FailBefore and FailAfter answer (500, 502,
	// 503, 504...).
	Status int
	// Body is the style of the injected answer's body.
	Body BodyStyle
	// Delay is how long DelayAfter and DelayBefore wait.
	Delay time.Duration
}

// String describes the fault: "fail-after 504", "reset-before", "delay-after 3s".
func (f Fault) String() string {
	switch f.Action {
	case FailBefore, FailAfter:
		return fmt.Sprintf("%s %d", f.Action, f.Status)
	case FailThenForward:
		return fmt.Sprintf("%s %d +%s", f.Action, f.Status, f.Delay)
	case DelayAfter, DelayBefore:
		return fmt.Sprintf("%s %s", f.Action, f.Delay)
	}
	return f.Action.String()
}

// Rule selects the requests a Fault applies to.
type Rule struct {
	// Name identifies the rule in events and in other rules' After.
	Name string
	// Method is the HTTP method to match ("" matches any).
	Method string
	// Path is a pattern over the URL path, segment by segment: "*" matches
	// exactly one segment, a final "**" any number (zero included); other
	// segments match literally. "" matches every path.
	Path string
	// Nth fires the rule on the Nth request it matches (1-based). With 0
	// every matching request is a candidate.
	Nth int
	// Times bounds how many times the rule fires: 0 means once when Nth is
	// set and without bound otherwise.
	Times int
	// Prob, when positive, makes each candidate fire with this probability,
	// drawn from the plan's seeded random source.
	Prob float64
	// After, when set, names a rule of the same plan that must have fired
	// before this one matches anything (an outage that starts with a lost
	// commit answer, say). Requests before that do not count towards Nth.
	After string
	// Fault is what the rule does.
	Fault Fault
}

// Plan is a set of rules applied to the requests whose path falls in Scope.
type Plan struct {
	// Scope is a path pattern (Rule.Path's syntax), e.g.
	// "/v1/namespaces/t17/**". "" takes every request not in another
	// active plan's scope.
	Scope string
	// Rules are tried in order; the first that fires decides the request.
	Rules []Rule
	// Seed seeds the random source of rules with Prob.
	Seed uint64
}

// Event is one request the proxy saw.
type Event struct {
	Seq    int // order of arrival at the proxy, from 1
	Method string
	Path   string
	// Rule is the rule that fired ("" when none did), Fault what it did.
	Rule  string
	Fault Fault
	// Upstream is the server's status (0 when the request was not forwarded
	// or forwarding failed); Status is what the client was answered (0 for
	// a reset).
	Upstream int
	Status   int
	// Err says why forwarding failed, when it did.
	Err string
}

// Fired says whether a rule fired on the request.
func (e Event) Fired() bool { return e.Rule != "" }

// Landed says whether the server answered the request (it took effect as
// far as the server is concerned, whatever the client was told).
func (e Event) Landed() bool { return e.Upstream != 0 }

// String is a one-line description of the event.
func (e Event) String() string {
	s := fmt.Sprintf("#%d %s %s -> %d", e.Seq, e.Method, e.Path, e.Upstream)
	if e.Fired() {
		s += fmt.Sprintf(" [%s: %s]", e.Rule, e.Fault)
	}
	if e.Status != e.Upstream {
		switch {
		case e.Status == 0 && (e.Fault.Action == ResetBefore || e.Fault.Action == ResetAfter):
			s += " client: reset"
		case e.Status == 0:
			s += " client: no answer"
		default:
			s += fmt.Sprintf(" client: %d", e.Status)
		}
	}
	if e.Err != "" {
		s += " (" + e.Err + ")"
	}
	return s
}

// Proxy forwards requests to one server, injecting faults by plan.
type Proxy struct {
	target *url.URL
	ln     net.Listener
	srv    *http.Server
	client *http.Client

	mu     sync.Mutex
	seq    int
	plans  []*Run
	global *Run // requests outside every plan's scope
}

// New starts a proxy on a free loopback port in front of target (a base
// URL such as http://127.0.0.1:8181/). Close stops it.
func New(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: target %q: %w", target, err)
	}
	if u.Scheme != "http" || u.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q: want http://host:port", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: %w", err)
	}
	p := &Proxy{
		target: u,
		ln:     ln,
		client: &http.Client{Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
		}},
		global: newRun(Plan{}),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL, http://127.0.0.1:<port>/.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() + "/" }

// Close stops the proxy, cutting the connections in progress.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.client.CloseIdleConnections()
	return err
}

// Start activates plan and returns its Run, which records the plan's events
// until Stop. A plan whose scope overlaps an active one's is taken as
// written; the first active plan whose scope matches a request gets it.
func (p *Proxy) Start(plan Plan) *Run {
	r := newRun(plan)
	r.proxy = p
	p.mu.Lock()
	p.plans = append(p.plans, r)
	p.mu.Unlock()
	return r
}

// Unscoped returns the events of requests outside every active plan's scope.
func (p *Proxy) Unscoped() []Event { return p.global.Events() }

// Run is an active Plan: its rules' state and the events of its scope.
type Run struct {
	plan  Plan
	proxy *Proxy

	mu      sync.Mutex
	rng     *rand.Rand
	matched []int // per rule: candidate requests seen
	fired   []int // per rule: times fired
	events  []Event
	stopped bool
	late    sync.WaitGroup // FailThenForward requests not yet forwarded
}

func newRun(plan Plan) *Run {
	return &Run{
		plan:    plan,
		rng:     rand.New(rand.NewPCG(plan.Seed, plan.Seed^0x6a09e667f3bcc909)),
		matched: make([]int, len(plan.Rules)),
		fired:   make([]int, len(plan.Rules)),
	}
}

// Stop deactivates the plan: later requests in its scope pass untouched
// (and are recorded as unscoped). Its events stay readable. A request in
// flight finishes under the plan.
func (r *Run) Stop() {
	if r.proxy == nil {
		return
	}
	p := r.proxy
	p.mu.Lock()
	for i, q := range p.plans {
		if q == r {
			p.plans = append(p.plans[:i], p.plans[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// Wait waits until every request delayed by FailThenForward has reached
// the server and been answered.
func (r *Run) Wait() { r.late.Wait() }

// Events returns the plan's events so far in arrival order.
func (r *Run) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Fired returns the events on which a rule fired.
func (r *Run) Fired() []Event {
	var out []Event
	for _, e := range r.Events() {
		if e.Fired() {
			out = append(out, e)
		}
	}
	return out
}

// Count returns how many of the plan's requests match method ("" any) and
// the path pattern ("" any).
func (r *Run) Count(method, pattern string) int {
	n := 0
	for _, e := range r.Events() {
		if (method == "" || e.Method == method) && Match(pattern, e.Path) {
			n++
		}
	}
	return n
}

// decide returns the rule that fires on a request, if any, and records it.
func (r *Run) decide(method, path string) (string, Fault, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, rule := range r.plan.Rules {
		if rule.Method != "" && !strings.EqualFold(rule.Method, method) {
			continue
		}
		if !Match(rule.Path, path) {
			continue
		}
		if rule.After != "" && !r.hasFired(rule.After) {
			continue
		}
		r.matched[i]++
		limit := rule.Times
		if limit == 0 && rule.Nth > 0 {
			limit = 1
		}
		if limit > 0 && r.fired[i] >= limit {
			continue
		}
		if rule.Nth > 0 && r.matched[i] < rule.Nth {
			continue
		}
		if rule.Prob > 0 && r.rng.Float64() >= rule.Prob {
			continue
		}
		r.fired[i]++
		name := rule.Name
		if name == "" {
			name = fmt.Sprintf("rule%d", i+1)
		}
		return name, rule.Fault, true
	}
	return "", Fault{}, false
}

func (r *Run) hasFired(name string) bool {
	for i, rule := range r.plan.Rules {
		if rule.Name == name && r.fired[i] > 0 {
			return true
		}
	}
	return false
}

func (r *Run) record(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

// landedLate fills in the server's answer to a late-forwarded request.
func (r *Run) landedLate(seq, status int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.events {
		if r.events[i].Seq == seq {
			r.events[i].Upstream = status
			if err != nil {
				r.events[i].Err = "late forward: " + err.Error()
			}
		}
	}
}

// Match reports whether path matches pattern (Rule.Path's syntax).
func Match(pattern, path string) bool {
	if pattern == "" {
		return true
	}
	ps := strings.Split(strings.Trim(pattern, "/"), "/")
	xs := strings.Split(strings.Trim(path, "/"), "/")
	if strings.Trim(path, "/") == "" {
		xs = nil
	}
	for i, p := range ps {
		if p == "**" && i == len(ps)-1 {
			return true
		}
		if i >= len(xs) {
			return false
		}
		if p != "*" && p != xs[i] {
			return false
		}
	}
	return len(xs) == len(ps)
}

// ServeHTTP applies the plan the request falls in and forwards it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	path := req.URL.Path
	p.mu.Lock()
	p.seq++
	seq := p.seq
	run := p.global
	for _, r := range p.plans {
		if Match(r.plan.Scope, path) {
			run = r
			break
		}
	}
	p.mu.Unlock()

	ev := Event{Seq: seq, Method: req.Method, Path: path}
	name, fault, fired := "", Fault{}, false
	if run != p.global {
		name, fault, fired = run.decide(req.Method, path)
	}
	if fired {
		ev.Rule, ev.Fault = name, fault
	}
	recorded := false
	defer func() {
		if !recorded {
			run.record(ev)
		}
	}()

	body, err := io.ReadAll(req.Body)
	if err != nil {
		ev.Err = "reading the request: " + err.Error()
		return
	}

	switch fault.Action {
	case FailBefore:
		ev.Status = fault.Status
		writeFault(w, fault)
		return
	case ResetBefore:
		reset(w)
		return
	case FailThenForward:
		ev.Status = fault.Status
		writeFault(w, fault)
		// NB: the late request must not depend on the client's request,
		// which ends when this handler returns.
		out := req.Clone(context.Background())
		run.record(ev)
		recorded = true
		run.late.Add(1)
		go func() {
			defer run.late.Done()
			time.Sleep(fault.Delay)
			resp, err := p.forward(context.Background(), out, body)
			status := 0
			if err == nil {
				status = resp.status
			}
			run.landedLate(seq, status, err)
		}()
		return
	case DelayBefore:
		select {
		case <-time.After(fault.Delay):
		case <-req.Context().Done():
			ev.Err = "client gone before forwarding"
			return
		}
	}

	// NB: once a request is forwarded under an "after" fault, it completes
	// on the server even when the client hangs up: that is the case under
	// test (the commit landed, its answer did not).
	ctx := req.Context()
	if fired && fault.Action != DelayBefore {
		ctx = context.WithoutCancel(ctx)
	}
	resp, err := p.forward(ctx, req, body)
	if err != nil {
		ev.Err = err.Error()
		if fault.Action == Pass || fault.Action == DelayBefore {
			ev.Status = http.StatusBadGateway
			writeFault(w, Fault{Status: http.StatusBadGateway})
		}
		return
	}
	ev.Upstream = resp.status

	switch fault.Action {
	case FailAfter:
		ev.Status = fault.Status
		writeFault(w, fault)
		return
	case ResetAfter:
		reset(w)
		return
	case DelayAfter:
		select {
		case <-time.After(fault.Delay):
		case <-req.Context().Done():
			ev.Err = "client gone while the answer was held"
			return
		}
	}
	ev.Status = resp.status
	for k, vs := range resp.header {
		if hopHeader(k) {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (p *Proxy) forward(ctx context.Context, in *http.Request, body []byte) (*answer, error) {
	u := *p.target
	u.Path = strings.TrimSuffix(p.target.Path, "/") + in.URL.Path
	u.RawPath = ""
	if in.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(p.target.EscapedPath(), "/") + in.URL.RawPath
	}
	u.RawQuery = in.URL.RawQuery
	out, err := http.NewRequestWithContext(ctx, in.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, vs := range in.Header {
		if hopHeader(k) {
			continue
		}
		out.Header[k] = append([]string(nil), vs...)
	}
	resp, err := p.client.Do(out)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("reading the server's answer: %w", err)
	}
	return &answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

func hopHeader(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer",
		"Transfer-Encoding", "Upgrade", "Content-Length":
		return true
	}
	return false
}

func writeFault(w http.ResponseWriter, f Fault) {
	text := http.StatusText(f.Status)
	switch f.Body {
	case JSONBody:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, `{"error":{"message":"injected by faultproxy: %s","type":"ServiceFailureException","code":%d}}`, text, f.Status)
	case EmptyBody:
		w.WriteHeader(f.Status)
	default:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(f.Status)
		fmt.Fprintf(w, "<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s</h1></center>\r\n</body>\r\n</html>\r\n",
			f.Status, text, f.Status, text)
	}
}

// reset closes the client's connection with a TCP RST (SO_LINGER 0).
func reset(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		// Not HTTP/1 (the proxy serves only HTTP/1): cut the answer short.
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}
