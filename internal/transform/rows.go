package transform

import (
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/rows"
)

// Rows is a stream of record batches, readable as an array.RecordReader
// (Next/RecordBatch/Err) or with All. It can be read once.
type Rows struct {
	schema *arrow.Schema
	seq    iter.Seq2[arrow.RecordBatch, error]
	next   func() (arrow.RecordBatch, error, bool)
	stop   func()
	cur    arrow.RecordBatch
	err    error
	refs   atomic.Int64
}

var _ array.RecordReader = (*Rows)(nil)

// NewRows wraps a stream (whose consumer releases each batch).
func NewRows(schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error]) *Rows {
	r := &Rows{schema: schema, seq: seq}
	r.refs.Store(1)
	return r
}

// Schema is the rows' schema.
func (r *Rows) Schema() *arrow.Schema { return r.schema }

// All yields the batches; the consumer releases each one. Use either All or
// the RecordReader methods, not both.
func (r *Rows) All() iter.Seq2[arrow.RecordBatch, error] {
	seq := r.seq
	r.seq = nil
	if seq == nil {
		return func(func(arrow.RecordBatch, error) bool) {}
	}
	return seq
}

// Next advances to the next batch.
func (r *Rows) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.next == nil {
		if r.seq == nil {
			return false
		}
		r.next, r.stop = iter.Pull2(r.seq)
		r.seq = nil
	}
	rec, err, ok := r.next()
	if !ok {
		return false
	}
	if err != nil {
		r.err = err
		return false
	}
	r.cur = rec
	return true
}

// RecordBatch is the current batch (valid until Next).
func (r *Rows) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch.
//
// Deprecated: use RecordBatch.
func (r *Rows) Record() arrow.RecordBatch { return r.cur }

// Err is the error that stopped Next.
func (r *Rows) Err() error { return r.err }

// Retain adds a reference.
func (r *Rows) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one stops the stream.
func (r *Rows) Release() {
	if r.refs.Add(-1) > 0 {
		return
	}
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.stop != nil {
		r.stop()
	}
}

// streamOf turns any array.RecordReader into a stream of retained batches.
func streamOf(rr array.RecordReader) iter.Seq2[arrow.RecordBatch, error] {
	if r, ok := rr.(*Rows); ok && r.next == nil && r.seq != nil {
		return r.All()
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := rr.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// Select returns the rows projected to the named columns, in that order,
// plus any changelog metadata columns (_change_type, _change_ordinal,
// _commit_snapshot_id) the rows carry. An unknown column is an error.
func (r *Rows) Select(cols ...string) (*Rows, error) {
	if len(cols) == 0 {
		return r, nil
	}
	var idx []int
	var fields []arrow.Field
	seen := map[int]bool{}
	for _, c := range cols {
		i := r.schema.FieldIndices(c)
		if len(i) == 0 {
			return nil, fmt.Errorf("%w %q (columns: %s)", ErrUnknownColumn, c, fieldNames(r.schema))
		}
		if seen[i[0]] {
			continue
		}
		seen[i[0]] = true
		idx = append(idx, i[0])
		fields = append(fields, r.schema.Field(i[0]))
	}
	for _, m := range metaColumns {
		if i := r.schema.FieldIndices(m); len(i) > 0 && !seen[i[0]] {
			idx = append(idx, i[0])
			fields = append(fields, r.schema.Field(i[0]))
		}
	}
	schema := arrow.NewSchema(fields, nil)
	src := r.All()
	return NewRows(schema, func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range src {
			if err != nil {
				yield(nil, err)
				return
			}
			out := rows.Project(rec, schema, idx)
			rec.Release()
			if !yield(out, nil) {
				return
			}
		}
	}), nil
}

// ErrUnknownColumn is wrapped when a selected column does not exist.
var ErrUnknownColumn = errors.New("unknown column")

var metaColumns = []string{"_change_type", "_change_ordinal", "_commit_snapshot_id"}

func fieldNames(s *arrow.Schema) string {
	out := ""
	for i, f := range s.Fields() {
		if i > 0 {
			out += ", "
		}
		out += f.Name
	}
	return out
}
