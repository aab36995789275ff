package commit

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// TestPolicy: the retry budget follows the table's commit.retry.*
// properties (Iceberg's defaults otherwise), Options override it, and the
// backoff grows exponentially within [min/2, max*1.5).
func TestPolicy(t *testing.T) {
	p := policyFor(nil, Options{})
	if p.attempts != 5 || p.minWait != 100*time.Millisecond || p.maxWait != time.Minute || p.total != 30*time.Minute {
		t.Fatalf("defaults %+v", p)
	}
	p = policyFor(iceberg.Properties{PropNumRetries: "2", PropMinWaitMs: "10", PropMaxWaitMs: "30", PropTotalTimeout: "1000"}, Options{})
	if p.attempts != 3 || p.minWait != 10*time.Millisecond || p.maxWait != 30*time.Millisecond || p.total != time.Second {
		t.Fatalf("from the table %+v", p)
	}
	p = policyFor(iceberg.Properties{PropNumRetries: "2"}, Options{Retry: Retry{Attempts: 9, MinWait: time.Millisecond}})
	if p.attempts != 9 || p.minWait != time.Millisecond {
		t.Fatalf("overridden %+v", p)
	}
	p = policyFor(iceberg.Properties{PropNumRetries: "junk"}, Options{})
	if p.attempts != 5 {
		t.Fatalf("a bad property must leave the default: %+v", p)
	}
	p = policy{minWait: 10 * time.Millisecond, maxWait: 80 * time.Millisecond}
	for n, base := range map[int]time.Duration{1: 10, 2: 20, 3: 40, 4: 80, 9: 80} {
		base *= time.Millisecond
		for i := 0; i < 50; i++ {
			if d := p.wait(n); d < base/2 || d >= base*3/2 {
				t.Fatalf("wait(%d) = %v, want in [%v, %v)", n, d, base/2, base*3/2)
			}
		}
	}
}
