package commit

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/write"
)

// Updates computes a change made of catalog updates (no files: creating,
// moving or dropping refs) on the freshly loaded table, with the
// requirements the catalog must check. No updates means nothing to do.
type Updates func(tbl *table.Table) ([]table.Requirement, []table.Update, error)

// RunUpdates commits the updates f computes, with Options.SetProperties
// and PropLastCommitID (the change id: how a lost answer is resolved) in
// the same commit, retrying on conflicts (f runs again on the new table
// state) and resolving lost answers as Run does. Branch,
// SnapshotProperties and CommitEmpty are ignored.
func RunUpdates(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o Options, f Updates) (*Outcome, error) {
	r := newRunner(cat, ident, o)
	return r.loop(ctx, func(ctx context.Context, tbl *table.Table) (*pending, error) {
		reqs, ups, err := f(tbl)
		if err != nil {
			return nil, err
		}
		if len(ups) == 0 {
			return &pending{empty: true}, nil
		}
		reqs = append(append([]table.Requirement(nil), reqs...), table.AssertTableUUID(tbl.Metadata().TableUUID()))
		ups = append(append([]table.Update(nil), ups...), table.NewSetPropertiesUpdate(withProp(o.SetProperties, PropLastCommitID, r.id)))
		base, _ := write.BranchHead(tbl, "")
		att := &attempt{base: base, baseLoc: tbl.MetadataLocation()}
		att.commit = func(ctx context.Context) (*table.Table, error) {
			meta, loc, err := cat.CommitTable(ctx, ident, reqs, ups)
			if err != nil {
				return nil, err
			}
			return cat.Bind(table.New(ident, meta, loc, tbl.FS, nil)), nil
		}
		return &pending{att: att}, nil
	})
}

// Tx builds a change on a transaction of the freshly loaded table (a
// rollback, a schema change). It returns ErrNoChange when the table
// needs no change.
type Tx func(ctx context.Context, tbl *table.Table, tx *table.Transaction) error

// ErrNoChange, returned by a Tx, says that there is nothing to commit.
var ErrNoChange = errors.New("no change")

// RunTx commits the transaction f builds on the freshly loaded table
// (branch Options.Branch), with Options.SetProperties and PropLastCommitID
// in the same commit, retrying and resolving lost answers as Run does. It
// is meant for changes without data files of floe's: files f writes
// itself are not removed.
func RunTx(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o Options, f Tx) (*Outcome, error) {
	r := newRunner(cat, ident, o)
	branch := o.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	return r.loop(ctx, func(ctx context.Context, tbl *table.Table) (*pending, error) {
		tx, err := tbl.NewTransactionOnBranchWithError(branch)
		if err != nil {
			return nil, err
		}
		if err := f(ctx, tbl, tx); errors.Is(err, ErrNoChange) {
			return &pending{empty: true}, nil
		} else if err != nil {
			return nil, err
		}
		if err := tx.SetProperties(withProp(o.SetProperties, PropLastCommitID, r.id)); err != nil {
			return nil, err
		}
		base, _ := write.BranchHead(tbl, o.Branch)
		att := &attempt{branch: o.Branch, base: base, baseLoc: tbl.MetadataLocation(), commit: tx.Commit}
		att.manifestList, att.manifests = write.StagedFiles(tx, tbl, o.Branch)
		return &pending{att: att}, nil
	})
}

// CommitTx commits tx, a transaction built by the caller on base (a table
// loaded through cat, e.g. by a transform's native writes), once: with
// Options.SetProperties and PropLastCommitID added, when Options.Expect
// still holds on the freshly loaded table. A lost answer is resolved as
// Run does. A conflict is not retried (the caller's work would have to be
// computed again): it is returned with nothing committed, and the
// manifests tx wrote are removed (data files it wrote are not floe's to
// know, and stay for `table remove-orphans`).
func CommitTx(ctx context.Context, cat *catalog.Catalog, base *table.Table, tx *table.Transaction, o Options) (*Outcome, error) {
	o.Retry.Attempts = 1
	r := newRunner(cat, base.Identifier(), o)
	if err := tx.SetProperties(withProp(o.SetProperties, PropLastCommitID, r.id)); err != nil {
		return nil, err
	}
	head, err := write.BranchHead(base, o.Branch)
	if err != nil {
		return nil, err
	}
	used := false
	out, err := r.loop(ctx, func(ctx context.Context, _ *table.Table) (*pending, error) {
		if used {
			return nil, errors.New("commit: a transaction commits once")
		}
		used = true
		att := &attempt{branch: o.Branch, base: head, baseLoc: base.MetadataLocation(), commit: tx.Commit}
		att.manifestList, att.manifests = write.StagedFiles(tx, base, o.Branch)
		return &pending{att: att}, nil
	})
	if out != nil && out.Committed {
		if s, _ := write.BranchHead(out.Table, o.Branch); s != nil && (head == nil || s.SnapshotID != head.SnapshotID) {
			out.SnapshotID = s.SnapshotID
		}
	}
	return out, err
}

// ErrCreateUnsupported is returned by Create, with nothing done, for
// catalogs whose commits cannot create a table.
var ErrCreateUnsupported = catalog.ErrUnsupported

// ErrTableExists is returned by Create, with nothing committed, when the
// table exists (another writer created it first).
var ErrTableExists = errors.New("table exists")

// Create creates the table ident (schema sc, partition spec spec, table
// properties props) and commits its first change, computed by prepare on
// the new empty table, in one catalog commit: readers never see the table
// without that change. Options work as for Run (SetProperties land in the
// same commit). On catalogs whose commits cannot create a table it
// returns an error wrapping ErrCreateUnsupported before doing anything.
// When the table exists, or another writer creates it first, it returns an
// error wrapping ErrTableExists with nothing committed.
func Create(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, sc *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties, o Options, prepare Prepare) (*Outcome, error) {
	tbl, err := cat.StageCreate(ctx, ident, sc, spec, props)
	if err != nil {
		if errors.Is(err, catalog.ErrTableExists) {
			return nil, fmt.Errorf("%w: %w", ErrTableExists, err)
		}
		return nil, err
	}
	r := newRunner(cat, ident, o)
	r.pol, r.polSet = policyFor(tbl.Properties(), o), true
	r.fallback = tbl
	res, err := prepare(ctx, tbl, r.reuse)
	if err != nil {
		r.finish(ctx, nil)
		return nil, err
	}
	snapProps := iceberg.Properties{}
	for k, v := range o.SnapshotProperties {
		snapProps[k] = v
	}
	snapProps[PropCommitID] = r.id
	props2 := o.SetProperties
	if res.NoFiles() {
		props2 = withProp(props2, PropLastCommitID, r.id)
	}
	att := &attempt{no: 1, branch: o.Branch, baseLoc: "", res: res, files: res.Written()}
	r.atts = append(r.atts, att)
	tx, err := res.Stage(ctx, snapProps, props2)
	if err != nil {
		r.finish(ctx, nil)
		return nil, err
	}
	att.snapshotID = write.StagedSnapshotID(tx, tbl, o.Branch)
	att.manifestList, att.manifests = write.StagedFiles(tx, tbl, o.Branch)
	att.commit = tx.Commit
	newTbl, cls, sent, err := r.send(ctx, att)
	switch {
	case err == nil:
		att.state = committed
		r.latest, r.latestCalls = newTbl, r.calls
		r.finish(ctx, att)
		return r.outcome(att, newTbl, 1), nil
	case !sent:
		r.finish(ctx, nil)
		return nil, fmt.Errorf("create %s: %w", r.name, err)
	case cls == Conflict:
		r.finish(ctx, nil)
		return nil, fmt.Errorf("%w: %s was created by another writer first, nothing committed: %w", ErrTableExists, r.name, err)
	case cls == Refused:
		r.finish(ctx, nil)
		return nil, fmt.Errorf("create %s refused by the catalog, nothing committed: %w", r.name, err)
	}
	found, f, rerr := r.resolve(ctx, att)
	if rerr != nil {
		return nil, r.unknown(att, err, rerr)
	}
	if found != nil {
		return r.answerLost(ctx, found, f, r.latest, 1, err), nil
	}
	if r.latest != nil {
		// The table exists without the change: another writer created it,
		// and this commit (which asserts the table does not exist) can
		// never land.
		att.state = notCommitted
		r.finish(ctx, nil)
		return nil, fmt.Errorf("%w: %s was created by another writer first, nothing committed: %w", ErrTableExists, r.name, err)
	}
	// Not created: the commit may still be on its way, so its files stay
	// (`table remove-orphans` finds them if it never lands).
	r.finish(ctx, nil)
	return nil, fmt.Errorf("create %s: the catalog's answer was lost and the table is not there: %w", r.name, err)
}
