// Package commit runs a change against a table exactly once, and owns
// every file the change writes.
//
// Run computes the change on the freshly loaded table, commits its files
// and the caller's properties (watermarks) in one Iceberg commit, and when
// another writer committed first it reloads, checks that the watermark the
// change started from is unchanged, recomputes only what the new table
// state requires (reusing the files already written) and retries with the
// table's backoff (commit.retry.* properties).
//
// Every commit carries the change's id (PropCommitID in the snapshot
// summary, or PropLastCommitID as a table property for commits without a
// snapshot). When the catalog's answer to a commit is lost (a 5xx, a reset
// connection, a timeout, a cancelled context), Run reloads the table and
// looks for the id: found, the change is committed (Outcome.AnswerLost);
// not found once the catalog answers again, it was not, and Run retries.
// When the catalog cannot be reached, Run fails with ErrOutcomeUnknown and
// keeps every file.
//
// Files are removed only when no commit can reference them: the catalog
// refused the attempt that used them (a conflict, or another definite
// no), the attempt failed before reaching the catalog, or the attempt's
// outcome was resolved as not committed and the branch has moved past the
// snapshot it was computed on, so that it can never land.
package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/write"
)

// ErrWatermarkMoved is returned, with nothing committed, when a property
// the change was computed from (a watermark) changed underneath it: another
// build already applied changes, and applying these again would repeat or
// skip some.
var ErrWatermarkMoved = errors.New("watermark moved")

// ErrTooManyConflicts is returned when other writers kept committing first.
var ErrTooManyConflicts = errors.New("too many concurrent commits")

// ErrOutcomeUnknown is returned when the catalog's answer to a commit was
// lost and the catalog could not be reached again to find out whether the
// commit landed. Every file was kept; a rerun finds out.
var ErrOutcomeUnknown = errors.New("commit outcome unknown")

// DefaultMaxAttempts bounds the attempts of a change when the table sets
// no commit.retry.num-retries.
const DefaultMaxAttempts = DefaultNumRetries + 1

// cleanupTimeout bounds the removal of files and the resolution of an
// outcome once the caller's context has ended.
const cleanupTimeout = 30 * time.Second

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
	// MaxAttempts bounds the attempts (0: the table's
	// commit.retry.num-retries + 1). Retry.Attempts wins when both are set.
	MaxAttempts int
	// Retry overrides the table's retry properties (tests).
	Retry Retry
	// CommitID is the change's id (default: a new UUID). A rerun given the
	// id of a run whose outcome was unknown finds that run's commit and
	// commits nothing again.
	CommitID string
	// Logger receives a warning when an answer was lost (default:
	// slog.Default()).
	Logger *slog.Logger
}

// Prepare computes the change on tbl. reuse carries per-file work from
// earlier attempts and registers the files written for the change: a
// Prepare that writes inserts once keeps them outside, passes them as
// write.Request.InsertFiles and registers them with reuse.Own, so that
// Run removes them when they cannot be committed.
type Prepare func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error)

// Outcome describes what Run committed.
type Outcome struct {
	Result     *write.Result // the committed change (nil when nothing was committed)
	Table      *table.Table  // the table after the commit
	SnapshotID int64         // the new snapshot; 0 when only properties or nothing changed
	Attempts   int
	Committed  bool
	// CommitID is the change's id (PropCommitID, PropLastCommitID).
	CommitID string
	// AnswerLost reports that the catalog's answer to the commit was lost
	// and floe found the commit on the table by its id.
	AnswerLost bool
}

// Run loads the table, computes the change with prepare and commits it,
// retrying as the package comment says.
func Run(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o Options, prepare Prepare) (*Outcome, error) {
	r := newRunner(cat, ident, o)
	return r.loop(ctx, func(ctx context.Context, tbl *table.Table) (*pending, error) {
		res, err := prepare(ctx, tbl, r.reuse)
		if err != nil {
			return nil, err
		}
		if res.Empty() && (!o.CommitEmpty || len(o.SetProperties) == 0) {
			return &pending{res: res, empty: true}, nil
		}
		snapProps := iceberg.Properties{}
		for k, v := range o.SnapshotProperties {
			snapProps[k] = v
		}
		snapProps[PropCommitID] = r.id
		props := o.SetProperties
		if res.NoFiles() {
			// No snapshot: the property is how a lost answer is found.
			props = withProp(props, PropLastCommitID, r.id)
		}
		base, err := write.BranchHead(tbl, o.Branch)
		if err != nil {
			return nil, err
		}
		att := &attempt{branch: o.Branch, base: base, baseLoc: tbl.MetadataLocation(), res: res, files: res.Written()}
		// Registered before staging: a failed stage leaves them to Run.
		r.atts = append(r.atts, att)
		tx, err := res.Stage(ctx, snapProps, props)
		if err != nil {
			return nil, err
		}
		att.snapshotID = write.StagedSnapshotID(tx, tbl, o.Branch)
		att.manifestList, att.manifests = write.StagedFiles(tx, tbl, o.Branch)
		att.commit = commitFunc(cat, tx, res)
		return &pending{res: res, att: att}, nil
	})
}

func withProp(p iceberg.Properties, k, v string) iceberg.Properties {
	out := iceberg.Properties{}
	for pk, pv := range p {
		out[pk] = pv
	}
	out[k] = v
	return out
}

// pending is one attempt, computed and ready to commit.
type pending struct {
	res   *write.Result
	att   *attempt
	empty bool // nothing to commit
}

type state int

const (
	notCommitted state = iota // never sent, or the catalog said no
	inDoubt                   // sent, answer lost, not found on the table (yet)
	committed
)

// attempt is what one attempt sent, or tried to send.
type attempt struct {
	no      int
	branch  string
	base    *table.Snapshot // the branch head it was computed on (nil: none)
	baseLoc string          // the metadata file of the table it was computed on
	res     *write.Result
	// snapshotID is the snapshot it makes (0: a commit without snapshot,
	// found by PropLastCommitID).
	snapshotID int64
	// files are the data and delete files floe wrote that it commits.
	files []string
	// manifestList and manifests are what staging wrote for its snapshot.
	manifestList string
	manifests    func() ([]string, error)
	commit       func(context.Context) (*table.Table, error)
	state        state
	call         int // the number of commit calls made up to its own (0: none)
}

type runner struct {
	cat      *catalog.Catalog
	ident    table.Identifier
	name     string
	o        Options
	id       string
	pol      policy
	polSet   bool
	deadline time.Time
	reuse    *write.Reuse
	atts     []*attempt
	// latest is the last table loaded, after latestCalls commit calls.
	latest      *table.Table
	latestCalls int
	// fallback gives the file IO for removals when no table was loaded
	// (a table created by its first commit).
	fallback *table.Table
	calls    int
	log      *slog.Logger
}

func newRunner(cat *catalog.Catalog, ident table.Identifier, o Options) *runner {
	r := &runner{cat: cat, ident: ident, name: catalog.FormatName(ident), o: o, id: o.CommitID, reuse: write.NewReuse(), log: o.Logger}
	if r.id == "" {
		r.id = uuid.NewString()
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.pol = policyFor(nil, o)
	r.deadline = time.Now().Add(r.pol.total)
	return r
}

func (r *runner) outcome(att *attempt, tbl *table.Table, n int) *Outcome {
	out := &Outcome{Table: tbl, Attempts: n, CommitID: r.id}
	if att != nil {
		out.Committed, out.Result = true, att.res
		out.SnapshotID = att.snapshotID
	}
	return out
}

// loop runs attempts built by build until one commits or the budget ends.
func (r *runner) loop(ctx context.Context, build func(context.Context, *table.Table) (*pending, error)) (*Outcome, error) {
	var lastErr error
	lastClass := Conflict
	for n := 1; ; n++ {
		tbl, err := r.load(ctx)
		if err != nil {
			r.finish(ctx, nil)
			return nil, err
		}
		if att, f, ok, err := r.findInDoubt(ctx, tbl); err != nil {
			return nil, r.unknown(att, lastErr, err)
		} else if ok {
			return r.answerLost(ctx, att, f, tbl, n-1, lastErr), nil
		}
		if n == 1 && r.o.CommitID != "" {
			// A rerun naming an earlier run's change: done if it landed.
			if f, ok := FindSnapshot(tbl, r.o.Branch, nil, r.id); ok {
				out := r.outcome(nil, tbl, 0)
				out.Committed, out.SnapshotID = true, f.Snapshot.SnapshotID
				return out, nil
			}
			if tbl.Properties()[PropLastCommitID] == r.id {
				out := r.outcome(nil, tbl, 0)
				out.Committed = true
				return out, nil
			}
		}
		if err := checkExpect(tbl, r.o.Expect, r.name); err != nil {
			r.finish(ctx, nil)
			return nil, err
		}
		p, err := build(ctx, tbl)
		if err != nil {
			r.finish(ctx, nil)
			return nil, err
		}
		if p.empty {
			r.finish(ctx, nil)
			return r.outcome(nil, tbl, n), nil
		}
		att := p.att
		att.no = n
		if len(r.atts) == 0 || r.atts[len(r.atts)-1] != att {
			r.atts = append(r.atts, att)
		}
		newTbl, cls, sent, err := r.send(ctx, att)
		switch {
		case err == nil:
			att.state = committed
			r.latest, r.latestCalls = newTbl, r.calls
			r.finish(ctx, att)
			return r.outcome(att, newTbl, n), nil
		case !sent:
			// Nothing reached the catalog.
			r.finish(ctx, nil)
			return nil, fmt.Errorf("commit to %s: %w", r.name, err)
		case cls == Refused:
			r.finish(ctx, nil)
			return nil, fmt.Errorf("commit to %s refused by the catalog, nothing committed: %w", r.name, err)
		case cls == Unknown:
			found, f, rerr := r.resolve(ctx, att)
			if rerr != nil {
				return nil, r.unknown(att, err, rerr)
			}
			if found != nil {
				return r.answerLost(ctx, found, f, r.latest, n, err), nil
			}
			att.state = inDoubt
			r.log.Warn("commit: the catalog's answer was lost and the commit is not on the table; retrying",
				"table", r.name, "commit_id", r.id, "attempt", n, "error", err)
		}
		lastErr, lastClass = err, cls
		if ctx.Err() != nil {
			r.finish(ctx, nil)
			return nil, fmt.Errorf("commit to %s: %w", r.name, ctx.Err())
		}
		if n >= r.pol.attempts || time.Now().After(r.deadline) {
			r.finish(ctx, nil)
			if lastClass == Conflict {
				return nil, fmt.Errorf("%w on %s after %d attempts: %w", ErrTooManyConflicts, r.name, n, lastErr)
			}
			return nil, fmt.Errorf("commit to %s failed %d times (the last answer was lost and the commit is not on the table): %w", r.name, n, lastErr)
		}
		if !sleep(ctx, r.pol.wait(n)) {
			r.finish(ctx, nil)
			return nil, fmt.Errorf("commit to %s: %w", r.name, ctx.Err())
		}
	}
}

// load loads the table, retrying errors other than a missing table within
// the budget.
func (r *runner) load(ctx context.Context) (*table.Table, error) {
	for i := 1; ; i++ {
		tbl, err := r.cat.Load(ctx, r.ident)
		if err == nil {
			r.latest, r.latestCalls = tbl, r.calls
			if !r.polSet {
				r.pol, r.polSet = policyFor(tbl.Properties(), r.o), true
				r.deadline = time.Now().Add(r.pol.total)
			}
			return tbl, nil
		}
		if missing(err) || ctx.Err() != nil || i >= r.pol.attempts || time.Now().After(r.deadline) || r.retried(err) {
			return nil, err
		}
		r.log.Warn("commit: loading the table failed; retrying", "table", r.name, "attempt", i, "error", err)
		if !sleep(ctx, r.pol.wait(i)) {
			return nil, err
		}
	}
}

// retried reports whether the catalog already retried err within its own
// budget (catalog.IsTransient): retrying again would multiply the budgets.
func (r *runner) retried(err error) bool { return catalog.IsTransient(r.cat.Kind(), err) }

func missing(err error) bool {
	return errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace)
}

// send commits att and classifies the outcome: err == nil means
// committed; sent reports that the commit reached the catalog.
func (r *runner) send(ctx context.Context, att *attempt) (*table.Table, Class, bool, error) {
	tctx, tr := catalog.TraceCommits(ctx)
	newTbl, err := att.commit(tctx)
	calls := tr.Calls()
	r.calls += calls
	att.call = r.calls
	answers := tr.Answers()
	for _, a := range answers {
		if a == nil {
			// Accepted (an error after it is iceberg-go's post-commit
			// clean-up).
			if newTbl == nil {
				if tbl, lerr := r.cat.Load(context.WithoutCancel(ctx), r.ident); lerr == nil {
					newTbl = tbl
				}
			}
			return r.bind(newTbl), Unknown, true, nil
		}
	}
	if err == nil {
		// No call was needed (nothing changed): treat as committed.
		return r.bind(newTbl), Unknown, calls > 0, nil
	}
	if calls == 0 {
		return nil, Unknown, false, err
	}
	if len(answers) < calls {
		return nil, Unknown, true, err
	}
	return nil, Classify(r.cat.Kind(), answers[len(answers)-1]), true, err
}

func (r *runner) bind(tbl *table.Table) *table.Table {
	if tbl == nil {
		return nil
	}
	return r.cat.Bind(tbl)
}

// resolve reloads the table after an unknown outcome of att, retrying the
// load within the budget (with a fresh context when ctx ended), and looks
// for the change. It returns the attempt found (nil: not committed) or an
// error when the catalog stays unreachable.
func (r *runner) resolve(ctx context.Context, att *attempt) (*attempt, Found, error) {
	rctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
	}
	att.state = inDoubt
	for i := 1; ; i++ {
		tbl, err := r.cat.Load(rctx, r.ident)
		loadErr := err
		if err == nil {
			r.latest, r.latestCalls = tbl, r.calls
			found, f, ok, ferr := r.findInDoubt(rctx, tbl)
			if ferr == nil {
				if !ok {
					return nil, Found{}, nil
				}
				return found, f, nil
			}
			err = ferr
		} else if missing(err) {
			// The table is gone (or never was, for a creating commit).
			return nil, Found{}, nil
		}
		if i >= r.pol.attempts || time.Now().After(r.deadline) || rctx.Err() != nil || r.retried(loadErr) {
			return nil, Found{}, err
		}
		r.log.Warn("commit: the catalog's answer was lost; reloading the table to find the commit", "table", r.name, "commit_id", r.id, "error", err)
		if !sleep(rctx, r.pol.wait(i)) {
			return nil, Found{}, err
		}
	}
}

// findInDoubt looks for the change of any in-doubt attempt on tbl.
func (r *runner) findInDoubt(ctx context.Context, tbl *table.Table) (*attempt, Found, bool, error) {
	var snap, prop *attempt
	for _, a := range r.atts {
		if a.state != inDoubt {
			continue
		}
		if a.snapshotID != 0 && snap == nil {
			snap = a
		}
		if a.snapshotID == 0 && prop == nil {
			prop = a
		}
	}
	if snap != nil {
		// The id is the change's, shared by its attempts: search from the
		// oldest base.
		if f, ok := FindSnapshot(tbl, snap.branch, snap.base, r.id); ok {
			for _, a := range r.atts {
				if a.snapshotID == f.Snapshot.SnapshotID {
					return a, f, true, nil
				}
			}
			// A snapshot of the change no attempt staged: keep every file.
			return &attempt{snapshotID: f.Snapshot.SnapshotID}, f, true, nil
		}
	}
	if prop != nil {
		ok, err := FindProperty(ctx, tbl, prop.baseLoc, r.id)
		if err != nil {
			return nil, Found{}, false, err
		}
		if ok {
			return prop, Found{}, true, nil
		}
	}
	return nil, Found{}, false, nil
}

// answerLost reports a change found on tbl after its answer was lost.
func (r *runner) answerLost(ctx context.Context, att *attempt, f Found, tbl *table.Table, n int, cause error) *Outcome {
	att.state = committed
	msg := "commit: the catalog's answer was lost, but the commit landed"
	if f.OffBranch {
		msg = "commit: the catalog's answer was lost; the commit landed but the branch no longer holds it (rolled back since)"
	}
	r.log.Warn(msg, "table", r.name, "commit_id", r.id, "error", cause)
	r.finish(ctx, att)
	out := r.outcome(att, tbl, n)
	out.AnswerLost = true
	if f.Snapshot != nil {
		out.SnapshotID = f.Snapshot.SnapshotID
	}
	return out
}

// unknown is the error of an outcome that could not be resolved. Every
// file stays.
func (r *runner) unknown(att *attempt, cause, loadErr error) error {
	return fmt.Errorf("%w: %s: the catalog's answer to commit %s was lost (%v) and the catalog could not be reached to find out whether it landed (%v); every file written was kept. "+
		"Rerun the command: floe finds out from the table (a snapshot with %s=%s, or the table property %s, means it landed); "+
		"apply, merge, sync, run and delta sync then do not apply the change twice; rerun `table append` with --commit-id %s",
		ErrOutcomeUnknown, r.name, r.id, cause, loadErr, PropCommitID, r.id, PropLastCommitID, r.id)
}

// dead reports whether att can no longer land: a table loaded after its
// commit call shows its branch moved past the snapshot it was computed on
// (the commit asserts that snapshot).
func (r *runner) dead(att *attempt) bool {
	if r.latest == nil || r.latestCalls < att.call {
		return false
	}
	head, err := write.BranchHead(r.latest, att.branch)
	if err != nil {
		return false
	}
	switch {
	case head == nil && att.base == nil:
		return false
	case head == nil || att.base == nil:
		return true
	}
	return head.SnapshotID != att.base.SnapshotID
}

// finish removes the files no commit can reference: every file written
// for the change except those of the committed attempt (nil: none) and of
// attempts still in doubt, the manifests of attempts that cannot land, and
// the metadata files the catalog wrote for commits it refused
// (refusedMetadata).
func (r *runner) finish(ctx context.Context, done *attempt) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	keep := map[string]bool{}
	if done != nil {
		if done.res == nil && done.files == nil && done.snapshotID != 0 {
			return // committed by an attempt floe cannot name: keep all
		}
		for _, p := range done.files {
			keep[p] = true
		}
	}
	var del []string
	for _, a := range r.atts {
		if a == done {
			continue
		}
		if a.state == inDoubt && !r.dead(a) {
			for _, p := range a.files {
				keep[p] = true
			}
			continue
		}
		if a.manifests != nil {
			if ms, err := a.manifests(); err == nil {
				del = append(del, ms...)
			}
		}
		if a.manifestList != "" {
			del = append(del, a.manifestList)
		}
	}
	owned := r.reuse.All()
	for _, a := range r.atts {
		owned = append(owned, a.files...)
	}
	seen := map[string]bool{}
	for _, p := range owned {
		if !keep[p] && !seen[p] {
			seen[p] = true
			del = append(del, p)
		}
	}
	tbl := r.latest
	if tbl == nil {
		tbl = r.fallback
	}
	if tbl == nil {
		return
	}
	del = append(del, r.refusedMetadata(cctx, r.latest)...)
	if len(del) == 0 {
		return
	}
	if fs, err := tbl.FS(cctx); err == nil {
		write.Cleanup(fs, del)
	}
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
