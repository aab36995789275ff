package changelog_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

type contextT = context.Context

// overwritePartitions is Spark's INSERT OVERWRITE with dynamic partition
// overwrite: it replaces the partitions the new rows fall in (the whole
// table when unpartitioned). Only identity partitions are supported here.
func overwritePartitions(e *tabletest.Env, target tableops.Target, tbl *table.Table, as *arrow.Schema, data [][]any) (*tableops.Outcome, error) {
	spec := tbl.Spec()
	if spec.IsUnpartitioned() {
		return tableops.Overwrite(e.Ctx, target, nil, tabletest.Seq(as, data))
	}
	var cols []string
	var idx []int
	for _, f := range spec.Fields() {
		if _, ok := f.Transform.(iceberg.IdentityTransform); !ok {
			return nil, fmt.Errorf("overwrite-partitions supports identity partitions only")
		}
		n, _ := tbl.Schema().FindColumnName(f.SourceID())
		cols = append(cols, n)
		for i, af := range as.Fields() {
			if af.Name == n {
				idx = append(idx, i)
			}
		}
	}
	rec, err := tabletest.Record(as, data)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	var buf []byte
	for i := 0; i < int(rec.NumRows()); i++ {
		buf = rows.AppendKey(buf[:0], rec, idx, i)
		keys[string(buf)] = true
	}
	rec.Release()
	p := &tableops.Predicate{Columns: cols, Match: func(_ context.Context, r arrow.RecordBatch) ([]bool, error) {
		out := make([]bool, r.NumRows())
		all := seqInts(len(cols))
		var b []byte
		for i := range out {
			b = rows.AppendKey(b[:0], r, all, i)
			out[i] = keys[string(b)]
		}
		return out, nil
	}}
	return tableops.Overwrite(e.Ctx, target, p, tabletest.Seq(as, data))
}

// setColumn returns the touched rows of rec with column col set to val.
func setColumn(rec arrow.RecordBatch, touched []bool, col, val string) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rec.Schema())
	defer b.Release()
	ci := rec.Schema().FieldIndices(col)
	if len(ci) != 1 {
		return nil, fmt.Errorf("no column %s", col)
	}
	for i, t := range touched {
		if !t {
			continue
		}
		for c := 0; c < int(rec.NumCols()); c++ {
			if c == ci[0] {
				if strings.EqualFold(val, "null") {
					b.Field(c).AppendNull()
				} else if err := b.Field(c).AppendValueFromString(val); err != nil {
					return nil, err
				}
				continue
			}
			s := array.NewSlice(rec.Column(c), int64(i), int64(i+1))
			err := appendFromSlice(b.Field(c), s)
			s.Release()
			if err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendFromSlice(fb array.Builder, s arrow.Array) error {
	if s.IsNull(0) {
		fb.AppendNull()
		return nil
	}
	return fb.AppendValueFromString(s.ValueStr(0))
}
