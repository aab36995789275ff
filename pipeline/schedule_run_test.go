package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/floedata/floe/pipeline"
)

// TestSchedulerRunsRealBuilds schedules real builds (a sync, a filter
// reading its output, and an independent filter, the last two running
// concurrently) on a fake clock, and checks that each round leaves the
// outputs equal to their transforms applied to the source, that the
// dependant ran after its source in every round, and that stopping leaks
// no goroutine. Run it with -race.
func TestSchedulerRunsRealBuilds(t *testing.T) {
	e := newEnv(t)
	e.create("orders", "id long not null, status string, amount long", []string{"id"}, nil)
	e.insert("orders", []any{1, "active", 50}, []any{2, "active", 150}, []any{3, "closed", 500})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
	p := loadPipeline(t, `
transforms:
  - {name: big, type: filter, source: ns.active, destination: ns.big, filter: "amount > 100"}
  - {name: active, type: sync, source: ns.orders, destination: ns.active, key: [id], filter: "status = 'active'", columns: [id, amount]}
  - {name: all_big, type: filter, source: ns.orders, destination: ns.all_big, filter: "amount > 100", every: 30m}
`)
	clock := newFakeClock()
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger(), History: pipeline.OpenHistory(p.StatusFile)}
	var mu sync.Mutex
	var order []string
	rounds := make(chan string, 100)
	run := func(ctx context.Context, s *pipeline.Step) pipeline.Outcome {
		o := r.RunStep(ctx, s)
		mu.Lock()
		order = append(order, s.Name+"="+o.Kind)
		mu.Unlock()
		rounds <- s.Name
		return o
	}
	ctx, cancel := context.WithCancel(context.Background())
	sc := &pipeline.Scheduler{Pipeline: p, Every: 10 * time.Minute, Jitter: -1, Clock: clock, RunStep: run, Blocked: r.Blocked, Logger: discardLogger()}
	done := make(chan error, 1)
	go func() { done <- sc.Run(ctx) }()
	wait := func(names ...string) {
		t.Helper()
		for range names {
			select {
			case <-rounds:
			case <-time.After(time.Minute):
				t.Fatal("a run did not finish")
			}
		}
	}
	wait("active", "big", "all_big")
	if got := render(e.rowsOf("big")); got != "(2,150)" {
		t.Fatalf("big %s", got)
	}
	e.insert("orders", []any{4, "active", 400})
	e.update("orders", func(r []any) []any { r[1] = "closed"; return r }, 2)
	clock.waitTimer(t, clock.at(10*time.Minute))
	clock.Advance(10 * time.Minute)
	wait("active", "big")
	if got := render(e.rowsOf("big")); got != "(4,400)" {
		t.Fatalf("big after round 2: %s", got)
	}
	clock.waitTimer(t, clock.at(20*time.Minute))
	clock.Advance(10 * time.Minute)
	wait("active", "big")
	clock.waitTimer(t, clock.at(30*time.Minute))
	clock.Advance(10 * time.Minute)
	wait("active", "big", "all_big")
	if got := render(e.rowsOf("all_big")); got != "(2,'closed',150) (3,'closed',500) (4,'active',400)" {
		t.Fatalf("all_big %s", got)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	// In every round active finished before big started: big's result
	// reflects active's commit of the same round.
	var seq []string
	for _, o := range order {
		if o[:3] != "all" {
			seq = append(seq, o)
		}
	}
	want := []string{"active=full", "big=full", "active=incremental", "big=full", "active=skipped", "big=skipped", "active=skipped", "big=skipped"}
	if len(seq) != len(want) {
		t.Fatalf("runs %v, want %v", seq, want)
	}
	for i := range want {
		if seq[i] != want[i] {
			t.Fatalf("runs %v, want %v", seq, want)
		}
	}
}
