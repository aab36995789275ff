package transform

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// ErrAlreadyWritten is returned when compute writes one output twice in a
// build: each output gets exactly one commit per build.
var ErrAlreadyWritten = errors.New("output already written in this build")

// Output is an output table as one build writes it. Each of Write,
// Replace, ApplyChangelog, Commit and Transaction may be used once per
// build; the commit carries the build's watermarks.
type Output struct {
	spec    OutputSpec
	b       *build
	ident   table.Identifier
	tbl     *table.Table // nil when missing at the start of the build
	expect  map[string]string
	written bool
	tx      *table.Transaction
	result  OutputResult
}

// OutputResult says what a build committed to one output.
type OutputResult struct {
	Name, Table string
	Operation   string // write, replace, apply, merge, native, watermark, none
	SnapshotID  int64
	Committed   bool
	RowsAdded   int64
	RowsRemoved int64
	// Attempts counts the commit attempts (1: no conflict with another
	// writer; 0: unknown, or nothing was committed).
	Attempts int
	// AnswerLost reports that the catalog's answer to the output's commit
	// was lost and floe found the commit on the table by its id
	// (commit.Outcome.AnswerLost): it landed once.
	AnswerLost bool
	// CompactionSnapshotID is the replace snapshot the automatic
	// compaction committed after the build's commit (0: none: the output
	// is not merge-on-read, nothing was over the thresholds, or it failed).
	CompactionSnapshotID int64
	// CompactionError says why the automatic compaction failed; the build
	// committed nonetheless.
	CompactionError string
}

// Name is the output's declared name.
func (o *Output) Name() string { return o.spec.Name }

// Table is the iceberg-go table as loaded at the start of the build (nil
// when the output does not exist yet).
func (o *Output) Table() *table.Table { return o.tbl }

func (o *Output) begin(op string) error {
	if o.written {
		return fmt.Errorf("%w: %s (%s)", ErrAlreadyWritten, o.spec.Name, o.spec.Table)
	}
	o.written = true
	o.result.Operation = op
	return nil
}

func (o *Output) commitOptions() commit.Options {
	return commit.Options{
		Branch:             o.spec.Branch,
		SnapshotProperties: o.summary(map[string]string{"floe.operation": "transform"}),
		SetProperties:      o.b.next.Properties(),
		Expect:             o.expect,
		CommitEmpty:        true,
	}
}

// Write appends rows when the build is incremental and replaces the
// output's rows when it is not (creating the table on the first build,
// with the rows' schema).
func (o *Output) Write(rows array.RecordReader) error {
	if o.b.incremental {
		return o.write("write", rows, false)
	}
	return o.write("write", rows, true)
}

// Replace replaces the output's rows with rows, in one commit.
func (o *Output) Replace(rows array.RecordReader) error { return o.write("replace", rows, true) }

func (o *Output) write(op string, rows array.RecordReader, replace bool) error {
	if err := o.begin(op); err != nil {
		return err
	}
	ctx := o.b.ctx
	// The rows are written once, at the first attempt; package commit owns
	// the files.
	var files []iceberg.DataFile
	written := false
	prepare := func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		if !written {
			written = true
			target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
			if err != nil {
				return nil, err
			}
			conformed, err := conform(ctx, o.spec.Table, rows, target)
			if err != nil {
				return nil, err
			}
			if replace {
				// The output's whole content: its identifier (and declared
				// one) must be unique in it.
				if conformed, err = uniqueStream(ctx, "", target, conformed, o.keySets(tbl)); err != nil {
					return nil, err
				}
			}
			files, err = write.WriteRows(ctx, tbl, conformed)
			reuse.Own(paths(files)...)
			if err != nil {
				return nil, err
			}
		}
		return write.Prepare(ctx, write.Request{Table: tbl, Branch: o.spec.Branch, RemoveAll: replace, InsertFiles: files, Reuse: reuse})
	}
	if o.tbl == nil {
		if done, err := o.createWith(ctx, rows.Schema(), prepare, &written); done || err != nil {
			return err
		}
	}
	tbl, err := o.ensure(ctx, rows.Schema(), o.spec.Identifier)
	if err != nil {
		return err
	}
	var rebuilt *refit
	if replace {
		// A full build whose columns no longer fit the output rebuilds it.
		if rebuilt, err = o.newRefit(tbl, rows); err != nil {
			return err
		} else if rebuilt != nil {
			prepare = rebuilt.prepare
		}
	}
	res, err := commit.Run(ctx, o.b.r.Catalog, o.ident, o.commitOptions(), prepare)
	if err != nil {
		return fmt.Errorf("output %s: %w", o.spec.Table, err)
	}
	if rebuilt != nil {
		o.b.log.Info("rebuilt output with a new schema", "output", o.spec.Table, "columns", columnNames(rebuilt.schema))
	}
	o.record(res, res.Result)
	return nil
}

// createWith creates the missing output with its first rows and the
// build's watermarks in one catalog commit (commit.Create), so that no
// reader sees it empty and without watermarks. It reports false, with
// nothing done, when the catalog cannot create a table in a commit or the
// output appeared meanwhile; then the output is created first and written
// in a second commit (a build stopped in between leaves an empty output
// without watermarks, which the next build rebuilds).
func (o *Output) createWith(ctx context.Context, schema *arrow.Schema, prepare commit.Prepare, consumed *bool) (bool, error) {
	sc, spec, props, err := o.tableSpec(schema, o.spec.Identifier)
	if err != nil {
		return false, err
	}
	if err := o.b.r.Catalog.EnsureNamespace(ctx, o.ident[:len(o.ident)-1]); err != nil {
		return false, err
	}
	res, err := commit.Create(ctx, o.b.r.Catalog, o.ident, sc, spec, props, o.commitOptions(), prepare)
	switch {
	case err == nil:
	case (errors.Is(err, commit.ErrCreateUnsupported) || errors.Is(err, commit.ErrTableExists)) && !*consumed:
		return false, nil
	case errors.Is(err, commit.ErrTableExists):
		// The rows were read for this attempt and cannot be read again.
		return false, fmt.Errorf("output %s: %w: another build created the output first; nothing was committed (%w)", o.spec.Table, commit.ErrWatermarkMoved, err)
	default:
		return false, fmt.Errorf("output %s: %w", o.spec.Table, err)
	}
	o.tbl = res.Table
	o.b.log.Info("created output table with its first rows", "output", o.spec.Table)
	o.record(res, res.Result)
	return true, nil
}

// record notes what a commit did: its outcome and the change r it
// committed (nil for a commit of properties only).
func (o *Output) record(out *commit.Outcome, r *write.Result) {
	o.result.Committed, o.result.SnapshotID, o.result.Attempts, o.result.AnswerLost = out.Committed, out.SnapshotID, out.Attempts, out.AnswerLost
	if r != nil {
		o.result.RowsAdded, o.result.RowsRemoved = r.RowsAdded, r.RowsRemoved
	}
}

// ApplyChangelog upserts and deletes rows of the output by key from change
// rows (as Input.Changelog returns them), in one commit with the build's
// watermarks. The output is created (identifier fields = keys) when missing.
func (o *Output) ApplyChangelog(changes array.RecordReader, keys ...string) error {
	if err := o.begin("apply"); err != nil {
		return err
	}
	ctx := o.b.ctx
	dataSchema := withoutChangeColumns(changes.Schema())
	if _, err := o.ensure(ctx, dataSchema, keys); err != nil {
		return err
	}
	opts := []merge.Option{merge.WithBranch(o.spec.Branch), merge.WithCommitProperties(o.b.next.Properties()),
		merge.WithExpectedProperties(o.expect), merge.WithCommitEmpty(),
		merge.WithSnapshotProperties(o.summary(nil))}
	if o.spec.NonIdentifierKey {
		opts = append(opts, merge.WithNonIdentifierKey())
	}
	res, err := merge.Apply(ctx, o.b.r.Catalog, o.ident, changes.Schema(), streamOf(changes), keys, opts...)
	if err != nil {
		return fmt.Errorf("output %s: %w", o.spec.Table, err)
	}
	o.result.Committed, o.result.SnapshotID = res.Committed, res.SnapshotID
	o.result.RowsAdded, o.result.RowsRemoved = res.RowsAdded, res.RowsRemoved
	o.result.Attempts, o.result.AnswerLost = res.Attempts, res.AnswerLost
	return nil
}

// Merge runs a SQL MERGE INTO statement on the output with source as its
// USING rows, in one commit with the build's watermarks. The statement's
// target may be written {output} (or the output's table name); its USING
// clause names the source (any name: the rows come from source), e.g.
//
//	MERGE INTO {output} AS t USING changes AS s ON t.id = s.id
//	WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
//	WHEN MATCHED THEN UPDATE SET *
//	WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *
func (o *Output) Merge(statement string, source array.RecordReader) error {
	if err := o.begin("merge"); err != nil {
		return err
	}
	ctx := o.b.ctx
	stmt, err := expr.ParseMerge(strings.ReplaceAll(statement, "{output}", catalog.FormatName(o.ident)))
	if err != nil {
		return fmt.Errorf("output %s: %s", o.spec.Table, expr.FormatError(statement, err))
	}
	if catalog.FormatName(stmt.Target) != catalog.FormatName(o.ident) {
		return fmt.Errorf("output %s: the MERGE statement targets %s", o.spec.Table, catalog.FormatName(stmt.Target))
	}
	if o.tbl == nil {
		return fmt.Errorf("output %s does not exist yet: create it with Write or Replace on a full build", o.spec.Table)
	}
	name := ""
	if len(stmt.Source.Table) > 0 {
		name = stmt.Source.Table[len(stmt.Source.Table)-1]
	}
	res, err := merge.Merge(ctx, o.b.r.Catalog, stmt, merge.Source{Name: name, Schema: source.Schema(), Rows: streamOf(source)},
		merge.WithBranch(o.spec.Branch), merge.WithCommitProperties(o.b.next.Properties()),
		merge.WithExpectedProperties(o.expect), merge.WithCommitEmpty(),
		merge.WithSnapshotProperties(o.summary(nil)))
	if err != nil {
		return fmt.Errorf("output %s: %w", o.spec.Table, err)
	}
	o.result.Committed, o.result.SnapshotID = res.Committed, res.SnapshotID
	o.result.RowsAdded, o.result.RowsRemoved = res.RowsAdded, res.RowsRemoved
	o.result.Attempts, o.result.AnswerLost = res.Attempts, res.AnswerLost
	return nil
}

// Transaction returns an iceberg-go transaction on the output for native
// writes (the seeds' PyIceberg and Spark examples). floe commits it after
// compute returns, with the build's watermarks in the same commit.
func (o *Output) Transaction() (*table.Transaction, error) {
	if err := o.begin("native"); err != nil {
		return nil, err
	}
	if o.tbl == nil {
		return nil, fmt.Errorf("output %s does not exist yet: create it with Write or Replace on a full build", o.spec.Table)
	}
	branch := o.spec.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	tx, err := o.tbl.NewTransactionOnBranchWithError(branch)
	if err != nil {
		return nil, err
	}
	o.tx = tx
	return tx, nil
}

// finish commits a native transaction, or advances the watermark of an
// output compute did not write.
func (o *Output) finish(ctx context.Context) error {
	if o.tx != nil {
		// One attempt (compute's writes cannot be redone here), the
		// watermark checked on the fresh table, a lost answer resolved.
		res, err := commit.CommitTx(ctx, o.b.r.Catalog, o.tbl, o.tx, commit.Options{
			Branch: o.spec.Branch, SetProperties: o.b.next.Properties(), Expect: o.expect})
		if err != nil {
			return fmt.Errorf("output %s: commit native transaction: %w", o.spec.Table, err)
		}
		o.result.Committed, o.result.SnapshotID = res.Committed, res.SnapshotID
		o.result.AnswerLost = res.AnswerLost
		return nil
	}
	if o.written {
		return nil
	}
	if o.tbl == nil {
		o.result.Operation = "none"
		o.b.log.Warn("output not written and missing; it stays missing", "output", o.spec.Table)
		return nil
	}
	o.result.Operation = "watermark"
	res, err := commit.Run(ctx, o.b.r.Catalog, o.ident, o.commitOptions(), func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		return write.Prepare(ctx, write.Request{Table: tbl, Branch: o.spec.Branch})
	})
	if err != nil {
		return fmt.Errorf("output %s: %w", o.spec.Table, err)
	}
	o.record(res, nil)
	return nil
}

// ensure returns the output table, creating it from schema when missing.
func (o *Output) ensure(ctx context.Context, schema *arrow.Schema, identifier []string) (*table.Table, error) {
	if o.tbl != nil {
		return o.tbl, nil
	}
	cat := o.b.r.Catalog
	if tbl, err := cat.Load(ctx, o.ident); err == nil {
		o.tbl = tbl
		return tbl, nil
	}
	sc, spec, props, err := o.tableSpec(schema, identifier)
	if err != nil {
		return nil, err
	}
	if err := cat.EnsureNamespace(ctx, o.ident[:len(o.ident)-1]); err != nil {
		return nil, err
	}
	tbl, err := tableops.Create(ctx, cat, o.ident, sc, spec, props)
	if err != nil {
		return nil, err
	}
	o.b.log.Info("created output table", "output", o.spec.Table)
	o.tbl = tbl
	return tbl, nil
}

// tableSpec is the schema (with identifier fields), partition spec and
// properties of a new output for rows of schema.
func (o *Output) tableSpec(schema *arrow.Schema, identifier []string) (*iceberg.Schema, iceberg.PartitionSpec, iceberg.Properties, error) {
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(schema, false)
	if err != nil {
		return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("output %s: schema: %w", o.spec.Table, err)
	}
	if len(identifier) > 0 {
		var ids []int
		fields := sc.Fields()
		for _, n := range identifier {
			found := false
			for i, f := range fields {
				if f.Name == n {
					fields[i].Required = true
					ids = append(ids, f.ID)
					found = true
				}
			}
			if !found {
				return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("output %s: identifier column %q is not in the written rows", o.spec.Table, n)
			}
		}
		sc = iceberg.NewSchemaWithIdentifiers(sc.ID, ids, fields...)
	}
	spec, err := ddl.ParsePartitionSpec(o.spec.PartitionBy, sc)
	if err != nil {
		return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("output %s: partition: %w", o.spec.Table, err)
	}
	props := iceberg.Properties{}
	for k, v := range o.spec.Properties {
		props[k] = v
	}
	return sc, spec, props, nil
}

// withoutChangeColumns drops changelog metadata columns from a schema.
func withoutChangeColumns(s *arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range s.Fields() {
		switch f.Name {
		case changelog.ChangeTypeColumn, changelog.ChangeOrdinalColumn, changelog.CommitSnapshotColumn:
			continue
		}
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil)
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}
