package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floedata/floe/pipeline"
)

// fakeClock is a manual clock: time moves only with Advance.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	created chan struct{} // one value per NewTimer
}

type fakeTimer struct {
	c       chan time.Time
	at      time.Time
	clock   *fakeClock
	stopped bool
	fired   bool
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), created: make(chan struct{}, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) pipeline.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d), clock: c}
	if d <= 0 {
		t.fired = true
		t.c <- c.now
	}
	c.timers = append(c.timers, t)
	c.created <- struct{}{}
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	active := !t.stopped && !t.fired
	t.stopped = true
	return active
}

// Advance moves the clock and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if !t.stopped && !t.fired && !t.at.After(c.now) {
			t.fired = true
			t.c <- c.now
		}
	}
}

// waitTimer waits for the scheduler to arm its timer for the time at
// (it may first arm one from a state in which it had not yet seen every
// run end; it replaces that one once it has).
func (c *fakeClock) waitTimer(t *testing.T, at time.Time) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	var armed []time.Time
	for {
		c.mu.Lock()
		armed = armed[:0]
		for _, tm := range c.timers {
			if !tm.stopped && !tm.fired {
				armed = append(armed, tm.at)
			}
		}
		c.mu.Unlock()
		if len(armed) > 1 {
			t.Fatalf("%d timers armed at once", len(armed))
		}
		if len(armed) == 1 && armed[0].Equal(at) {
			return
		}
		select {
		case <-c.created:
		case <-deadline:
			t.Fatalf("the scheduler armed no timer for %s (armed: %v)", at.Format("15:04:05.000"), armed)
		}
	}
}

// after returns the clock's start plus d.
func (c *fakeClock) at(d time.Duration) time.Time {
	return time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).Add(d)
}

// fakeRuns is a RunStep whose runs block until the test ends them, and
// which checks the scheduler's promises at every start.
type fakeRuns struct {
	t        *testing.T
	p        *pipeline.Pipeline
	clock    *fakeClock
	mu       sync.Mutex
	running  map[string]bool
	since    map[string]time.Time // start of the run in progress
	log      []string
	started  chan string
	finish   map[string]chan string // outcome kind to end the run with
	blocked  chan string
	failures []string
}

func newFakeRuns(t *testing.T, p *pipeline.Pipeline, clock *fakeClock) *fakeRuns {
	f := &fakeRuns{t: t, p: p, clock: clock, running: map[string]bool{}, since: map[string]time.Time{}, started: make(chan string, 100),
		finish: map[string]chan string{}, blocked: make(chan string, 100)}
	for _, s := range p.Steps {
		f.finish[s.Name] = make(chan string)
	}
	return f
}

func (f *fakeRuns) run(ctx context.Context, s *pipeline.Step) pipeline.Outcome {
	f.mu.Lock()
	if f.running[s.Name] {
		f.failures = append(f.failures, fmt.Sprintf("%s started while a run of it was in progress", s.Name))
	}
	now := f.clock.Now()
	for _, u := range f.p.Upstream(s) {
		// NB: runs decided in one pass start concurrently, so only a run of
		// the upstream step that began earlier is a broken promise here;
		// TestDispatch checks the decisions of one pass.
		if f.running[u] && f.since[u].Before(now) {
			f.failures = append(f.failures, fmt.Sprintf("%s started while its upstream %s was running", s.Name, u))
		}
	}
	f.running[s.Name] = true
	f.since[s.Name] = now
	f.log = append(f.log, fmt.Sprintf("%s@%s", s.Name, f.clock.Now().Format("15:04:05")))
	f.mu.Unlock()
	f.started <- s.Name
	o := pipeline.Outcome{Step: s.Name, Started: f.clock.Now()}
	select {
	case kind := <-f.finish[s.Name]:
		o.Kind = kind
		if kind == pipeline.OutcomeError {
			o.Err = errors.New("boom")
		}
	case <-ctx.Done():
		o.Kind, o.Err = pipeline.OutcomeAborted, ctx.Err()
	}
	f.mu.Lock()
	f.running[s.Name] = false
	f.mu.Unlock()
	return o
}

func (f *fakeRuns) block(_ context.Context, s *pipeline.Step, upstream string) pipeline.Outcome {
	f.mu.Lock()
	f.log = append(f.log, fmt.Sprintf("%s@%s blocked by %s", s.Name, f.clock.Now().Format("15:04:05"), upstream))
	f.mu.Unlock()
	f.blocked <- s.Name
	return pipeline.Outcome{Step: s.Name, Kind: pipeline.OutcomeBlocked, Err: pipeline.ErrUpstreamFailed}
}

// expectStarts waits for exactly these runs to start (in any order).
func (f *fakeRuns) expectStarts(names ...string) {
	f.t.Helper()
	var got []string
	for range names {
		select {
		case n := <-f.started:
			got = append(got, n)
		case <-time.After(10 * time.Second):
			f.t.Fatalf("waiting for %v to start, got %v", names, got)
		}
	}
	sort.Strings(got)
	want := append([]string{}, names...)
	sort.Strings(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		f.t.Fatalf("started %v, want %v", got, want)
	}
}

func (f *fakeRuns) end(name, kind string) {
	f.t.Helper()
	select {
	case f.finish[name] <- kind:
	case <-time.After(10 * time.Second):
		f.t.Fatalf("%s is not running", name)
	}
}

func (f *fakeRuns) check() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.failures {
		f.t.Error(m)
	}
}

// schedulePipeline: a -> b (b reads a's destination), c independent.
func schedulePipeline(t *testing.T) *pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.New("test", []*pipeline.Step{
		{Name: "b", Sources: []string{"ns.a"}, Destinations: []string{"ns.b"}, Every: 10 * time.Minute},
		{Name: "a", Sources: []string{"ns.src"}, Destinations: []string{"ns.a"}, Every: 10 * time.Minute},
		{Name: "c", Sources: []string{"ns.src"}, Destinations: []string{"ns.c"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type schedTest struct {
	clock  *fakeClock
	runs   *fakeRuns
	cancel context.CancelFunc
	done   chan error
}

func startScheduler(t *testing.T, p *pipeline.Pipeline, jitter float64, random func() float64) *schedTest {
	clock := newFakeClock()
	runs := newFakeRuns(t, p, clock)
	ctx, cancel := context.WithCancel(context.Background())
	sc := &pipeline.Scheduler{Pipeline: p, Every: 5 * time.Minute, Jitter: jitter, Rand: random, Clock: clock,
		RunStep: runs.run, Blocked: runs.block, Logger: discardLogger()}
	st := &schedTest{clock: clock, runs: runs, cancel: cancel, done: make(chan error, 1)}
	go func() { st.done <- sc.Run(ctx) }()
	return st
}

func (st *schedTest) stop(t *testing.T) {
	t.Helper()
	st.cancel()
	select {
	case err := <-st.done:
		if err != nil {
			t.Fatalf("Run after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the scheduler did not stop")
	}
	st.runs.check()
}

func TestSchedulerOrderAndIntervals(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := schedulePipeline(t)
	st := startScheduler(t, p, -1, nil)
	r := st.runs
	// At the start a and c run; b waits for a.
	r.expectStarts("a", "c")
	r.end("c", pipeline.OutcomeIncremental)
	r.end("a", pipeline.OutcomeIncremental)
	r.expectStarts("b")
	r.end("b", pipeline.OutcomeSkipped)
	// c (every 5m, the default) is next.
	st.clock.waitTimer(t, st.clock.at(5*time.Minute))
	st.clock.Advance(5 * time.Minute)
	r.expectStarts("c")
	r.end("c", pipeline.OutcomeIncremental)
	// At +10m all three are due: a and c start, b after a.
	st.clock.waitTimer(t, st.clock.at(10*time.Minute))
	st.clock.Advance(5 * time.Minute)
	r.expectStarts("a", "c")
	r.end("a", pipeline.OutcomeFull)
	r.expectStarts("b")
	r.end("c", pipeline.OutcomeIncremental)
	r.end("b", pipeline.OutcomeIncremental)
	st.stop(t)
	want := "[a@00:00:00 c@00:00:00 b@00:00:00 c@00:05:00 a@00:10:00 c@00:10:00 b@00:10:00]"
	if got := sortedWithinTime(r.log); got != want {
		t.Fatalf("runs %s\nwant %s", got, want)
	}
}

// sortedWithinTime sorts runs that started at the same time by name after
// the first, keeping dependants (b) after a: enough to compare logs of
// concurrent starts.
func sortedWithinTime(log []string) string {
	out := append([]string{}, log...)
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := out[i][len(out[i])-8:], out[j][len(out[j])-8:]
		if ti != tj {
			return ti < tj
		}
		rank := func(s string) int {
			switch s[0] {
			case 'a':
				return 0
			case 'c':
				return 1
			}
			return 2
		}
		return rank(out[i]) < rank(out[j])
	})
	return fmt.Sprint(out)
}

func TestSchedulerNeverOverlaps(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := schedulePipeline(t)
	st := startScheduler(t, p, -1, nil)
	r := st.runs
	r.expectStarts("a", "c")
	r.end("c", pipeline.OutcomeIncremental)
	// a takes 25 minutes: c keeps its schedule, a does not start again, b waits.
	for i := 1; i <= 5; i++ {
		st.clock.waitTimer(t, st.clock.at(time.Duration(i)*5*time.Minute))
		st.clock.Advance(5 * time.Minute)
		r.expectStarts("c")
		r.end("c", pipeline.OutcomeIncremental)
	}
	select {
	case n := <-r.started:
		t.Fatalf("%s started while a was still running", n)
	default:
	}
	r.end("a", pipeline.OutcomeIncremental)
	// b was due since the start: it runs now, before a's next run. a is
	// overdue (its run began 25m ago, every 10m): it runs again once, right
	// away, concurrently with b, which reads what a committed.
	r.expectStarts("b", "a")
	r.end("a", pipeline.OutcomeIncremental)
	r.end("b", pipeline.OutcomeIncremental)
	st.stop(t)
}

func TestSchedulerJitter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p, err := pipeline.New("test", []*pipeline.Step{{Name: "a", Sources: []string{"ns.src"}, Destinations: []string{"ns.a"}, Every: 10 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	// The jitter is Rand() * Jitter * interval, added to each wait.
	for _, tc := range []struct {
		jitter, rand float64
		want         time.Duration
	}{
		{0, 0.5, 10*time.Minute + 30*time.Second}, // the default: 10%
		{0.2, 0.25, 10*time.Minute + 30*time.Second},
		{0.1, 0.999, 10*time.Minute + 59940*time.Millisecond},
		{-1, 0.9, 10 * time.Minute}, // none
	} {
		t.Run(fmt.Sprint(tc.jitter, tc.rand), func(t *testing.T) {
			st := startScheduler(t, p, tc.jitter, func() float64 { return tc.rand })
			start := st.clock.Now()
			st.runs.expectStarts("a")
			st.runs.end("a", pipeline.OutcomeIncremental)
			st.clock.waitTimer(t, start.Add(tc.want))
			st.clock.Advance(tc.want - time.Millisecond)
			select {
			case <-st.runs.started:
				t.Fatal("started before its time")
			default:
			}
			st.clock.Advance(time.Millisecond)
			st.runs.expectStarts("a")
			st.runs.end("a", pipeline.OutcomeIncremental)
			st.stop(t)
		})
	}
}

func TestSchedulerBlocksDownstreamOfFailure(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := schedulePipeline(t)
	st := startScheduler(t, p, -1, nil)
	r := st.runs
	r.expectStarts("a", "c")
	r.end("c", pipeline.OutcomeIncremental)
	r.end("a", pipeline.OutcomeError)
	// b is not run while a's last run failed.
	select {
	case n := <-r.blocked:
		if n != "b" {
			t.Fatalf("blocked %s", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b was neither run nor blocked")
	}
	// At +10m a runs again and succeeds; b, due too, runs after it.
	st.clock.waitTimer(t, st.clock.at(5*time.Minute))
	st.clock.Advance(5 * time.Minute)
	r.expectStarts("c")
	r.end("c", pipeline.OutcomeIncremental)
	st.clock.waitTimer(t, st.clock.at(10*time.Minute))
	st.clock.Advance(5 * time.Minute)
	r.expectStarts("a", "c")
	r.end("c", pipeline.OutcomeIncremental)
	r.end("a", pipeline.OutcomeIncremental)
	r.expectStarts("b")
	r.end("b", pipeline.OutcomeIncremental)
	st.stop(t)
}

func TestSchedulerStopCancelsRunsAndWaits(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p := schedulePipeline(t)
	st := startScheduler(t, p, -1, nil)
	st.runs.expectStarts("a", "c")
	// Both runs are in progress: stopping cancels them and waits for both.
	st.stop(t)
	st.runs.mu.Lock()
	defer st.runs.mu.Unlock()
	for n, running := range st.runs.running {
		if running {
			t.Fatalf("Run returned while %s was still running", n)
		}
	}
}

func TestSchedulerNeedsIntervals(t *testing.T) {
	p := schedulePipeline(t)
	sc := &pipeline.Scheduler{Pipeline: p, RunStep: func(context.Context, *pipeline.Step) pipeline.Outcome {
		t.Fatal("ran")
		return pipeline.Outcome{}
	}}
	err := sc.Run(context.Background())
	if !errors.Is(err, pipeline.ErrInvalidPipeline) || err.Error() != "invalid pipeline: test: no schedule for c (no every: or target_lag: of its own and no default interval)" {
		t.Fatalf("got %v", err)
	}
	sc.Every = time.Minute
	iv, err := sc.Intervals()
	if err != nil || iv["a"] != 10*time.Minute || iv["c"] != time.Minute {
		t.Fatalf("%v %v", iv, err)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
