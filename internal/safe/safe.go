// Package safe turns a Go panic in a goroutine floe starts into an error,
// so that no panic reaches a user as a crash with a stack trace: the main
// goroutine's are caught by the CLI (cli.execute), a goroutine's would
// kill the process before that.
//
// Use it at every goroutine start:
//
//	g, ctx := safe.WithContext(ctx)           // an errgroup.Group whose Go recovers
//	g.Go(func() error { ... })
//
//	go func() {
//		defer safe.Recover(func(err error) { errc <- err })
//		...
//	}()
package safe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"golang.org/x/sync/errgroup"
)

// ErrInternal is wrapped by the error a recovered panic becomes: a bug in
// floe, not in the input.
var ErrInternal = errors.New("internal error")

// EnvDebug, set to 1, adds the stack trace to a recovered panic's message.
const EnvDebug = "FLOE_DEBUG"

// PanicError is a recovered panic.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	s := fmt.Sprintf("%s: %v", ErrInternal, e.Value)
	if os.Getenv(EnvDebug) == "1" {
		s += "\n" + string(e.Stack)
	}
	return s
}

// Unwrap returns ErrInternal, and the panic's value when it is an error.
func (e *PanicError) Unwrap() []error {
	if err, ok := e.Value.(error); ok {
		return []error{ErrInternal, err}
	}
	return []error{ErrInternal}
}

// Recovered returns the error for the panic value p (from recover()).
func Recovered(p any) error { return &PanicError{Value: p, Stack: debug.Stack()} }

// Recover, deferred at the top of a goroutine, turns a panic in it into an
// error passed to report (nil: logged). The goroutine then ends normally.
func Recover(report func(error)) {
	p := recover()
	if p == nil {
		return
	}
	err := Recovered(p)
	if report == nil {
		slog.Default().Error("floe: a background task stopped", "error", err)
		return
	}
	report(err)
}

// Func returns f, with a panic in it returned as an error.
func Func(f func() error) func() error {
	return func() (err error) {
		defer Recover(func(e error) { err = e })
		return f()
	}
}

// Go runs f in a new goroutine; a panic in it is passed to report (nil:
// logged).
func Go(f func(), report func(error)) {
	go func() {
		defer Recover(report)
		f()
	}()
}

// Group is an errgroup.Group whose goroutines return their panics as
// errors.
type Group struct{ g *errgroup.Group }

// WithContext is errgroup.WithContext for a Group.
func WithContext(ctx context.Context) (*Group, context.Context) {
	g, ctx := errgroup.WithContext(ctx)
	return &Group{g: g}, ctx
}

// Go is errgroup.Group.Go, with a panic in f returned as its error.
func (g *Group) Go(f func() error) { g.g.Go(Func(f)) }

// SetLimit is errgroup.Group.SetLimit.
func (g *Group) SetLimit(n int) { g.g.SetLimit(n) }

// Wait is errgroup.Group.Wait.
func (g *Group) Wait() error { return g.g.Wait() }

// Send sends v on ch unless ctx ends first (a goroutine's report of its
// panic to a consumer that may have stopped listening).
func Send[T any](ctx context.Context, ch chan<- T, v T) {
	select {
	case ch <- v:
	case <-ctx.Done():
	}
}
