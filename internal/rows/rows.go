// Package rows holds Arrow record helpers shared by floe's packages: row
// selection, canonical key encoding for hashing and equality, value
// rendering for messages, and spilling batches to disk.
package rows

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Select returns the rows of rec whose keep flag is true, in order. When
// every row is kept it returns rec itself with an extra reference; the
// caller releases the result in all cases.
func Select(ctx context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
	n := 0
	for _, k := range keep {
		if k {
			n++
		}
	}
	if n == len(keep) {
		rec.Retain()
		return rec, nil
	}
	b := array.NewBooleanBuilder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(keep, nil)
	mask := b.NewBooleanArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("select rows: %w", err)
	}
	return out, nil
}

// Take returns the rows of rec at the given indices, in that order.
func Take(ctx context.Context, rec arrow.RecordBatch, idx []int64) (arrow.RecordBatch, error) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	defer b.Release()
	b.AppendValues(idx, nil)
	ia := b.NewInt64Array()
	defer ia.Release()
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i := range cols {
		c, err := compute.TakeArray(ctx, rec.Column(i), ia)
		if err != nil {
			return nil, fmt.Errorf("take rows: %w", err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(rec.Schema(), cols, int64(len(idx))), nil
}

// Project returns a record with the given columns of rec, in that order,
// under schema (which must describe them).
func Project(rec arrow.RecordBatch, schema *arrow.Schema, cols []int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(cols))
	for i, c := range cols {
		arrs[i] = rec.Column(c)
	}
	return array.NewRecordBatch(schema, arrs, rec.NumRows())
}

// Concat concatenates records of one schema into one record. It returns
// nil for no records.
func Concat(schema *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, schema.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for i := range cols {
		parts := make([]arrow.Array, len(recs))
		for j, r := range recs {
			parts[j] = r.Column(i)
		}
		c, err := array.Concatenate(parts, memory.DefaultAllocator)
		if err != nil {
			for _, c := range cols[:i] {
				c.Release()
			}
			return nil, fmt.Errorf("concatenate column %s: %w", schema.Field(i).Name, err)
		}
		cols[i] = c
	}
	out := array.NewRecordBatch(schema, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}

// ConstantArray returns an array of n copies of v (nil for NULL) of type dt,
// where v is a Go value as iceberg-go keeps partition values.
func ConstantArray(dt arrow.DataType, v any, n int) (arrow.Array, error) {
	sc, err := scalarOf(dt, v)
	if err != nil {
		return nil, err
	}
	return scalarToArray(sc, n)
}
