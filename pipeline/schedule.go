package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Clock is the time source of a Scheduler (tests use a fake one).
type Clock interface {
	Now() time.Time
	// NewTimer returns a timer that sends on its channel once d has passed.
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer of a Clock.
type Timer interface {
	C() <-chan time.Time
	// Stop stops the timer; it reports whether the timer was active.
	Stop() bool
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (SystemClock) NewTimer(d time.Duration) Timer { return sysTimer{time.NewTimer(d)} }

type sysTimer struct{ t *time.Timer }

func (t sysTimer) C() <-chan time.Time { return t.t.C }
func (t sysTimer) Stop() bool          { return t.t.Stop() }

// DefaultJitter is the fraction of a step's interval added at random to
// each wait, so that runs of many transforms or replicas spread out.
const DefaultJitter = 0.1

// Scheduler runs the steps of a pipeline repeatedly, each on its own
// interval, until its context is cancelled. Every step runs once at the
// start; afterwards a step runs again when its interval plus a random
// jitter (up to Jitter of the interval) has passed since its last run
// started, or at once if its run took longer. Runs of one step never
// overlap, and a step does not start while a step it depends on is running
// or was due before it: dependants run after their sources, and a
// dependant that waited for a run of its source goes before the source's
// next run. A step whose upstream step's
// last run failed or was blocked is not run but recorded as blocked (it is
// retried at its next time). Independent steps run concurrently.
//
// A step with a TargetLag is scheduled by freshness instead: every
// TargetLagPoll(TargetLag) the scheduler asks Pending since when its
// oldest input change missing from its outputs has waited, and builds it
// once that change's lag plus the step's last build duration would come
// within a tenth of the target; with nothing pending it asks again at the
// next poll. The lag counted is the step's own, against its direct inputs:
// in a chain, the end-to-end lag is at most the sum of the targets.
type Scheduler struct {
	// Pipeline gives the dependencies between steps. Required.
	Pipeline *Pipeline
	// Steps are the steps to run (nil = every step of Pipeline).
	Steps []*Step
	// Every is the interval of steps without their own Every.
	Every time.Duration
	// Jitter is the fraction of the interval added at random to each wait
	// (0 = DefaultJitter; negative = none).
	Jitter float64
	// Clock is the time source (nil = SystemClock).
	Clock Clock
	// Rand returns numbers in [0, 1) for the jitter (nil = math/rand/v2).
	Rand func() float64
	// RunStep runs one step (typically Runner.RunStep). Required.
	RunStep func(ctx context.Context, s *Step) Outcome
	// Blocked records that a step was not run because upstream failed
	// (typically Runner.Blocked; nil = not recorded).
	Blocked func(ctx context.Context, s *Step, upstream string) Outcome
	// Pending returns, for a step with a TargetLag, the earliest commit
	// time of its inputs' changes missing from its outputs (zero when it
	// is up to date); typically Runner.PendingSince. nil: such steps run
	// at every poll. An error builds the step (its run reports the cause).
	Pending func(ctx context.Context, s *Step) (time.Time, error)
	// Logger logs scheduling decisions (nil = slog.Default()).
	Logger *slog.Logger
}

// TargetLagPoll is how often the scheduler looks at the lag of a step with
// target lag target: a tenth of it, between 1s and 1m.
func TargetLagPoll(target time.Duration) time.Duration {
	return min(max(target/10, time.Second), time.Minute)
}

type scheduled struct {
	step     *Step
	interval time.Duration
	next     time.Time
	running  bool
	failed   bool          // the last run failed or was blocked
	lastRun  time.Duration // the duration of the last build (target lag steps)
}

type finished struct {
	i       int
	outcome Outcome
	started time.Time
	// checked is true when a target lag step was only checked: not due,
	// next is its next time.
	checked bool
	next    time.Time
}

// Intervals checks that every step has an interval and returns them by
// step name; a step without one is an error naming it.
func (sc *Scheduler) Intervals() (map[string]time.Duration, error) {
	steps := sc.steps()
	out := map[string]time.Duration{}
	var missing []string
	for _, s := range steps {
		d := s.Every
		if s.TargetLag > 0 {
			d = TargetLagPoll(s.TargetLag)
		}
		if d == 0 {
			d = sc.Every
		}
		if d <= 0 {
			missing = append(missing, s.Name)
			continue
		}
		out[s.Name] = d
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s: no schedule for %s (no every: or target_lag: of its own and no default interval)", ErrInvalidPipeline, sc.Pipeline.Name, strings.Join(missing, ", "))
	}
	return out, nil
}

func (sc *Scheduler) steps() []*Step {
	if sc.Steps != nil {
		return sc.Steps
	}
	return sc.Pipeline.Steps
}

// Run schedules the steps until ctx is cancelled. Cancelling ctx stops
// scheduling and cancels the runs in progress (each stops before
// committing, or finishes the commit it is in); Run returns nil once they
// have returned. It returns an error at once when a step has no interval.
func (sc *Scheduler) Run(ctx context.Context) error {
	intervals, err := sc.Intervals()
	if err != nil {
		return err
	}
	if sc.RunStep == nil {
		return fmt.Errorf("%w: scheduler without a RunStep function", ErrInvalidPipeline)
	}
	clock := sc.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	random := sc.Rand
	if random == nil {
		random = rand.Float64
	}
	jitter := sc.Jitter
	if jitter == 0 {
		jitter = DefaultJitter
	}
	log := sc.Logger
	if log == nil {
		log = slog.Default()
	}
	steps := sc.steps()
	index := map[string]int{}
	states := make([]*scheduled, len(steps))
	start := clock.Now()
	for i, s := range steps {
		index[s.Name] = i
		states[i] = &scheduled{step: s, interval: intervals[s.Name], next: start}
		if s.TargetLag > 0 {
			log.Info("scheduled", "transform", s.Name, "target_lag", s.TargetLag, "poll", intervals[s.Name])
		} else {
			log.Info("scheduled", "transform", s.Name, "every", intervals[s.Name])
		}
	}
	done := make(chan finished, len(steps))
	running := 0
	finish := func(f finished) {
		st := states[f.i]
		st.running = false
		running--
		if f.checked {
			st.next = f.next
			return
		}
		st.failed = f.outcome.Failed()
		if st.step.TargetLag > 0 {
			if f.outcome.Kind != OutcomeBlocked {
				st.lastRun = f.outcome.Duration
			}
			st.next = f.started.Add(st.interval)
			return
		}
		wait := st.interval
		if jitter > 0 {
			wait += time.Duration(random() * jitter * float64(st.interval))
		}
		st.next = f.started.Add(wait)
	}
	for ctx.Err() == nil {
		now := clock.Now()
		start, blocked := sc.dispatch(now, states, index)
		for _, b := range blocked {
			st := states[b.i]
			o := Outcome{Step: st.step.Name, Kind: OutcomeBlocked, Started: now,
				Err: fmt.Errorf("transform %s not run: %w (%s)", st.step.Name, ErrUpstreamFailed, b.upstream)}
			if sc.Blocked != nil {
				o = sc.Blocked(ctx, st.step, b.upstream)
			}
			st.running = true
			running++
			finish(finished{i: b.i, outcome: o, started: now})
		}
		for _, i := range start {
			st := states[i]
			st.running = true
			running++
			go func(i int, s *Step, started time.Time, lastRun time.Duration) {
				if s.TargetLag > 0 && sc.Pending != nil {
					if next, due := sc.targetDue(ctx, clock, s, lastRun); !due {
						done <- finished{i: i, started: started, checked: true, next: next}
						return
					}
				}
				done <- finished{i: i, outcome: sc.RunStep(ctx, s), started: started}
			}(i, st.step, now, st.lastRun)
		}
		var wake time.Time
		for _, st := range states {
			if !st.running && now.Before(st.next) && (wake.IsZero() || st.next.Before(wake)) {
				wake = st.next
			}
		}
		var timer Timer
		var tc <-chan time.Time
		if !wake.IsZero() {
			timer = clock.NewTimer(wake.Sub(now))
			tc = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-tc:
		case f := <-done:
			finish(f)
		}
		if timer != nil {
			timer.Stop()
		}
	}
	if running > 0 {
		log.Info("stopping: waiting for the runs in progress to stop or commit", "running", running)
	}
	for running > 0 {
		finish(<-done)
	}
	log.Info("scheduler stopped")
	return nil
}

type blockedStep struct {
	i        int
	upstream string
}

// dispatch decides which due steps start now and which are blocked by a
// failed upstream step; the others wait (for their time, or for an
// upstream run).
func (sc *Scheduler) dispatch(now time.Time, states []*scheduled, index map[string]int) (start []int, blocked []blockedStep) {
	var due []int
	for i, st := range states {
		if !st.running && !now.Before(st.next) {
			due = append(due, i)
		}
	}
	// NB: due steps are considered oldest due first, so a step that has
	// waited for its source's run goes before that source's next run (no
	// starvation when the source runs back to back); at equal times the
	// dependency order of states puts sources first.
	sort.SliceStable(due, func(x, y int) bool { return states[due[x]].next.Before(states[due[y]].next) })
	started := map[int]bool{}
	waiting := map[int]bool{}
	blockedNow := map[int]bool{}
	for _, i := range due {
		st := states[i]
		wait, failedUp := false, ""
		for _, u := range sc.Pipeline.Upstream(st.step) {
			j, ok := index[u]
			if !ok {
				continue
			}
			up := states[j]
			if up.running || started[j] || (waiting[j] && !up.next.After(st.next)) {
				wait = true
				break
			}
			if (up.failed || blockedNow[j]) && failedUp == "" {
				failedUp = u
			}
		}
		switch {
		case wait:
			waiting[i] = true // re-evaluated when the upstream run ends
		case failedUp != "":
			blockedNow[i] = true
			blocked = append(blocked, blockedStep{i: i, upstream: failedUp})
		default:
			started[i] = true
			start = append(start, i)
		}
	}
	return start, blocked
}

// targetDue decides whether a step with a target lag builds now; when not,
// next is when to look again.
func (sc *Scheduler) targetDue(ctx context.Context, clock Clock, s *Step, lastRun time.Duration) (next time.Time, due bool) {
	since, err := sc.Pending(ctx, s)
	now := clock.Now()
	poll := TargetLagPoll(s.TargetLag)
	switch {
	case err != nil:
		return time.Time{}, true
	case since.IsZero():
		return now.Add(poll), false
	}
	// NB: build so that the build ends before the lag passes the target,
	// with a tenth of the target to spare.
	at := since.Add(s.TargetLag - lastRun - s.TargetLag/10)
	if !now.Before(at) {
		return time.Time{}, true
	}
	return at, false
}
