package commit

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
)

// DropTable drops the table ident from the catalog (its files stay; see
// catalog.Catalog.DropTable). A drop carries no commit id: when the
// catalog's answer is lost, DropTable reloads the table (retrying the load
// with the table's commit.retry.* budget): gone, or replaced by another
// table of that name, means dropped (Outcome.AnswerLost); still there, with
// the same table UUID, means not dropped, and the drop is retried. When the
// catalog cannot be reached to find out, it fails with ErrOutcomeUnknown.
//
// Outcome.Table is the dropped table as last loaded before the drop (what
// a purge deletes); Outcome.Committed is true on success.
func DropTable(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, o Options) (*Outcome, error) {
	r := newRunner(cat, ident, o)
	tbl, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	uuid := tbl.Metadata().TableUUID()
	for n := 1; ; n++ {
		err := cat.DropTable(ctx, ident)
		if err == nil {
			return &Outcome{Table: tbl, Attempts: n, Committed: true}, nil
		}
		if !catalog.Sent(err) {
			return nil, err
		}
		cls := Classify(cat.Kind(), err)
		cur, perr := r.probe(ctx, ident)
		if perr != nil {
			return nil, fmt.Errorf("%w: drop %s: the catalog's answer to the drop was lost (%v) and the catalog could not be reached to find out whether the table is gone (%v); no file was deleted. "+
				"Rerun the command: if the table is gone the drop landed (its files then stay under %s; to delete them, register %s under a new name and drop that with --purge)",
				ErrOutcomeUnknown, r.name, err, perr, tbl.Location(), tbl.MetadataLocation())
		}
		if cur == nil || cur.Metadata().TableUUID() != uuid {
			lost := cls == Unknown
			if lost {
				r.log.Warn("drop: the catalog's answer was lost, but the table is gone", "table", r.name, "error", err)
			}
			if cur == nil {
				if ferr := cat.ForgetPathRoot(context.WithoutCancel(ctx), ident); ferr != nil {
					return nil, ferr
				}
			}
			return &Outcome{Table: tbl, Attempts: n, Committed: true, AnswerLost: lost}, nil
		}
		tbl = cur
		if cls != Unknown {
			return nil, fmt.Errorf("drop %s refused by the catalog, nothing dropped: %w", r.name, err)
		}
		r.log.Warn("drop: the catalog's answer was lost and the table is still there; retrying", "table", r.name, "attempt", n, "error", err)
		if stop := r.stop(ctx, n); stop != nil {
			return nil, fmt.Errorf("drop %s failed %d times (the last answer was lost and the table is still there): %w", r.name, n, err)
		}
	}
}

// RenameTable renames the table from to to, resolving a lost answer as
// DropTable does: the table (same UUID) found under its new name means
// renamed (Outcome.AnswerLost), found under its old name means not, and
// the rename is retried. Outcome.Table is the table before the rename.
func RenameTable(ctx context.Context, cat *catalog.Catalog, from, to table.Identifier, o Options) (*Outcome, error) {
	r := newRunner(cat, from, o)
	tbl, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	uuid := tbl.Metadata().TableUUID()
	toName := catalog.FormatName(to)
	for n := 1; ; n++ {
		err := cat.RenameTable(ctx, from, to)
		if err == nil {
			return &Outcome{Table: tbl, Attempts: n, Committed: true}, nil
		}
		if !catalog.Sent(err) {
			return nil, err
		}
		cls := Classify(cat.Kind(), err)
		unknown := func(perr error) error {
			return fmt.Errorf("%w: rename %s to %s: the catalog's answer to the rename was lost (%v) and the catalog could not be reached to find out whether it landed (%v). "+
				"Rerun the command: if %s is gone and %s exists, the rename landed",
				ErrOutcomeUnknown, r.name, toName, err, perr, r.name, toName)
		}
		dst, perr := r.probe(ctx, to)
		if perr != nil {
			return nil, unknown(perr)
		}
		if dst != nil && dst.Metadata().TableUUID() == uuid {
			lost := cls == Unknown
			if lost {
				r.log.Warn("rename: the catalog's answer was lost, but the table is under its new name", "table", r.name, "to", toName, "error", err)
			}
			if merr := cat.MovePathRoot(context.WithoutCancel(ctx), from, to); merr != nil {
				return nil, merr
			}
			return &Outcome{Table: tbl, Attempts: n, Committed: true, AnswerLost: lost}, nil
		}
		src, perr := r.probe(ctx, from)
		if perr != nil {
			return nil, unknown(perr)
		}
		if src == nil || src.Metadata().TableUUID() != uuid {
			return nil, fmt.Errorf("rename %s to %s: the table is no longer there under either name (another writer dropped or renamed it), nothing renamed: %w", r.name, toName, err)
		}
		if cls != Unknown {
			return nil, fmt.Errorf("rename %s to %s refused by the catalog, nothing renamed: %w", r.name, toName, err)
		}
		r.log.Warn("rename: the catalog's answer was lost and the table still has its old name; retrying", "table", r.name, "attempt", n, "error", err)
		if stop := r.stop(ctx, n); stop != nil {
			return nil, fmt.Errorf("rename %s to %s failed %d times (the last answer was lost and the table still has its old name): %w", r.name, toName, n, err)
		}
	}
}

// probe loads ident after a lost answer, retrying within the budget (with
// a fresh context when ctx ended). It returns nil for a missing table, and
// an error when the catalog stays unreachable.
func (r *runner) probe(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	rctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
	}
	for i := 1; ; i++ {
		tbl, err := r.cat.Load(rctx, ident)
		if err == nil {
			return tbl, nil
		}
		if missing(err) {
			return nil, nil
		}
		if i >= r.pol.attempts || rctx.Err() != nil {
			return nil, err
		}
		if !sleep(rctx, r.pol.wait(i)) {
			return nil, err
		}
	}
}

// stop waits before attempt n+1 and returns an error when there is to be
// none (the budget is spent or ctx ended).
func (r *runner) stop(ctx context.Context, n int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if n >= r.pol.attempts {
		return ErrTooManyConflicts
	}
	if !sleep(ctx, r.pol.wait(n)) {
		return ctx.Err()
	}
	return nil
}
