package pipeline

import (
	"fmt"
	"testing"
	"time"
)

// TestDispatch checks the decisions of one scheduling pass: which due
// steps start, which wait, which are blocked.
func TestDispatch(t *testing.T) {
	// a -> b -> c, a -> d, e alone.
	p, err := New("test", []*Step{
		{Name: "a", Sources: []string{"ns.src"}, Destinations: []string{"ns.a"}},
		{Name: "b", Sources: []string{"ns.a"}, Destinations: []string{"ns.b"}},
		{Name: "c", Sources: []string{"ns.b"}, Destinations: []string{"ns.c"}},
		{Name: "d", Sources: []string{"ns.a"}, Destinations: []string{"ns.d"}},
		{Name: "e", Sources: []string{"ns.src"}, Destinations: []string{"ns.e"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	type st struct {
		next            time.Duration // from t0
		running, failed bool
	}
	for _, tc := range []struct {
		name   string
		now    time.Duration
		states map[string]st
		want   string
	}{
		{"all due at once: sources first, the rest waits", 0,
			map[string]st{}, "start [a e] blocked []"},
		{"not due yet", 0,
			map[string]st{"a": {next: time.Minute}, "b": {next: time.Minute}, "c": {next: time.Minute}, "d": {next: time.Minute}, "e": {next: time.Second}},
			"start [] blocked []"},
		{"an upstream run in progress holds its dependants", 10 * time.Minute,
			map[string]st{"a": {running: true}, "c": {next: time.Hour}, "e": {next: time.Hour}},
			"start [] blocked []"},
		{"a dependant that waited goes before the source's next run, which runs along", 10 * time.Minute,
			map[string]st{"a": {next: 5 * time.Minute}, "b": {next: 0}, "c": {next: time.Hour}, "d": {next: time.Hour}, "e": {next: time.Hour}},
			"start [b a] blocked []"},
		{"a source due before its dependant goes first", 10 * time.Minute,
			map[string]st{"a": {next: 0}, "b": {next: 5 * time.Minute}, "c": {next: time.Hour}, "d": {next: time.Hour}, "e": {next: time.Hour}},
			"start [a] blocked []"},
		{"the wait passes down the chain", 10 * time.Minute,
			map[string]st{"a": {next: 0}, "b": {next: 0}, "c": {next: 0}, "d": {next: time.Hour}, "e": {next: time.Hour}},
			"start [a] blocked []"},
		{"everything downstream of a failure is blocked, others run", 10 * time.Minute,
			map[string]st{"a": {next: time.Hour, failed: true}, "b": {next: 0}, "c": {next: 0}, "d": {next: 0}, "e": {next: 0}},
			"start [e] blocked [b<-a c<-b d<-a]"},
		{"a step blocked in an earlier pass blocks its dependants", 10 * time.Minute,
			map[string]st{"a": {next: time.Hour}, "b": {next: time.Hour, failed: true}, "c": {next: 0}, "d": {next: 0}, "e": {next: time.Hour}},
			"start [d] blocked [c<-b]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			index := map[string]int{}
			var states []*scheduled
			for i, s := range p.Steps {
				index[s.Name] = i
				x := tc.states[s.Name]
				states = append(states, &scheduled{step: s, next: t0.Add(x.next), running: x.running, failed: x.failed})
			}
			sc := &Scheduler{Pipeline: p}
			start, blocked := sc.dispatch(t0.Add(tc.now), states, index)
			var names []string
			for _, i := range start {
				names = append(names, p.Steps[i].Name)
			}
			var bl []string
			for _, b := range blocked {
				bl = append(bl, p.Steps[b.i].Name+"<-"+b.upstream)
			}
			if got := fmt.Sprintf("start %v blocked %v", names, bl); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
