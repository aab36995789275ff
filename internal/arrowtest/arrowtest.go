// Package arrowtest builds Arrow records from Go values in tests and
// renders them back as sorted tuple strings for comparison.
package arrowtest

import (
	"fmt"
	"iter"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

// Record builds a record of schema from rows of Go values: nil for NULL,
// int/int64 for integer columns, float64, string, bool. Other column types
// take their value through the builder's string parser.
func Record(schema *arrow.Schema, data [][]any) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, row := range data {
		if len(row) != schema.NumFields() {
			panic(fmt.Sprintf("row %v has %d values, schema %d fields", row, len(row), schema.NumFields()))
		}
		for i, v := range row {
			fb := b.Field(i)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int32Builder:
				fb.Append(int32(toInt(v)))
			case *array.Int64Builder:
				fb.Append(int64(toInt(v)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			default:
				if err := fb.AppendValueFromString(fmt.Sprint(v)); err != nil {
					panic(err)
				}
			}
		}
	}
	return b.NewRecordBatch()
}

func toInt(v any) int64 {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case int64:
		return v
	}
	panic(fmt.Sprintf("not an integer: %v (%T)", v, v))
}

// Seq yields the records once each (retaining them for the consumer).
func Seq(recs ...arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}

// Strings renders every row of the records as tuples, sorted.
func Strings(recs ...arrow.RecordBatch) []string {
	var out []string
	for _, r := range recs {
		for i := 0; i < int(r.NumRows()); i++ {
			out = append(out, rows.FormatRow(r, i))
		}
	}
	sort.Strings(out)
	return out
}

// Collect drains a stream into tuple strings, sorted, releasing records.
func Collect(seq iter.Seq2[arrow.RecordBatch, error]) ([]string, error) {
	return rows.FormatSorted(seq)
}

// Values drains a stream into rows of Go values (see RowValues), releasing
// the records.
func Values(seq iter.Seq2[arrow.RecordBatch, error]) ([][]any, error) {
	var out [][]any
	for rec, err := range seq {
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, RowValues(rec, i))
		}
		rec.Release()
	}
	return out, nil
}

// RowValues returns row i of rec as Go values: nil for NULL, int64 for
// integer columns, float64, string, bool, and floe's text form
// (rows.FormatValue) for the other types.
func RowValues(rec arrow.RecordBatch, i int) []any {
	row := make([]any, rec.NumCols())
	for c := range row {
		col := rec.Column(c)
		if col.IsNull(i) {
			continue
		}
		switch a := col.(type) {
		case *array.Int64:
			row[c] = a.Value(i)
		case *array.Int32:
			row[c] = int64(a.Value(i))
		case *array.Float64:
			row[c] = a.Value(i)
		case *array.String:
			row[c] = a.Value(i)
		case *array.Boolean:
			row[c] = a.Value(i)
		default:
			row[c] = rows.FormatValue(col, i)
		}
	}
	return row
}
