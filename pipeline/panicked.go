package pipeline

import "time"

// panicked is the end of a run of s whose goroutine panicked (the panic
// recovered as err, see internal/safe): a failed run, reported like any
// other.
func panicked(i int, s *Step, started time.Time, err error) finished {
	return finished{i: i, outcome: Outcome{Step: s.Name, Kind: OutcomeError, Started: started, Err: err}, started: started}
}
