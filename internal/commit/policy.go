package commit

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
)

// Table properties that bound the attempts of a change, as Iceberg defines
// them (defaults as Iceberg's Java implementation).
const (
	PropNumRetries   = "commit.retry.num-retries"
	PropMinWaitMs    = "commit.retry.min-wait-ms"
	PropMaxWaitMs    = "commit.retry.max-wait-ms"
	PropTotalTimeout = "commit.retry.total-timeout-ms"

	DefaultNumRetries   = 4
	DefaultMinWait      = 100 * time.Millisecond
	DefaultMaxWait      = 60 * time.Second
	DefaultTotalTimeout = 30 * time.Minute
)

// Retry overrides the table's retry properties (zero fields: the table's,
// else the defaults above).
type Retry struct {
	Attempts     int // attempts in all, the first one included
	MinWait      time.Duration
	MaxWait      time.Duration
	TotalTimeout time.Duration
}

// policy is the retry budget of one change.
type policy struct {
	attempts         int
	minWait, maxWait time.Duration
	total            time.Duration
}

func policyFor(props iceberg.Properties, o Options) policy {
	ms := func(key string, def time.Duration) time.Duration {
		if v, err := strconv.ParseInt(props.Get(key, ""), 10, 64); err == nil && v >= 0 {
			return time.Duration(v) * time.Millisecond
		}
		return def
	}
	p := policy{attempts: DefaultNumRetries + 1, minWait: ms(PropMinWaitMs, DefaultMinWait),
		maxWait: ms(PropMaxWaitMs, DefaultMaxWait), total: ms(PropTotalTimeout, DefaultTotalTimeout)}
	if v, err := strconv.Atoi(props.Get(PropNumRetries, "")); err == nil && v >= 0 {
		p.attempts = v + 1
	}
	r := o.Retry
	if o.MaxAttempts > 0 && r.Attempts == 0 {
		r.Attempts = o.MaxAttempts
	}
	if r.Attempts > 0 {
		p.attempts = r.Attempts
	}
	if r.MinWait > 0 {
		p.minWait = r.MinWait
	}
	if r.MaxWait > 0 {
		p.maxWait = r.MaxWait
	}
	if r.TotalTimeout > 0 {
		p.total = r.TotalTimeout
	}
	if p.maxWait < p.minWait {
		p.maxWait = p.minWait
	}
	return p
}

// wait returns the pause before retry n (1 = the first retry):
// exponential from minWait, capped at maxWait, with up to 50% jitter
// either side so that racing writers spread out.
func (p policy) wait(n int) time.Duration {
	d := p.minWait
	for i := 1; i < n && d < p.maxWait; i++ {
		d *= 2
	}
	d = min(d, p.maxWait)
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(rand.Int64N(int64(d)))
}

// sleep waits d or until ctx ends; it reports whether the wait completed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Backoff waits before attempt+1 with the default policy, cut short when
// ctx ends.
func Backoff(ctx context.Context, attempt int) {
	sleep(ctx, policyFor(nil, Options{}).wait(attempt))
}
