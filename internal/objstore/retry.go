package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go/middleware"
)

// backoff is jittered exponential backoff: attempt n waits a random time in
// [d/2, d] with d = min(maxWait, minWait·2^(n-1)).
type backoff struct{ minWait, maxWait time.Duration }

func (b backoff) delay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := b.maxWait
	if attempt < 40 {
		if e := b.minWait << (attempt - 1); e > 0 && e < d {
			d = e
		}
	}
	if d <= 0 {
		return 0
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// BackoffDelay implements retry.BackoffDelayer.
func (b backoff) BackoffDelay(attempt int, _ error) (time.Duration, error) {
	return b.delay(attempt), nil
}

// newRetryer returns the AWS SDK's standard retryer (5xx, throttling such as
// SlowDown, connection resets, timeouts) with floe's attempts and backoff and
// without the client-side retry quota, which would stop retrying during a
// long outage; the time budget is enforced by budgetMiddleware.
func newRetryer(p retryPolicy) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = p.maxAttempts
		o.MaxBackoff = p.maxWait
		o.Backoff = backoff{p.minWait, p.maxWait}
		o.RateLimiter = ratelimit.None
	})
}

// BudgetError is the error of a request whose retries used up the time
// budget (s3.retry.total-timeout). It wraps the last attempt's error.
type BudgetError struct {
	Budget   time.Duration
	Elapsed  time.Duration
	Attempts int
	Err      error
}

func (e *BudgetError) Error() string {
	return fmt.Sprintf("gave up after %d attempts in %v (%s %v): %v", e.Attempts, e.Elapsed.Round(time.Millisecond), KeyRetryBudget, e.Budget, e.Err)
}

func (e *BudgetError) Unwrap() error { return e.Err }

// RetryableError tells the SDK's retryer not to retry.
func (e *BudgetError) RetryableError() bool { return false }

type budgetKey struct{}

type budgetState struct {
	start    time.Time
	attempts atomic.Int32
}

// addBudget adds to an S3 operation's middleware stack the time budget of
// its retries: the operation's start is noted before the retry loop, and an
// attempt failing after the budget is spent returns a BudgetError, which the
// retryer does not retry. An operation thus ends at most one backoff and one
// attempt (s3.retry.max-wait-ms plus s3.request-timeout) after its budget.
func addBudget(budget time.Duration) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		start := middleware.InitializeMiddlewareFunc("floe/RetryBudgetStart",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				ctx = context.WithValue(ctx, budgetKey{}, &budgetState{start: time.Now()})
				return next.HandleInitialize(ctx, in)
			})
		if err := stack.Initialize.Add(start, middleware.Before); err != nil {
			return err
		}
		attempt := middleware.FinalizeMiddlewareFunc("floe/RetryBudget",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleFinalize(ctx, in)
				st, _ := ctx.Value(budgetKey{}).(*budgetState)
				if err == nil || st == nil {
					return out, md, err
				}
				n := int(st.attempts.Add(1))
				if el := time.Since(st.start); el >= budget {
					err = &BudgetError{Budget: budget, Elapsed: el, Attempts: n, Err: err}
				}
				return out, md, err
			})
		return stack.Finalize.Insert(attempt, "Retry", middleware.After)
	}
}

// retryables classify errors of reading a response body (after the SDK's
// retry loop has returned): the SDK's own rules plus truncated bodies.
var retryables = retry.IsErrorRetryables(append([]retry.IsErrorRetryable{
	retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
		if errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "unexpected EOF") {
			return aws.TrueTernary
		}
		return aws.UnknownTernary
	}),
}, retry.DefaultRetryables...))

// isTransient reports whether a failed read may succeed when tried again.
func isTransient(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return false
	}
	var be *BudgetError
	if errors.As(err, &be) {
		return false
	}
	return retryables.IsErrorRetryable(err) == aws.TrueTernary
}

// retryRead runs read until it succeeds, fails with an error that is not
// transient, or the policy's attempts or time budget are spent. It retries
// reads of response bodies, which fail after the SDK's own retries have
// returned (a reset or a stall in the middle of a download).
func retryRead[T any](ctx context.Context, p retryPolicy, read func() (T, error)) (T, error) {
	start := time.Now()
	b := backoff{p.minWait, p.maxWait}
	for attempt := 1; ; attempt++ {
		v, err := read()
		if err == nil || !isTransient(ctx, err) {
			return v, err
		}
		if attempt >= p.maxAttempts {
			return v, fmt.Errorf("gave up after %d attempts (%s): %w", attempt, KeyNumRetries, err)
		}
		wait := b.delay(attempt)
		if el := time.Since(start); el+wait >= p.budget {
			return v, &BudgetError{Budget: p.budget, Elapsed: el, Attempts: attempt, Err: err}
		}
		select {
		case <-ctx.Done():
			return v, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}
