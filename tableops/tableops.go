// Package tableops implements floe's table commands (create, append,
// delete, update, overwrite, branches, rollback) as thin uses of the write
// package, each committing exactly one snapshot, retried when another
// writer commits first.
//
// The functions may run concurrently, also on one table: each attempt is
// prepared against the freshly loaded head and committed through package
// commit, which retries when another writer committed first and removes
// the files of abandoned attempts, so racing writers neither lose nor
// repeat rows. When the catalog's answer to a commit is lost, commit finds
// out by the commit's id whether it landed (Outcome.AnswerLost, CommitID);
// a rerun with the same Target.CommitID commits nothing if it did.
// Predicates come from expr.CompilePredicate.
package tableops

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// Predicate selects rows. Iceberg is a conservative expression for file
// pruning (nil = every file); Columns are the columns Match needs; Match
// reports for each row of a batch whether it is selected (exactly).
type Predicate struct {
	Iceberg iceberg.BooleanExpression
	Columns []string
	Match   func(ctx context.Context, rec arrow.RecordBatch) ([]bool, error)
}

// Target names a table and the branch to write.
type Target struct {
	Catalog *catalog.Catalog
	Ident   table.Identifier
	Branch  string // "" = main
	// CommitID names the change (see commit.Options.CommitID): a rerun
	// with the id of a run whose outcome was unknown commits nothing when
	// that run's commit landed. Empty: a new id.
	CommitID string
}

// String names the target as messages do: "ns.table", or "ns.table
// (branch b)" off main.
func (t Target) String() string {
	s := catalog.FormatName(t.Ident)
	if t.Branch != "" && t.Branch != table.MainBranch {
		s += " (branch " + t.Branch + ")"
	}
	return s
}

// Outcome describes a committed change.
type Outcome struct {
	Table       *table.Table
	SnapshotID  int64 // the new snapshot; 0 when nothing was committed
	Mode        write.Mode
	RowsAdded   int64
	RowsRemoved int64
	Attempts    int
	// CommitID and AnswerLost: see commit.Outcome.
	CommitID   string
	AnswerLost bool
}

// commit runs prepare against the freshly loaded table and commits the
// result through package commit (retries on conflicts, cleanup of files of
// abandoned attempts). Nothing is committed when prepare writes nothing.
func commitOp(ctx context.Context, t Target, op string, prepare func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error)) (*Outcome, error) {
	return commitOpWith(ctx, t, op, nil, prepare)
}

// commitOpWith is commitOp with more snapshot summary properties (op
// names the operation whatever they say).
func commitOpWith(ctx context.Context, t Target, op string, summary iceberg.Properties, prepare func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error)) (*Outcome, error) {
	props := iceberg.Properties{}
	for k, v := range summary {
		props[k] = v
	}
	props["floe.operation"] = op
	o, err := commit.Run(ctx, t.Catalog, t.Ident, commit.Options{Branch: t.Branch, CommitID: t.CommitID,
		SnapshotProperties: props},
		func(_ context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
			return prepare(tbl, reuse)
		})
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", op, t, err)
	}
	out := &Outcome{Table: o.Table, SnapshotID: o.SnapshotID, Attempts: o.Attempts, CommitID: o.CommitID, AnswerLost: o.AnswerLost}
	if o.Result != nil {
		out.Mode, out.RowsAdded, out.RowsRemoved = o.Result.Mode, o.Result.RowsAdded, o.Result.RowsRemoved
	}
	return out, nil
}

// Append adds rows (in the table's Arrow schema) in one snapshot. The rows
// are produced anew for each attempt by rows().
func Append(ctx context.Context, t Target, records func() iter.Seq2[arrow.RecordBatch, error]) (*Outcome, error) {
	return commitOp(ctx, t, "append", func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		return write.Prepare(ctx, write.Request{Table: tbl, Branch: t.Branch, Inserts: records(), Mode: write.CopyOnWrite, Reuse: reuse})
	})
}

func match(p *Predicate) func(context.Context, iceberg.DataFile, scan.Batch) ([]bool, error) {
	return func(ctx context.Context, _ iceberg.DataFile, b scan.Batch) ([]bool, error) {
		return p.Match(ctx, b.Rec)
	}
}

// Delete removes the rows matching p in one snapshot, copy-on-write or
// merge-on-read as write.delete.mode says.
func Delete(ctx context.Context, t Target, p *Predicate) (*Outcome, error) {
	return commitOp(ctx, t, "delete", func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		mode, err := write.ModeFor(tbl.Properties(), write.OpDelete)
		if err != nil {
			return nil, err
		}
		return write.Prepare(ctx, write.Request{Table: tbl, Branch: t.Branch, Filter: p.Iceberg, Mode: mode, Reuse: reuse,
			Visitor: &write.Visitor{MatchColumns: p.Columns, Match: match(p)}})
	})
}

// Assign computes the updated rows: given full rows of the table and the
// mask of rows to update, it returns the new values of exactly the masked
// rows, in order, in the table's Arrow schema.
type Assign func(ctx context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error)

// Update rewrites the rows matching p with assign in one snapshot, as
// write.update.mode says.
func Update(ctx context.Context, t Target, p *Predicate, assign Assign) (*Outcome, error) {
	return commitOp(ctx, t, "update", func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		mode, err := write.ModeFor(tbl.Properties(), write.OpUpdate)
		if err != nil {
			return nil, err
		}
		return write.Prepare(ctx, write.Request{Table: tbl, Branch: t.Branch, Filter: p.Iceberg, Mode: mode, Reuse: reuse,
			Visitor: &write.Visitor{MatchColumns: p.Columns, Match: match(p),
				Rewrite: func(ctx context.Context, _ iceberg.DataFile, b scan.Batch, touched []bool) ([]bool, arrow.RecordBatch, error) {
					keep := make([]bool, len(touched))
					for i, tch := range touched {
						keep[i] = !tch
					}
					add, err := assign(ctx, b.Rec, touched)
					return keep, add, err
				},
				InPlace: true}})
	})
}

// Overwrite replaces the rows matching p (every row when p is nil) with
// the given rows, in one snapshot.
func Overwrite(ctx context.Context, t Target, p *Predicate, records func() iter.Seq2[arrow.RecordBatch, error]) (*Outcome, error) {
	return commitOp(ctx, t, "overwrite", func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		mode, err := write.ModeFor(tbl.Properties(), write.OpDelete)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return write.Prepare(ctx, write.Request{Table: tbl, Branch: t.Branch, RemoveAll: true, Inserts: records(), Reuse: reuse})
		}
		v := &write.Visitor{MatchColumns: p.Columns, Match: match(p)}
		return write.Prepare(ctx, write.Request{Table: tbl, Branch: t.Branch, Filter: p.Iceberg, Mode: mode, Visitor: v, Inserts: records(), Reuse: reuse})
	})
}

// ErrTableExists is wrapped when creating a table that exists.
var ErrTableExists = icecat.ErrTableAlreadyExists

// Create creates a table. formatVersion 0 means Iceberg's default (2).
func Create(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, sc *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties) (*table.Table, error) {
	if props == nil {
		props = iceberg.Properties{}
	}
	for k, v := range props {
		if err := write.CheckModeProperty(k, v); err != nil {
			return nil, err
		}
	}
	ns := ident[:len(ident)-1]
	if ok, err := cat.NamespaceExists(ctx, ns); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: %s", catalog.ErrNoSuchNamespace, catalog.MissingNamespace(ident, "creating"))
	}
	tbl, err := cat.CreateTable(ctx, ident, sc, icecat.WithPartitionSpec(&spec), icecat.WithProperties(props))
	if err != nil {
		if errors.Is(err, icecat.ErrTableAlreadyExists) {
			return nil, fmt.Errorf("create %s: %w", catalog.FormatName(ident), err)
		}
		return nil, fmt.Errorf("create %s: %w", catalog.FormatName(ident), err)
	}
	return tbl, nil
}
