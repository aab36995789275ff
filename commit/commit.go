// Package commit runs a change against a table exactly once: it computes
// the change on the freshly loaded table, commits its files and the
// caller's properties (watermarks) in one Iceberg commit, and when another
// writer committed first it reloads, checks that the watermark the change
// started from is unchanged, recomputes only what the new table state
// requires (reusing the files already written) and retries with backoff.
// Files of abandoned attempts are removed; a final failure leaves the table
// untouched.
package commit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/write"
)

// ErrWatermarkMoved is returned, with nothing committed, when a property
// the change was computed from (a watermark) changed underneath it: another
// build already applied changes, and applying these again would repeat or
// skip some.
var ErrWatermarkMoved = errors.New("watermark moved")

// ErrTooManyConflicts is returned when other writers kept committing first.
var ErrTooManyConflicts = errors.New("too many concurrent commits")

// DefaultMaxAttempts bounds the attempts of a change.
const DefaultMaxAttempts = 8

// Options configure Run.
type Options struct {
	Branch string // "" = main
	// SnapshotProperties go into the new snapshot's summary.
	SnapshotProperties iceberg.Properties
	// SetProperties are table properties committed together with the
	// change (watermarks), in the same metadata commit.
	SetProperties iceberg.Properties
	// Expect are table properties that must hold the given values on the
	// table the change is computed from, at every attempt ("" = absent).
	// When one differs, Run stops with ErrWatermarkMoved.
	Expect map[string]string
	// CommitEmpty commits SetProperties even when the change writes no
	// file (advancing a watermark over changes that turned out empty).
	CommitEmpty bool
	// MaxAttempts bounds the attempts (0 = 8).
	MaxAttempts int
}

// Prepare computes the change on tbl. reuse carries per-file work from
// earlier attempts; a Prepare that writes inserts once should keep them
// outside and pass them as write.Request.InsertFiles.
type Prepare func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error)

// Outcome describes what Run committed.
type Outcome struct {
	Result     *write.Result // the committed change (nil when nothing was committed)
	Table      *table.Table  // the table after the commit
	SnapshotID int64         // the new branch head; 0 when only properties or nothing changed
	Attempts   int
	Committed  bool
}

// Run loads the table, computes the change with prepare and commits it,
// retrying on conflicts as the package comment says.
func Run(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o Options, prepare Prepare) (*Outcome, error) {
	max := o.MaxAttempts
	if max <= 0 {
		max = DefaultMaxAttempts
	}
	reuse := write.NewReuse()
	name := catalog.FormatName(ident)
	var lastErr error
	// prev is the change of the last attempt, whose commit conflicted. Its
	// files that the next attempt does not use are removed: reuse only
	// knows the per-file work, not files such as the deletion vectors an
	// attempt writes for all its files at once.
	var prev *write.Result
	dropPrev := func(tbl *table.Table, keep *write.Result) {
		if prev == nil {
			return
		}
		used := map[string]bool{}
		if keep != nil {
			for _, p := range keep.Written() {
				used[p] = true
			}
		}
		var drop []string
		for _, p := range prev.Written() {
			if !used[p] {
				drop = append(drop, p)
			}
		}
		cleanup(ctx, tbl, drop)
		prev = nil
	}
	for attempt := 1; attempt <= max; attempt++ {
		tbl, err := cat.Load(ctx, ident)
		if err != nil {
			cleanup(ctx, tbl, reuse.Abandoned(nil))
			dropPrev(tbl, nil)
			return nil, err
		}
		if err := checkExpect(tbl, o.Expect, name); err != nil {
			cleanup(ctx, tbl, reuse.Abandoned(nil))
			dropPrev(tbl, nil)
			return nil, err
		}
		res, err := prepare(ctx, tbl, reuse)
		if err != nil {
			cleanup(ctx, tbl, reuse.Abandoned(nil))
			dropPrev(tbl, nil)
			return nil, err
		}
		dropPrev(tbl, res)
		out := &Outcome{Table: tbl, Attempts: attempt}
		if res.Empty() && (!o.CommitEmpty || len(o.SetProperties) == 0) {
			cleanup(ctx, tbl, reuse.Abandoned(nil))
			return out, nil
		}
		newTbl, err := res.Commit(ctx, o.SnapshotProperties, o.SetProperties)
		if err == nil {
			cleanup(ctx, newTbl, reuse.Abandoned(res))
			out.Result, out.Table, out.Committed = res, newTbl, true
			if !res.Empty() {
				if s, _ := write.BranchHead(newTbl, o.Branch); s != nil {
					out.SnapshotID = s.SnapshotID
				}
			}
			return out, nil
		}
		if !write.IsConflict(err) {
			// The commit may or may not have happened: keep the files.
			return nil, err
		}
		lastErr = err
		prev = res
		Backoff(ctx, attempt)
		if ctx.Err() != nil {
			cleanup(ctx, tbl, reuse.Abandoned(nil))
			dropPrev(tbl, nil)
			return nil, ctx.Err()
		}
	}
	if tbl, err := cat.Load(ctx, ident); err == nil {
		cleanup(ctx, tbl, reuse.Abandoned(nil))
		dropPrev(tbl, nil)
	}
	return nil, fmt.Errorf("%w on %s after %d attempts: %w", ErrTooManyConflicts, name, max, lastErr)
}

func checkExpect(tbl *table.Table, expect map[string]string, name string) error {
	props := tbl.Properties()
	for k, want := range expect {
		got := props.Get(k, "")
		if got != want {
			return fmt.Errorf("%w: %s: property %s is %q, the change was computed from %q; another build applied changes in between, nothing was committed",
				ErrWatermarkMoved, name, k, got, want)
		}
	}
	return nil
}

func cleanup(ctx context.Context, tbl *table.Table, paths []string) {
	if tbl == nil || len(paths) == 0 {
		return
	}
	if fs, err := tbl.FS(ctx); err == nil {
		write.Cleanup(fs, paths)
	}
}

// Backoff waits before attempt+1: exponential with jitter, cut short when
// ctx ends.
func Backoff(ctx context.Context, attempt int) {
	d := time.Duration(25<<min(attempt, 6)) * time.Millisecond
	d += time.Duration(rand.Int64N(int64(d)))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
