package transform

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
)

// CommitRequest is what a custom writer given to Output.Commit receives:
// where to commit, and the properties its single Iceberg commit must carry
// and check so that the build stays exactly-once.
type CommitRequest struct {
	Catalog *catalog.Catalog
	Table   table.Identifier
	Branch  string // "" = main
	// Replace is true when the build is not incremental: the output's
	// current rows are to be discarded, the result computed as if the
	// output were empty, and both committed as one replace.
	Replace bool
	// SetProperties are the build's watermarks: table properties to commit
	// in the same Iceberg commit as the data, also when the change turns
	// out empty.
	SetProperties map[string]string
	// Expect holds table properties that must still have these values when
	// the writer commits ("" = absent). When one differs the writer must
	// commit nothing and return an error wrapping commit.ErrWatermarkMoved:
	// another build applied changes in between.
	Expect map[string]string
	// SnapshotProperties go into the new snapshot's summary.
	SnapshotProperties map[string]string
	// Logger is the build's logger.
	Logger *slog.Logger
}

// CommitResult is what a custom writer reports about its commit.
type CommitResult struct {
	Committed   bool  // a commit (data or properties only) happened
	SnapshotID  int64 // the new branch head; 0 when no snapshot was made
	RowsAdded   int64
	RowsRemoved int64
	Attempts    int // commit attempts (0 = not known)
	// AnswerLost: the catalog's answer to the commit was lost and the
	// commit was found on the table (commit.Outcome.AnswerLost).
	AnswerLost bool
}

// CommitFunc commits one output's change for a build (see Output.Commit).
type CommitFunc func(ctx context.Context, req CommitRequest) (CommitResult, error)

// Commit hands this build's single write of the output to fn, for writers
// that live outside the engine (a MERGE INTO executor, a Delta Lake sync).
// fn must honour the CommitRequest contract: one Iceberg commit carrying
// SetProperties, conditional on Expect. op names the operation in the
// build's result ("merge"). When create is not nil and the output does not
// exist, floe first creates it with that schema and the output's declared
// identifier fields, partition spec and properties (a separate catalog
// operation: a build stopped right after it leaves an empty output without
// watermarks, which the next build rebuilds). Like the other writes, it may
// be used once per build; a second use fails with ErrAlreadyWritten.
func (o *Output) Commit(op string, create *arrow.Schema, fn CommitFunc) error {
	if err := o.begin(op); err != nil {
		return err
	}
	ctx := o.b.ctx
	if create != nil {
		if _, err := o.ensure(ctx, create, o.spec.Identifier); err != nil {
			return err
		}
	}
	opts := o.commitOptions()
	req := CommitRequest{
		Catalog:            o.b.r.Catalog,
		Table:              o.ident,
		Branch:             o.spec.Branch,
		Replace:            !o.b.incremental,
		SetProperties:      map[string]string(opts.SetProperties),
		Expect:             o.expect,
		SnapshotProperties: map[string]string(opts.SnapshotProperties),
		Logger:             o.b.log,
	}
	res, err := fn(ctx, req)
	if err != nil {
		return fmt.Errorf("output %s: %s: %w", o.spec.Table, op, err)
	}
	o.result.Committed, o.result.SnapshotID = res.Committed, res.SnapshotID
	o.result.RowsAdded, o.result.RowsRemoved = res.RowsAdded, res.RowsRemoved
	o.result.Attempts, o.result.AnswerLost = res.Attempts, res.AnswerLost
	return nil
}
