package sparkpush

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/pushdown"
)

// stagePrefix starts the names of staging branches:
// floe_stage_<unix ms>_<12 hex digits of the build id>.
const stagePrefix = "floe_stage_"

// summaryStep numbers the writes of a build in their snapshots' summaries.
const summaryStep = "floe.stage-step"

// staleStage is the age past which a staging branch left by a killed or
// failed build is removed by the next build of the output.
const staleStage = 24 * time.Hour

// Run runs job on Spark and publishes it (see the package comment). Its
// errors start with "output NAME:" (the job's output), once: callers add
// what they are doing, not the output's name again.
func (e *Engine) Run(ctx context.Context, job pushdown.Job) (*pushdown.Result, error) {
	res, err := e.run(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("output %s: %w", catalog.FormatName(job.Output), err)
	}
	return res, nil
}

func (e *Engine) run(ctx context.Context, job pushdown.Job) (*pushdown.Result, error) {
	if job.BuildID == "" {
		job.BuildID = uuid.NewString()
	}
	log := job.Logger
	if log == nil {
		log = e.log
	}
	name := catalog.FormatName(job.Output)
	branch := job.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	res := &pushdown.Result{BuildID: job.BuildID, Remote: e.s.Remote}
	tbl, err := e.cat.Load(ctx, job.Output)
	if err != nil {
		return nil, err
	}
	for k, want := range job.Expect {
		if got := tbl.Properties().Get(k, ""); got != want {
			return nil, fmt.Errorf("%w: property %s is %q, the build was planned from %q; another build applied changes in between, nothing was committed",
				commit.ErrWatermarkMoved, k, got, want)
		}
	}
	e.dropStale(ctx, tbl)
	head, err := write.BranchHead(tbl, job.Branch)
	if err != nil {
		return nil, err
	}
	p := &planner{e: e, job: job, out: tbl}
	stmts, err := p.plan(ctx)
	if err != nil {
		return nil, err
	}
	ss, err := e.session(ctx)
	if err != nil {
		return nil, err
	}
	res.SessionID, res.AppID = ss.id, ss.appID
	stage := fmt.Sprintf("%s%d_%s", stagePrefix, time.Now().UnixMilli(), strings.ReplaceAll(job.BuildID, "-", "")[:12])
	create := "ALTER TABLE " + p.outName() + " CREATE BRANCH " + quote(stage)
	if head != nil {
		create += " AS OF VERSION " + strconv.FormatInt(head.SnapshotID, 10)
	}
	res.Statements = append(res.Statements, create)
	if err := e.retrying(ctx, ss, create); err != nil {
		msg := err.Error()
		if strings.Contains(msg, "unknown snapshot") || strings.Contains(msg, "TABLE_OR_VIEW_NOT_FOUND") || strings.Contains(msg, "NoSuchTable") {
			return nil, fmt.Errorf("%w: Spark at %s does not see %s at snapshot %s the way floe's catalog %s does (%v); "+
				"give the Spark-side name of floe's catalog in spark: {catalog: NAME} (--spark-catalog), or let floe mount its catalog (no spark.catalog); nothing was committed",
				ErrCatalogMismatch, e.s.Remote, name, snapName(head), e.cat.Name(), err)
		}
		// NB: nothing is published before the staging branch exists; a
		// branch Spark made without its answer reaching floe is a stale
		// staging branch, removed by a later build.
		return nil, notCommitted(name, fmt.Errorf("creating the staging branch: %w", err))
	}
	// The branch must be on the table floe loads: else Spark's catalog is
	// another one.
	tbl, err = e.cat.Load(ctx, job.Output)
	if err != nil {
		return nil, err
	}
	start := tbl.Metadata().SnapshotByName(stage)
	if start == nil || (head != nil && start.SnapshotID != head.SnapshotID) {
		return nil, fmt.Errorf("%w: Spark at %s created branch %s on %s.%s (ALTER TABLE ... CREATE BRANCH) but floe's catalog %s does not show it on %s; "+
			"give the Spark-side name of floe's catalog in spark: {catalog: NAME}, or let floe mount its catalog (no spark.catalog); nothing was committed",
			ErrCatalogMismatch, e.s.Remote, stage, e.catName, name, e.cat.Name(), name)
	}
	drop := func() { e.dropStage(ctx, job.Output, stage) }
	props := map[string]string{}
	for k, v := range job.Summary {
		props[k] = v
	}
	props[pushdown.SummaryBuildID] = job.BuildID
	props[pushdown.SummaryEngine] = string(pushdown.Spark)
	props[pushdown.SummarySession] = ss.id
	for k, v := range props {
		if e.noStamp {
			break
		}
		if err := ss.set(ctx, "spark.sql.iceberg.snapshot-property."+k, v); err != nil {
			drop()
			return nil, notCommitted(name, err)
		}
	}
	var lost error
	// Each statement that writes the staging branch stamps its step
	// (floe.stage-step): after a lost answer only the last write's commit
	// may be published, never a prefix of the build's writes.
	all := p.statements(stmts, stage)
	target := p.outName() + "." + quote("branch_"+stage)
	writes, step := 0, 0
	for _, st := range all {
		if strings.Contains(st, target) {
			writes++
		}
	}
	for _, st := range all {
		if msg, q, ok := parseCheck(st); ok {
			res.Statements = append(res.Statements, q)
			rows, err := ss.exec(ctx, q)
			if err == nil && len(rows) > 0 {
				err = fmt.Errorf("%s (for example %v); nothing was committed", msg, rows[0])
			}
			if err != nil {
				drop()
				// A check only reads, and the build's writes so far are on
				// the staging branch, which is dropped: a lost answer to it
				// costs nothing, and the user must be told so.
				if errors.Is(err, ErrAnswerLost) {
					return nil, notCommitted(name, err)
				}
				return nil, err
			}
			continue
		}
		res.Statements = append(res.Statements, st)
		if strings.Contains(st, target) {
			step++
			if err := ss.set(ctx, "spark.sql.iceberg.snapshot-property."+summaryStep, strconv.Itoa(step)); err != nil {
				// NB: earlier writes went to the staging branch only.
				drop()
				return nil, notCommitted(name, err)
			}
		}
		if err := e.retrying(ctx, ss, st); err != nil {
			var se *StatementError
			if errors.As(err, &se) && se.Lost {
				lost = err
				if step < writes {
					return nil, fmt.Errorf("%w (%v) in write %d of %d; nothing was committed to %s (the writes after it did not run); rerun the build",
						ErrAnswerLost, lost, step, writes, name)
				}
				break
			}
			drop()
			return nil, err
		}
	}
	// Find what Spark committed on the staging branch, by the build id.
	want := ""
	if lost != nil {
		want = strconv.Itoa(writes)
	}
	tip, err := e.findBuild(ctx, job.Output, stage, start, job.BuildID, want)
	if err != nil {
		if lost != nil {
			return nil, fmt.Errorf("%w (%v); nothing was committed to %s; the staging branch %s is left for a statement that may still finish (the next build removes it after %s); rerun the build",
				ErrAnswerLost, lost, name, stage, staleStage)
		}
		drop()
		return nil, err
	}
	if lost != nil {
		res.AnswerLost = true
		log.Warn("spark: the answer to a statement was lost; floe found the build's commit on the staging branch by its id", "output", name, "build_id", job.BuildID, "error", lost.Error())
	}
	out, err := e.publish(ctx, job, stage, head, tip)
	if err != nil {
		drop()
		return nil, err
	}
	res.Committed, res.Attempts, res.Table = out.Committed, out.Attempts, out.Table
	if tip != nil && (head == nil || tip.SnapshotID != head.SnapshotID) && tip.SnapshotID != start.SnapshotID {
		res.SnapshotID = tip.SnapshotID
		res.Metrics = tip.Summary.Properties
		for _, s := range between(out.Table, tip, start) {
			res.RowsAdded += summaryInt(s, "added-records")
			res.RowsRemoved += summaryInt(s, "deleted-records") + summaryInt(s, "added-position-deletes")
		}
	} else if tip != nil && head == nil {
		res.SnapshotID = tip.SnapshotID
	}
	return res, nil
}

// retrying runs a statement, again when Spark gave up on its commit
// because other writers kept committing (CommitFailedException: a
// definite no, nothing committed), with floe's retry budget on top of
// Spark's own (commit.retry.num-retries of the table, as floe's commits).
func (e *Engine) retrying(ctx context.Context, ss *session, stmt string) error {
	for n := 1; ; n++ {
		_, err := ss.exec(ctx, stmt)
		var se *StatementError
		if err == nil || !errors.As(err, &se) || se.Lost || !strings.Contains(se.Reason, "CommitFailedException") || n >= commit.DefaultMaxAttempts {
			if se != nil && strings.Contains(se.Reason, "CommitStateUnknownException") {
				// Spark's catalog lost the answer of its commit: as a lost
				// answer, resolved by the build id.
				se.Lost = true
			}
			return err
		}
		e.log.Warn("spark: the statement's commit conflicted with other writers; retrying", "remote", e.s.Remote, "attempt", n, "error", err.Error())
		commit.Backoff(ctx, n)
	}
}

// findBuild returns the head of the staging branch once it carries the
// build id. Without a lost answer the statements are done: a head without
// the id is an Iceberg runtime that ignores snapshot properties; the head
// still at start means the statements committed nothing (nil). After a
// lost answer floe waits up to LostWait for the commit to show.
func (e *Engine) findBuild(ctx context.Context, ident table.Identifier, stage string, start *table.Snapshot, id, wantStep string) (*table.Snapshot, error) {
	lost := wantStep != ""
	deadline := time.Now().Add(e.LostWait)
	for {
		tbl, err := e.cat.Load(context.WithoutCancel(ctx), ident)
		if err != nil {
			return nil, err
		}
		tip := tbl.Metadata().SnapshotByName(stage)
		switch {
		case tip == nil:
			return nil, fmt.Errorf("the staging branch %s is gone (removed by someone else); nothing was committed", stage)
		case tip.SnapshotID != start.SnapshotID && tip.Summary != nil && tip.Summary.Properties[pushdown.SummaryBuildID] == id:
			if !lost || (e.noStamp || tip.Summary.Properties[summaryStep] == wantStep) {
				return tip, nil
			}
			// An earlier write of the build: the last one may still land.
		case tip.SnapshotID != start.SnapshotID:
			return nil, fmt.Errorf("%w: Spark at %s committed snapshot %d on staging branch %s without the session's snapshot property %s: its Iceberg runtime is older than 1.11; use iceberg-spark-runtime 1.11 or newer (docs/spark.md); nothing was committed to the output",
				ErrOldIceberg, e.s.Remote, tip.SnapshotID, stage, pushdown.SummaryBuildID)
		case !lost:
			return nil, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("no snapshot with %s=%s on staging branch %s after %s", pushdown.SummaryBuildID, id, stage, e.LostWait)
		}
		time.Sleep(time.Second)
	}
}

// errMoved says the output's branch moved while Spark computed.
var errMoved = errors.New("the output changed while Spark computed the build")

// publish moves the output's branch to the staging branch's head tip (nil:
// Spark committed nothing: only the properties), sets the job's properties
// and removes the staging branch, in one commit that requires the branch
// still at head and the staging branch at tip.
func (e *Engine) publish(ctx context.Context, job pushdown.Job, stage string, head, tip *table.Snapshot) (*commit.Outcome, error) {
	branch := job.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	var headID, tipID *int64
	if head != nil {
		id := head.SnapshotID
		headID = &id
	}
	if tip != nil {
		id := tip.SnapshotID
		tipID = &id
	}
	props := iceberg.Properties{}
	for k, v := range job.SetProperties {
		props[k] = v
	}
	// The publishing commit's own id (floe.last-commit-id): not the build
	// id, which the staged snapshots carry (package commit would take them
	// for this commit having landed).
	o := commit.Options{SetProperties: props, Expect: job.Expect, CommitID: job.BuildID + "-publish", Logger: job.Logger}
	out, err := commit.RunUpdates(ctx, e.cat, job.Output, o, func(tbl *table.Table) ([]table.Requirement, []table.Update, error) {
		now := tbl.Metadata().SnapshotByName(branch)
		if (now == nil) != (head == nil) || (now != nil && now.SnapshotID != head.SnapshotID) {
			return nil, nil, fmt.Errorf("%w: %w (branch %s is at %s, the build started at %s); nothing was committed; the next build plans again from there",
				commit.ErrWatermarkMoved, errMoved, branch, snapName(now), snapName(head))
		}
		reqs := []table.Requirement{table.AssertRefSnapshotID(branch, headID)}
		var ups []table.Update
		if tip != nil {
			reqs = append(reqs, table.AssertRefSnapshotID(stage, tipID))
			if head == nil || tip.SnapshotID != head.SnapshotID {
				ups = append(ups, table.NewSetSnapshotRefUpdate(branch, tip.SnapshotID, table.BranchRef, 0, 0, 0))
			}
		}
		ups = append(ups, table.NewRemoveSnapshotRefUpdate(stage))
		return reqs, ups, nil
	})
	if err != nil {
		return nil, fmt.Errorf("publishing the Spark build: %w", err)
	}
	return out, nil
}

func snapName(s *table.Snapshot) string {
	if s == nil {
		return "no snapshot"
	}
	return "snapshot " + strconv.FormatInt(s.SnapshotID, 10)
}

// dropStage removes a staging branch (best effort).
func (e *Engine) dropStage(ctx context.Context, ident table.Identifier, stage string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	tbl, err := e.cat.Load(cctx, ident)
	if err != nil {
		return
	}
	s := tbl.Metadata().SnapshotByName(stage)
	if s == nil {
		return
	}
	id := s.SnapshotID
	_, _, err = e.cat.CommitTable(cctx, ident, []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(stage, &id)},
		[]table.Update{table.NewRemoveSnapshotRefUpdate(stage)})
	if err != nil {
		e.log.Warn("spark: could not remove the staging branch; the next build removes it", "table", catalog.FormatName(ident), "branch", stage, "error", err.Error())
	}
}

// dropStale removes the staging branches older than staleStage.
func (e *Engine) dropStale(ctx context.Context, tbl *table.Table) {
	for name := range tbl.Metadata().Refs() {
		if !strings.HasPrefix(name, stagePrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, stagePrefix)
		ms, err := strconv.ParseInt(strings.SplitN(rest, "_", 2)[0], 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)) < staleStage {
			continue
		}
		e.dropStage(ctx, tbl.Identifier(), name)
	}
}

// between lists the snapshots after start up to tip, following parents.
func between(tbl *table.Table, tip, start *table.Snapshot) []*table.Snapshot {
	if tbl == nil {
		return nil
	}
	var out []*table.Snapshot
	meta := tbl.Metadata()
	for s := tip; s != nil && (start == nil || s.SnapshotID != start.SnapshotID); {
		out = append(out, s)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return out
}

func summaryInt(s *table.Snapshot, key string) int64 {
	if s == nil || s.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(s.Summary.Properties[key], 10, 64)
	return n
}

// notCommitted is the error of a build that failed before publishing
// anything to output name (statements before the publish write the
// staging branch only); Run puts the output's name in front.
func notCommitted(name string, err error) error {
	return fmt.Errorf("%w; nothing was committed to %s; rerun the build", err, name)
}
