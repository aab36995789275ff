package transform

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/commit"
	"github.com/floedata/floe/ddl"
	"github.com/floedata/floe/write"
)

// refit rebuilds an existing output whose columns no longer fit the rows
// of a full build (the transform's columns changed): in one commit, the
// output's schema becomes the rows' schema (columns kept by name keep
// their field ids; a type that cannot be widened is a new column; partition
// fields on dropped columns are dropped), every row is replaced and the
// build's watermarks are set, as Spark's CREATE OR REPLACE TABLE ... AS
// SELECT replaces a table. done is false when the rows fit (nothing was
// done).
func (o *Output) refit(ctx context.Context, tbl *table.Table, rows array.RecordReader) (done bool, err error) {
	want, err := table.ArrowSchemaToIcebergWithFreshIDs(rows.Schema(), false)
	if err != nil {
		return false, fmt.Errorf("output %s: schema: %w", o.spec.Table, err)
	}
	if fits(tbl.Schema(), want) {
		return false, nil
	}
	files, at, err := o.refitOnce(ctx, tbl, want, rows, nil, nil)
	if err == nil || !write.IsConflict(err) {
		return true, err
	}
	for attempt := 2; attempt <= commit.DefaultMaxAttempts; attempt++ {
		commit.Backoff(ctx, attempt-1)
		cur, lerr := o.b.r.Catalog.Load(ctx, o.ident)
		if lerr != nil {
			o.cleanup(ctx, tbl, files)
			return true, lerr
		}
		if _, _, err = o.refitOnce(ctx, cur, want, nil, files, at); err == nil || !write.IsConflict(err) {
			return true, err
		}
	}
	o.cleanup(ctx, tbl, files)
	return true, fmt.Errorf("output %s: %w after %d attempts: %w", o.spec.Table, commit.ErrTooManyConflicts, commit.DefaultMaxAttempts, err)
}

// fits reports whether rows of schema want can be written into a table of
// schema have as they are: the same column names, each of the same type.
func fits(have, want *iceberg.Schema) bool {
	if len(have.Fields()) != len(want.Fields()) {
		return false
	}
	for _, w := range want.Fields() {
		h, ok := have.FindFieldByName(w.Name)
		if !ok || !h.Type.Equals(w.Type) {
			return false
		}
	}
	return true
}

// refitOnce stages the schema change on tbl, writes the rows with the new
// schema (or reuses files written by an earlier attempt, when the staged
// schema is the same) and commits the replace with the watermarks. It
// returns the data files, for reuse or cleanup.
func (o *Output) refitOnce(ctx context.Context, tbl *table.Table, want *iceberg.Schema, rows array.RecordReader,
	files []iceberg.DataFile, schemaAt *iceberg.Schema) (_ []iceberg.DataFile, _ *iceberg.Schema, err error) {
	committing := false
	defer func() {
		// NB: after a commit that failed otherwise than by a conflict, the
		// commit may or may not have happened: the files stay.
		if err != nil && !write.IsConflict(err) && !committing {
			o.cleanup(ctx, tbl, files)
			files = nil
		}
	}()
	for k, v := range o.expect {
		if tbl.Properties().Get(k, "") != v {
			return files, schemaAt, fmt.Errorf("output %s: %w: property %s changed during the build", o.spec.Table, commit.ErrWatermarkMoved, k)
		}
	}
	branch := o.spec.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	tx, err := tbl.NewTransactionOnBranchWithError(branch)
	if err != nil {
		return files, schemaAt, err
	}
	have := tbl.Schema()
	keep := map[string]bool{}
	for _, w := range want.Fields() {
		keep[w.Name] = true
	}
	// Partition fields on columns that go.
	spec := tbl.Spec()
	var dropFields []string
	for _, pf := range spec.Fields() {
		if src, ok := have.FindColumnName(pf.SourceID()); !ok || !keepsField(have, want, src) {
			dropFields = append(dropFields, pf.Name)
		}
	}
	if len(dropFields) > 0 {
		us := tx.UpdateSpec(true)
		for _, n := range dropFields {
			us.RemoveField(n)
		}
		if err := us.Commit(); err != nil {
			return files, schemaAt, fmt.Errorf("output %s: drop partition fields %s: %w", o.spec.Table, strings.Join(dropFields, ", "), err)
		}
	}
	// NB: incompatible changes are allowed so that key columns can become
	// required and identifier fields; every row is replaced in this commit.
	var opts []table.UpdateSchemaOption
	if nm := tbl.Metadata().NameMapping(); nm != nil {
		// Keep the table's name mapping in step with its columns.
		opts = append(opts, table.WithNameMapping(nm))
	}
	u := tx.UpdateSchema(true, true, opts...)
	for _, h := range have.Fields() {
		if !keep[h.Name] || !keepsField(have, want, h.Name) {
			u.DeleteColumn([]string{h.Name})
		}
	}
	ids := o.spec.Identifier
	for _, w := range want.Fields() {
		required := w.Required || slices.Contains(ids, w.Name)
		h, ok := have.FindFieldByName(w.Name)
		switch {
		case !ok || !keepsField(have, want, w.Name):
			u.AddColumn([]string{w.Name}, w.Type, w.Doc, required, nil)
		default:
			upd := table.ColumnUpdate{}
			if !h.Type.Equals(w.Type) {
				upd.FieldType = iceberg.Optional[iceberg.Type]{Valid: true, Val: w.Type}
			}
			if h.Required != required {
				upd.Required = iceberg.Optional[bool]{Valid: true, Val: required}
			}
			u.UpdateColumn([]string{w.Name}, upd)
		}
	}
	for i, w := range want.Fields() {
		if i == 0 {
			u.MoveFirst([]string{w.Name})
		} else {
			u.MoveAfter([]string{w.Name}, []string{want.Fields()[i-1].Name})
		}
	}
	paths := make([][]string, 0, len(ids))
	for _, n := range ids {
		paths = append(paths, []string{n})
	}
	u.SetIdentifierField(paths)
	if err := u.Commit(); err != nil {
		return files, schemaAt, fmt.Errorf("output %s: change the schema to fit the rows: %w", o.spec.Table, err)
	}
	staged, err := tx.StagedTable()
	if err != nil {
		return files, schemaAt, err
	}
	if files == nil {
		target, err := table.SchemaToArrowSchema(staged.Schema(), nil, true, false)
		if err != nil {
			return nil, nil, err
		}
		conformed, err := conform(ctx, o.spec.Table, rows, target)
		if err != nil {
			return nil, nil, err
		}
		if files, err = write.WriteRows(ctx, staged.Table, conformed); err != nil {
			return nil, nil, fmt.Errorf("output %s: %w", o.spec.Table, err)
		}
		schemaAt = staged.Schema()
	} else if !staged.Schema().Equals(schemaAt) {
		return files, schemaAt, fmt.Errorf("output %s: its schema changed while floe rebuilt it; run the build again", o.spec.Table)
	}
	res, err := write.Prepare(ctx, write.Request{Table: tbl, Branch: o.spec.Branch, RemoveAll: true})
	if err != nil {
		return files, schemaAt, err
	}
	res.AddData = files
	for _, f := range files {
		res.RowsAdded += f.Count()
	}
	if err := res.StageOn(ctx, tx, o.commitOptions().SnapshotProperties, o.b.next.Properties()); err != nil {
		return files, schemaAt, err
	}
	committing = true
	newTbl, err := tx.Commit(ctx)
	if err != nil {
		if !write.IsConflict(err) {
			return files, schemaAt, fmt.Errorf("output %s: %w", o.spec.Table, err)
		}
		return files, schemaAt, err
	}
	o.b.log.Info("rebuilt output with a new schema", "output", o.spec.Table, "columns", columnNames(staged.Schema()))
	var snap int64
	if s, _ := write.BranchHead(newTbl, o.spec.Branch); s != nil {
		snap = s.SnapshotID
	}
	o.record(true, snap, res)
	return files, schemaAt, nil
}

// keepsField reports whether column name keeps its field id: it is in both
// schemas and its type is the same or widens (int to long, ...).
func keepsField(have, want *iceberg.Schema, name string) bool {
	h, ok1 := have.FindFieldByName(name)
	w, ok2 := want.FindFieldByName(name)
	if !ok1 || !ok2 {
		return false
	}
	if h.Type.Equals(w.Type) {
		return true
	}
	_, err := iceberg.PromoteType(h.Type, w.Type)
	return err == nil
}

func (o *Output) cleanup(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) {
	if len(files) == 0 {
		return
	}
	if fs, err := tbl.FS(ctx); err == nil {
		write.Cleanup(fs, paths(files))
	}
}

func columnNames(sc *iceberg.Schema) string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name+" "+ddl.FormatType(f.Type))
	}
	return strings.Join(out, ", ")
}
