package faultproxy

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server counts the requests that reach it by "METHOD path".
type server struct {
	mu   sync.Mutex
	seen map[string]int
}

func newServer(t *testing.T) (*server, *httptest.Server) {
	s := &server{seen: map[string]int{}}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.seen[r.Method+" "+r.URL.Path]++
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Header.Get("X-Test"))
		io.WriteString(w, `{"body":"`+string(b)+`","query":"`+r.URL.RawQuery+`"}`)
	}))
	t.Cleanup(hs.Close)
	return s, hs
}

func (s *server) count(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[key]
}

func newProxy(t *testing.T, target string) *Proxy {
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func do(t *testing.T, c *http.Client, method, url, body string) (int, string, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Test", "hello")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, path string
		want          bool
	}{
		{"", "/anything", true},
		{"/v1/namespaces/*/tables/*", "/v1/namespaces/n1/tables/t", true},
		{"/v1/namespaces/*/tables/*", "/v1/namespaces/n1/tables", false},
		{"/v1/namespaces/*/tables/*", "/v1/namespaces/n1/tables/t/metrics", false},
		{"/v1/namespaces/n1/**", "/v1/namespaces/n1", true},
		{"/v1/namespaces/n1/**", "/v1/namespaces/n1/tables/t", true},
		{"/v1/namespaces/n1/**", "/v1/namespaces/n10/tables/t", false},
		{"/v1/config", "/v1/config", true},
		{"/v1/config", "/v1/config/x", false},
		{"/**", "/", true},
	} {
		if got := Match(c.pattern, c.path); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.path, got, c.want)
		}
	}
}

// TestActions checks, for each action, what the server saw and what the
// client got.
func TestActions(t *testing.T) {
	const commit = "/v1/namespaces/n/tables/t"
	for _, c := range []struct {
		fault      Fault
		landed     bool // the server saw the request
		wantStatus int  // 0: the client gets an error
	}{
		{Fault{Action: Pass}, true, 200},
		{Fault{Action: FailBefore, Status: 503}, false, 503},
		{Fault{Action: FailBefore, Status: 500, Body: JSONBody}, false, 500},
		{Fault{Action: FailAfter, Status: 504}, true, 504},
		{Fault{Action: FailAfter, Status: 502, Body: EmptyBody}, true, 502},
		{Fault{Action: ResetBefore}, false, 0},
		{Fault{Action: ResetAfter}, true, 0},
		{Fault{Action: DelayAfter, Delay: 300 * time.Millisecond}, true, 0}, // past the client's timeout
		{Fault{Action: DelayBefore, Delay: 10 * time.Millisecond}, true, 200},
		{Fault{Action: FailThenForward, Status: 504, Delay: 50 * time.Millisecond}, true, 504},
	} {
		t.Run(c.fault.String(), func(t *testing.T) {
			srv, hs := newServer(t)
			p := newProxy(t, hs.URL+"/")
			run := p.Start(Plan{Scope: "/v1/namespaces/n/**", Rules: []Rule{
				{Name: "commit", Method: "POST", Path: "/v1/namespaces/*/tables/*", Nth: 1, Fault: c.fault},
			}})
			client := &http.Client{Timeout: 150 * time.Millisecond}
			status, body, err := do(t, client, "POST", p.URL()+strings.TrimPrefix(commit, "/")+"?a=1", "x")
			if c.wantStatus == 0 {
				if err == nil {
					t.Fatalf("client got %d %q, want an error", status, body)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if status != c.wantStatus {
					t.Fatalf("client got %d %q, want %d", status, body, c.wantStatus)
				}
				if status == 200 && body != `{"body":"x","query":"a=1"}` {
					t.Fatalf("forwarded answer %q", body)
				}
			}
			if c.fault.Action == ResetBefore || c.fault.Action == ResetAfter {
				if !errors.Is(err, syscall.ECONNRESET) && !strings.Contains(err.Error(), "EOF") {
					t.Errorf("client error %v, want a reset connection", err)
				}
			}
			// The held answer of DelayAfter completes on the server even
			// though the client gave up.
			deadline := time.Now().Add(2 * time.Second)
			for c.landed && srv.count("POST "+commit) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := srv.count("POST " + commit); got != map[bool]int{true: 1, false: 0}[c.landed] {
				t.Errorf("server saw the request %d times, want landed=%v", got, c.landed)
			}
			// The rule fired once: a second request passes.
			status, _, err = do(t, &http.Client{}, "POST", p.URL()+strings.TrimPrefix(commit, "/"), "y")
			if err != nil || status != 200 {
				t.Errorf("second request: %d %v, want a plain 200", status, err)
			}
			run.Wait()
			deadline = time.Now().Add(time.Second)
			for len(run.Events()) < 2 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			evs := run.Events()
			if len(evs) != 2 {
				t.Fatalf("events %v, want 2", evs)
			}
			if c.fault.Action != Pass && (evs[0].Rule != "commit" || evs[1].Fired()) {
				t.Errorf("events %v: want the rule to fire on the first only", evs)
			}
			if evs[0].Landed() != c.landed {
				t.Errorf("event %v: Landed() = %v, want %v", evs[0], evs[0].Landed(), c.landed)
			}
		})
	}
}

func TestHeadersForwarded(t *testing.T) {
	_, hs := newServer(t)
	p := newProxy(t, hs.URL)
	req, _ := http.NewRequest("GET", p.URL()+"v1/config", nil)
	req.Header.Set("X-Test", "abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Echo"); got != "abc" {
		t.Errorf("the server saw X-Test %q, want abc", got)
	}
	if got := len(p.Unscoped()); got != 1 {
		t.Errorf("unscoped events: %d, want 1", got)
	}
}

// TestNthAfterTimesScope: Nth counts matching requests only, After arms a
// rule, Times bounds it, and plans see only their scope.
func TestNthAfterTimesScope(t *testing.T) {
	srv, hs := newServer(t)
	p := newProxy(t, hs.URL+"/")
	run := p.Start(Plan{Scope: "/v1/namespaces/a/**", Rules: []Rule{
		{Name: "lost", Method: "POST", Path: "/v1/namespaces/*/tables/*", Nth: 2, Fault: Fault{Action: FailAfter, Status: 504}},
		{Name: "outage", After: "lost", Times: 2, Fault: Fault{Action: FailBefore, Status: 503}},
	}})
	other := p.Start(Plan{Scope: "/v1/namespaces/b/**"})
	c := &http.Client{}
	get := func(ns string) int {
		s, _, err := do(t, c, "GET", p.URL()+"v1/namespaces/"+ns+"/tables/t", "")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	post := func(ns string) int {
		s, _, err := do(t, c, "POST", p.URL()+"v1/namespaces/"+ns+"/tables/t", "")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	got := []int{get("a"), post("a"), get("b"), post("b"), get("a"), post("a"), get("a"), post("a"), get("a"), post("a")}
	want := []int{200, 200, 200, 200, 200, 504, 503, 503, 200, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
	if n := srv.count("POST /v1/namespaces/a/tables/t"); n != 3 {
		t.Errorf("server saw %d commits in a, want 3 (the lost one landed, the outage ones did not)", n)
	}
	if n := run.Count("POST", "/v1/namespaces/*/tables/*"); n != 4 {
		t.Errorf("plan a counted %d commits, want 4", n)
	}
	if n := len(other.Events()); n != 2 {
		t.Errorf("plan b saw %d events, want 2", n)
	}
	if n := len(run.Fired()); n != 3 {
		t.Errorf("plan a fired %d times, want 3: %v", n, run.Events())
	}
	run.Stop()
	if s := post("a"); s != 200 {
		t.Errorf("after Stop: %d", s)
	}
	if n := len(p.Unscoped()); n != 1 {
		t.Errorf("after Stop the request is unscoped: %d unscoped events", n)
	}
}

// TestProbSeeded: the same seed fires on the same requests.
func TestProbSeeded(t *testing.T) {
	_, hs := newServer(t)
	p := newProxy(t, hs.URL+"/")
	pattern := func(seed uint64) string {
		run := p.Start(Plan{Seed: seed, Rules: []Rule{{Prob: 0.3, Fault: Fault{Action: FailBefore, Status: 500}}}})
		defer run.Stop()
		var b strings.Builder
		for i := 0; i < 40; i++ {
			s, _, err := do(t, &http.Client{}, "GET", p.URL()+"x", "")
			if err != nil {
				t.Fatal(err)
			}
			if s == 500 {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b, c := pattern(7), pattern(7), pattern(8)
	if a != b {
		t.Errorf("seed 7 gave %s then %s", a, b)
	}
	if a == c {
		t.Errorf("seeds 7 and 8 gave the same %s", a)
	}
	if n := strings.Count(a, "x"); n == 0 || n == 40 {
		t.Errorf("probability 0.3 fired %d of 40 times", n)
	}
}
