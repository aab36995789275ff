package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floedata/floe/pipeline"
)

// pendingFake answers Scheduler.Pending with a time the test sets.
type pendingFake struct {
	mu    sync.Mutex
	since time.Time
	asked chan struct{}
}

func (p *pendingFake) set(t time.Time) {
	p.mu.Lock()
	p.since = t
	p.mu.Unlock()
}

func (p *pendingFake) pending(context.Context, *pipeline.Step) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked <- struct{}{}
	return p.since, nil
}

// TestSchedulerTargetLag: a transform with target_lag 10m is checked
// every minute, not built while nothing is pending, and built when the
// oldest pending change's lag would come within a tenth of the target.
func TestSchedulerTargetLag(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	p, err := pipeline.New("test", []*pipeline.Step{
		{Name: "t", Sources: []string{"ns.src"}, Destinations: []string{"ns.t"}, TargetLag: 10 * time.Minute},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := pipeline.TargetLagPoll(10 * time.Minute); d != time.Minute {
		t.Fatalf("poll %s", d)
	}
	clock := newFakeClock()
	runs := newFakeRuns(t, p, clock)
	pend := &pendingFake{asked: make(chan struct{}, 100)}
	ctx, cancel := context.WithCancel(context.Background())
	sc := &pipeline.Scheduler{Pipeline: p, Clock: clock, RunStep: runs.run, Pending: pend.pending, Logger: discardLogger()}
	if _, err := sc.Intervals(); err != nil {
		t.Fatalf("a target_lag transform needs no every: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	asked := func() {
		t.Helper()
		select {
		case <-pend.asked:
		case <-time.After(10 * time.Second):
			t.Fatal("the scheduler did not look at the lag")
		}
	}
	// Up to date: checked at the start and every minute, never built.
	asked()
	for i := 1; i <= 3; i++ {
		clock.waitTimer(t, clock.at(time.Duration(i)*time.Minute))
		clock.Advance(time.Minute)
		asked()
	}
	// A change committed at +3m30s: due at +3m30s + 10m - 1m.
	pend.set(clock.at(3*time.Minute + 30*time.Second))
	clock.waitTimer(t, clock.at(4*time.Minute))
	clock.Advance(time.Minute)
	asked()
	clock.waitTimer(t, clock.at(12*time.Minute+30*time.Second))
	select {
	case n := <-runs.started:
		t.Fatalf("%s built before it was due", n)
	default:
	}
	clock.Advance(8*time.Minute + 30*time.Second)
	asked()
	runs.expectStarts("t")
	pend.set(time.Time{})
	runs.end("t", pipeline.OutcomeIncremental)
	// After the build, checked again a poll after it started.
	clock.waitTimer(t, clock.at(13*time.Minute+30*time.Second))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	runs.check()
	if got := runs.log; len(got) != 1 || got[0] != "t@00:12:30" {
		t.Fatalf("runs %v", got)
	}
}
