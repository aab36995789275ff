package transform

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/write"
)

// refit rebuilds an existing output whose columns no longer fit the rows
// of a full build (the transform's columns changed): in one commit, the
// output's schema becomes the rows' schema (columns kept by name keep
// their field ids; a type that cannot be widened is a new column; partition
// fields on dropped columns are dropped), every row is replaced and the
// build's watermarks are set, as Spark's CREATE OR REPLACE TABLE ... AS
// SELECT replaces a table. prepare is its commit.Prepare: package commit
// runs it, retries it and owns the files it writes.
type refit struct {
	o    *Output
	want *iceberg.Schema // the rows' schema, with fresh ids
	rows array.RecordReader
	// written: the rows were written (at the first attempt), as files
	// with schema and spec.
	written bool
	files   []iceberg.DataFile
	schema  *iceberg.Schema
	spec    iceberg.PartitionSpec
}

// newRefit returns the rebuild of the output tbl for rows, or nil when the
// rows fit it as they are.
func (o *Output) newRefit(tbl *table.Table, rows array.RecordReader) (*refit, error) {
	want, err := table.ArrowSchemaToIcebergWithFreshIDs(rows.Schema(), false)
	if err != nil {
		return nil, fmt.Errorf("output %s: schema: %w", o.spec.Table, err)
	}
	if fits(tbl.Schema(), want) {
		return nil, nil
	}
	return &refit{o: o, want: want, rows: rows}, nil
}

// fits reports whether rows of schema want can be written into a table of
// schema have as they are: the same column names, each of the same type.
func fits(have, want *iceberg.Schema) bool {
	if len(have.Fields()) != len(want.Fields()) {
		return false
	}
	for _, w := range want.Fields() {
		h, ok := have.FindFieldByName(w.Name)
		if !ok || !sameType(h.Type, w.Type) {
			return false
		}
	}
	return true
}

// sameType reports whether a and b are the same type but for the field ids
// of their nested fields (list elements, map keys and values, struct
// fields): rows read with fresh ids fit a table whose catalog assigned
// others (a REST catalog reassigns them on create).
func sameType(a, b iceberg.Type) bool {
	switch a := a.(type) {
	case *iceberg.ListType:
		b, ok := b.(*iceberg.ListType)
		return ok && a.ElementRequired == b.ElementRequired && sameType(a.Element, b.Element)
	case *iceberg.MapType:
		b, ok := b.(*iceberg.MapType)
		return ok && a.ValueRequired == b.ValueRequired && sameType(a.KeyType, b.KeyType) && sameType(a.ValueType, b.ValueType)
	case *iceberg.StructType:
		b, ok := b.(*iceberg.StructType)
		if !ok || len(a.FieldList) != len(b.FieldList) {
			return false
		}
		for i, f := range a.FieldList {
			g := b.FieldList[i]
			if f.Name != g.Name || f.Required != g.Required || !sameType(f.Type, g.Type) {
				return false
			}
		}
		return true
	}
	return a.Equals(b)
}

// prepare computes one attempt of the rebuild on cur, the freshly loaded
// output: it stages the schema and spec change on a scratch transaction to
// learn the new schema, writes the rows with it at the first attempt (the
// files registered with reuse, so that package commit removes them when
// they cannot be committed) and reuses them at later attempts, when the
// change gives the same schema and spec. The result replaces every row of
// cur and stages the same change (Prestage) in the commit's transaction.
func (f *refit) prepare(ctx context.Context, cur *table.Table, reuse *write.Reuse) (*write.Result, error) {
	o := f.o
	stage := func(tx *table.Transaction) error { return f.stage(cur, tx) }
	branch := o.spec.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	scratch, err := cur.NewTransactionOnBranchWithError(branch)
	if err != nil {
		return nil, err
	}
	if err := stage(scratch); err != nil {
		return nil, err
	}
	staged, err := scratch.StagedTable()
	if err != nil {
		return nil, err
	}
	switch {
	case !f.written:
		f.written = true
		target, err := table.SchemaToArrowSchema(staged.Schema(), nil, true, false)
		if err != nil {
			return nil, err
		}
		conformed, err := conform(ctx, o.spec.Table, f.rows, target)
		if err != nil {
			return nil, err
		}
		files, err := write.WriteRows(ctx, staged.Table, conformed)
		reuse.Own(paths(files)...)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", o.spec.Table, err)
		}
		f.files, f.schema, f.spec = files, staged.Schema(), staged.Spec()
	case !staged.Schema().Equals(f.schema) || !staged.Spec().Equals(f.spec):
		// The rows were written for the schema of the first attempt and
		// cannot be read again.
		return nil, fmt.Errorf("output %s: another writer changed its schema or partition spec while floe rebuilt it (the rebuild would now give %s); nothing was committed, run the build again",
			o.spec.Table, columnNames(staged.Schema()))
	}
	res, err := write.Prepare(ctx, write.Request{Table: cur, Branch: o.spec.Branch, RemoveAll: true, InsertFiles: f.files, Reuse: reuse})
	if err != nil {
		return nil, err
	}
	res.Prestage = stage
	return res, nil
}

// stage adds to tx, a transaction on tbl, the schema and partition spec
// change that makes tbl fit the rows.
func (f *refit) stage(tbl *table.Table, tx *table.Transaction) error {
	o, want := f.o, f.want
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
			return fmt.Errorf("output %s: drop partition fields %s: %w", o.spec.Table, strings.Join(dropFields, ", "), err)
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
			if !sameType(h.Type, w.Type) {
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
		return fmt.Errorf("output %s: change the schema to fit the rows: %w", o.spec.Table, err)
	}
	return nil
}

// keepsField reports whether column name keeps its field id: it is in both
// schemas and its type is the same or widens (int to long, ...).
func keepsField(have, want *iceberg.Schema, name string) bool {
	h, ok1 := have.FindFieldByName(name)
	w, ok2 := want.FindFieldByName(name)
	if !ok1 || !ok2 {
		return false
	}
	if sameType(h.Type, w.Type) {
		return true
	}
	_, err := iceberg.PromoteType(h.Type, w.Type)
	return err == nil
}

func columnNames(sc *iceberg.Schema) string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name+" "+ddl.FormatType(f.Type))
	}
	return strings.Join(out, ", ")
}
