package scan

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
)

// FileRows describes the rows of one data file as Open reads them: the
// requested columns first, then any extra columns needed to evaluate
// equality deletes.
type FileRows struct {
	Schema    *arrow.Schema // requested columns then extras
	Requested int           // number of requested columns at the front
	ColOf     map[int]int   // field ID -> column index, for every top-level column read
	Rows      iter.Seq2[Batch, error]
	outSchema *arrow.Schema
}

// OutSchema is the Arrow schema of the requested columns only.
func (f *FileRows) OutSchema() *arrow.Schema { return f.outSchema }

// Trim returns a record holding only the requested columns of rec (a
// batch of f.Rows). The caller releases the result.
func (f *FileRows) Trim(rec arrow.RecordBatch) arrow.RecordBatch {
	if f.Requested == int(rec.NumCols()) {
		rec.Retain()
		return rec
	}
	cols := make([]int, f.Requested)
	for i := range cols {
		cols[i] = i
	}
	return rows.Project(rec, f.outSchema, cols)
}

// Open reads data file df projected onto cols (top-level column names; nil
// means every column of the reader's schema), plus the columns the given
// delete sets compare, with no deletes applied: every row of the file, in
// file order, with its position. Identity-partition columns that the file
// does not store (tables registered from Hive-style layouts, migrated Delta
// tables) are filled from the manifest's partition values, as the spec's
// column projection rule requires.
func (r *Reader) Open(ctx context.Context, df iceberg.DataFile, cols []string, sets ...*DeleteSet) (*FileRows, error) {
	return r.open(ctx, df, cols, nil, nil, sets...)
}

// open is Open; with lin, the requested columns end with the row-lineage
// columns _row_id and _last_updated_sequence_number (see LiveLineage);
// with where (bound to the table's schema), row groups whose statistics
// rule it out may be left out (see direct).
func (r *Reader) open(ctx context.Context, df iceberg.DataFile, cols []string, lin *Lineage, where iceberg.BooleanExpression, sets ...*DeleteSet) (*FileRows, error) {
	proj, err := r.project(cols)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", df.FilePath(), err)
	}
	names := make([]string, 0, len(proj.Fields()))
	colOf := map[int]int{}
	for i, f := range proj.Fields() {
		names = append(names, f.Name)
		colOf[f.ID] = i
	}
	fields := proj.Fields()
	if lin != nil {
		for _, f := range []iceberg.NestedField{iceberg.RowID(), iceberg.LastUpdatedSequenceNumber()} {
			colOf[f.ID] = len(names)
			names = append(names, f.Name)
			fields = append(fields, f)
		}
	}
	requested := len(names)
	var extras []string
	for _, s := range sets {
		for _, id := range s.EqualityFieldIDs() {
			if _, ok := colOf[id]; ok {
				continue
			}
			n, ok := r.schema.FindColumnName(id)
			if !ok {
				return nil, fmt.Errorf("%w: equality field id %d is not in the schema", ErrInvalidDeleteFile, id)
			}
			colOf[id] = len(names)
			names = append(names, n)
			extras = append(extras, n)
		}
	}
	extraSchema, err := SelectColumns(r.schema, extras)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (nested equality delete columns are not supported)", df.FilePath(), err)
	}
	ordered := slices.Concat(fields, extraSchema.Fields())
	fullSchema := iceberg.NewSchema(r.schema.ID, ordered...)
	as, err := table.SchemaToArrowSchema(fullSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	outSchema := arrow.NewSchema(as.Fields()[:requested], nil)
	fill := r.partitionFill(df, ordered)
	fr := &FileRows{Schema: as, Requested: requested, ColOf: colOf, outSchema: outSchema}
	fr.Rows = func(yield func(Batch, error) bool) {
		for b, err := range r.raw(ctx, df, names, lin, where) {
			if err != nil {
				yield(Batch{}, err)
				return
			}
			rec, err := conform(b.Rec, as, fill)
			b.Rec.Release()
			if err != nil {
				yield(Batch{}, fmt.Errorf("read %s: %w", df.FilePath(), err))
				return
			}
			if !yield(Batch{Rec: rec, Pos: b.Pos}, nil) {
				return
			}
		}
	}
	return fr, nil
}

// fillSpec is a column to fill from a partition value.
type fillSpec struct {
	col   int
	value any
}

func (r *Reader) partitionFill(df iceberg.DataFile, fields []iceberg.NestedField) []fillSpec {
	spec := r.tbl.Metadata().PartitionSpecByID(int(df.SpecID()))
	if spec == nil {
		return nil
	}
	part := df.Partition()
	var out []fillSpec
	for _, pf := range spec.Fields() {
		if _, ok := pf.Transform.(iceberg.IdentityTransform); !ok {
			continue
		}
		v, ok := part[pf.FieldID]
		if !ok || v == nil {
			continue
		}
		for i, f := range fields {
			if f.ID == pf.SourceID() {
				out = append(out, fillSpec{col: i, value: v})
			}
		}
	}
	return out
}

// conform makes rec carry exactly the fields of schema (names and field-id
// metadata as floe's readers promise) and fills identity-partition columns
// whose values are missing.
func conform(rec arrow.RecordBatch, schema *arrow.Schema, fill []fillSpec) (arrow.RecordBatch, error) {
	if int(rec.NumCols()) != schema.NumFields() {
		return nil, fmt.Errorf("reader returned %d columns, want %d", rec.NumCols(), schema.NumFields())
	}
	cols := make([]arrow.Array, rec.NumCols())
	var owned []arrow.Array
	defer func() {
		for _, a := range owned {
			a.Release()
		}
	}()
	for i := range cols {
		cols[i] = rec.Column(i)
	}
	for _, f := range fill {
		// In a valid file an identity partition column equals its partition
		// value wherever it is stored; a column that is NULL throughout is
		// one the file does not store.
		c := cols[f.col]
		if c.Len() == 0 || c.NullN() != c.Len() {
			continue
		}
		filled, err := rows.ConstantArray(c.DataType(), f.value, c.Len())
		if err != nil {
			return nil, fmt.Errorf("column %s: partition value %v: %w", schema.Field(f.col).Name, f.value, err)
		}
		owned = append(owned, filled)
		cols[f.col] = filled
	}
	for i, c := range cols {
		if !arrow.TypeEqual(c.DataType(), schema.Field(i).Type) {
			return nil, fmt.Errorf("column %s: reader type %s, want %s", schema.Field(i).Name, c.DataType(), schema.Field(i).Type)
		}
	}
	return array.NewRecordBatch(schema, cols, rec.NumRows()), nil
}
