// Package faultcat is a fault-injecting wrapper of an iceberg-go catalog
// for tests: rules make chosen commits, loads or creates fail before they
// reach the catalog, or reach it and then report an error (the answer
// lost, as when a load balancer answers 504 after forwarding, or the
// connection drops). Install it on a catalog with
//
//	inj := faultcat.New(rules...)
//	cat.Wrap(catalog.Wrap{Catalog: inj.Wrap})
package faultcat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// Op is a kind of catalog call.
type Op string

// The calls counted.
const (
	OpCommit Op = "commit" // CommitTable
	OpLoad   Op = "load"   // LoadTable
	OpCreate Op = "create" // CreateTable
)

// When says where a fault happens.
type When int

const (
	// Before: the call fails without reaching the catalog.
	Before When = iota
	// After: the call reaches the catalog (which may commit), then the
	// error is returned instead of its answer.
	After
)

// Errors as the REST client and the network report them.
var (
	// ErrGatewayTimeout is a 504 after forwarding, as iceberg-go's REST
	// client reports it.
	ErrGatewayTimeout = fmt.Errorf("%w: 504 Gateway Timeout", rest.ErrCommitStateUnknown)
	// ErrBadGateway is a 502.
	ErrBadGateway = fmt.Errorf("%w: 502 Bad Gateway", rest.ErrCommitStateUnknown)
	// ErrServiceUnavailable is a 503 on a load.
	ErrServiceUnavailable = fmt.Errorf("%w: 503", rest.ErrServiceUnavailable)
	// ErrReset is a connection reset by the peer inside an HTTP call.
	ErrReset error = &url.Error{Op: "Post", URL: "http://catalog/v1/tables", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	// ErrEOF is a connection closed before the answer.
	ErrEOF error = &url.Error{Op: "Post", URL: "http://catalog/v1/tables", Err: io.ErrUnexpectedEOF}
	// ErrTimeout is a client timeout.
	ErrTimeout error = &url.Error{Op: "Post", URL: "http://catalog/v1/tables", Err: context.DeadlineExceeded}
	// ErrConflict is a conflict answered by the catalog (409).
	ErrConflict = fmt.Errorf("%w: injected 409", rest.ErrCommitFailed)
)

// Rule makes matching calls fail.
type Rule struct {
	Op    Op
	When  When
	Nth   int   // the first matching call hit (1-based; 0: the first)
	Count int   // consecutive calls hit (0: one; -1: all from Nth on)
	Err   error // the error returned (nil: ErrGatewayTimeout)
	// Delay is waited before a hit call fails (Before) or after it
	// returned (After).
	Delay time.Duration
	// Then, when set, runs when a hit call fails (after forwarding, for
	// After): a test cancels its context there.
	Then func()

	seen int
}

// Injector holds the rules and counts calls. It is safe for concurrent
// use.
type Injector struct {
	mu    sync.Mutex
	rules []*Rule
	calls map[Op]int
	hits  []string
}

// New returns an injector with rules.
func New(rules ...*Rule) *Injector { return &Injector{rules: rules, calls: map[Op]int{}} }

// Add adds a rule.
func (inj *Injector) Add(r *Rule) {
	inj.mu.Lock()
	inj.rules = append(inj.rules, r)
	inj.mu.Unlock()
}

// Reset removes every rule and clears the counts.
func (inj *Injector) Reset() {
	inj.mu.Lock()
	inj.rules, inj.calls, inj.hits = nil, map[Op]int{}, nil
	inj.mu.Unlock()
}

// Count returns the number of calls of op made.
func (inj *Injector) Count(op Op) int {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return inj.calls[op]
}

// Hits describes the faults injected, in order.
func (inj *Injector) Hits() []string {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	return append([]string(nil), inj.hits...)
}

func (inj *Injector) check(op Op, ident table.Identifier) *Rule {
	inj.mu.Lock()
	defer inj.mu.Unlock()
	inj.calls[op]++
	var hit *Rule
	for _, r := range inj.rules {
		if r.Op != op {
			continue
		}
		r.seen++
		nth := max(r.Nth, 1)
		if r.seen >= nth && (r.Count < 0 || r.seen < nth+max(r.Count, 1)) && hit == nil {
			hit = r
		}
	}
	if hit != nil {
		w := "before"
		if hit.When == After {
			w = "after"
		}
		inj.hits = append(inj.hits, fmt.Sprintf("%s %v %s: %v", op, ident, w, hit.err()))
	}
	return hit
}

func (r *Rule) fail() {
	time.Sleep(r.Delay)
	if r.Then != nil {
		r.Then()
	}
}

func (r *Rule) err() error {
	if r.Err != nil {
		return r.Err
	}
	return ErrGatewayTimeout
}

// Wrap returns cat with the injector's faults.
func (inj *Injector) Wrap(cat icecat.Catalog) icecat.Catalog { return &Catalog{Catalog: cat, inj: inj} }

// Catalog is a wrapped catalog.
type Catalog struct {
	icecat.Catalog
	inj *Injector
}

// CommitTable commits, or fails as the rules say.
func (c *Catalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	r := c.inj.check(OpCommit, ident)
	if r != nil && r.When == Before {
		r.fail()
		return nil, "", r.err()
	}
	meta, loc, err := c.Catalog.CommitTable(ctx, ident, reqs, ups)
	if r != nil {
		r.fail()
		return nil, "", r.err()
	}
	return meta, loc, err
}

// LoadTable loads, or fails as the rules say.
func (c *Catalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	r := c.inj.check(OpLoad, ident)
	if r != nil && r.When == Before {
		r.fail()
		return nil, r.loadErr()
	}
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if r != nil {
		r.fail()
		return nil, r.loadErr()
	}
	return tbl, err
}

func (r *Rule) loadErr() error {
	if r.Err != nil {
		return r.Err
	}
	return ErrServiceUnavailable
}

// CreateTable creates, or fails as the rules say.
func (c *Catalog) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...icecat.CreateTableOpt) (*table.Table, error) {
	r := c.inj.check(OpCreate, ident)
	if r != nil && r.When == Before {
		r.fail()
		return nil, r.err()
	}
	tbl, err := c.Catalog.CreateTable(ctx, ident, sc, opts...)
	if r != nil {
		r.fail()
		return nil, r.err()
	}
	return tbl, err
}

// IsInjected reports whether err is one of this package's errors.
func IsInjected(err error) bool {
	for _, e := range []error{ErrGatewayTimeout, ErrBadGateway, ErrServiceUnavailable, ErrReset, ErrEOF, ErrTimeout, ErrConflict} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
