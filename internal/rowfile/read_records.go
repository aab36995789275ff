package rowfile

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
)

// recordSource converts a caller's Arrow batches with the rules used for
// Parquet columns (exact types pass through; only widenings that hold for
// every value are accepted; strings are parsed).
type recordSource struct {
	*arrowCols
	pull func() (arrow.RecordBatch, error, bool)
	stop func()
	cur  arrow.RecordBatch
}

func (s *recordSource) next(context.Context) (arrow.RecordBatch, error) {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	rec, err, ok := s.pull()
	if !ok {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.file, err)
	}
	s.cur = rec
	return s.convert(rec, rec.NumRows())
}

func (s *recordSource) close() error {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
	s.stop()
	s.arrowCols.release()
	return nil
}

// FromRecords reads Arrow batches of schema src (a caller's stream; each
// batch is released once converted) into opts.Target plus opts.Extra, as
// Open reads a Parquet file with that schema: columns match by name,
// missing nullable columns are NULL, exact types pass through, safe
// widenings are applied and anything else is an error naming the column.
// name identifies the stream in errors.
func FromRecords(ctx context.Context, name string, src *arrow.Schema, recs iter.Seq2[arrow.RecordBatch, error], opts ReadOptions) (*Reader, error) {
	schema, err := opts.outputSchema()
	if err != nil {
		return nil, err
	}
	if err := checkTypes(schema, opts.allocator()); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ac, srcOf, err := planArrowCols(name, src, schema, &opts)
	if err != nil {
		return nil, err
	}
	for i, f := range src.Fields() {
		if col, ok := srcOf[f.Name]; ok {
			ac.cols[col].src = i
		}
	}
	next, stop := iter.Pull2(recs)
	rd := &Reader{ctx: ctx, name: name, schema: schema}
	rd.refs.Store(1)
	rd.src = &recordSource{arrowCols: ac, pull: next, stop: stop}
	return rd, nil
}
