package merge

import (
	"cmp"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
)

// maxInList is the largest set of values a key filter lists; larger sets
// become a range.
const maxInList = 10000

// keyFilter builds a conservative Iceberg filter matching the key values of
// the given rows: per key column an IN list (or a min..max range when the
// list is long), ANDed. Columns whose type has no literal form are left
// out (no pruning on them).
func keyFilter(sc *iceberg.Schema, recs []arrow.RecordBatch, keyCols []int, keyNames []string, rowsOf iter.Seq2[int, int]) iceberg.BooleanExpression {
	var out iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	for k, col := range keyCols {
		seen := map[any]bool{}
		var vals []any
		for b, i := range rowsOf {
			v, ok := literalValue(recs[b].Column(col), i)
			if !ok {
				vals = nil
				break
			}
			key := v
			if bs, isBytes := v.([]byte); isBytes {
				key = string(bs)
			}
			if !seen[key] {
				seen[key] = true
				vals = append(vals, v)
			}
		}
		if len(vals) == 0 {
			continue
		}
		if _, ok := sc.FindFieldByName(keyNames[k]); !ok {
			continue
		}
		ref := iceberg.Reference(keyNames[k])
		var e iceberg.BooleanExpression
		if len(vals) <= maxInList {
			lits := make([]iceberg.Literal, len(vals))
			for i, v := range vals {
				lits[i] = toLiteral(v)
			}
			e = iceberg.SetPredicate(iceberg.OpIn, ref, lits)
		} else {
			lo, hi, ok := bounds(vals)
			if !ok {
				continue
			}
			e = iceberg.NewAnd(iceberg.LiteralPredicate(iceberg.OpGTEQ, ref, toLiteral(lo)), iceberg.LiteralPredicate(iceberg.OpLTEQ, ref, toLiteral(hi)))
		}
		out = iceberg.NewAnd(out, e)
	}
	return out
}

// literalValue returns arr[i] as a Go value iceberg.NewLiteral accepts.
func literalValue(arr arrow.Array, i int) (any, bool) {
	if arr.IsNull(i) {
		return nil, false
	}
	switch a := arr.(type) {
	case *array.Int32:
		return a.Value(i), true
	case *array.Int64:
		return a.Value(i), true
	case *array.String:
		return a.Value(i), true
	case *array.LargeString:
		return a.Value(i), true
	case *array.Boolean:
		return a.Value(i), true
	case *array.Date32:
		return iceberg.Date(a.Value(i)), true
	case *array.Timestamp:
		if a.DataType().(*arrow.TimestampType).Unit == arrow.Microsecond {
			return iceberg.Timestamp(a.Value(i)), true
		}
	case *array.Decimal128:
		return iceberg.Decimal{Val: a.Value(i), Scale: int(a.DataType().(*arrow.Decimal128Type).Scale)}, true
	case *array.Binary:
		return append([]byte(nil), a.Value(i)...), true
	}
	return nil, false
}

func toLiteral(v any) iceberg.Literal {
	switch x := v.(type) {
	case int32:
		return iceberg.NewLiteral(x)
	case int64:
		return iceberg.NewLiteral(x)
	case string:
		return iceberg.NewLiteral(x)
	case bool:
		return iceberg.NewLiteral(x)
	case iceberg.Date:
		return iceberg.NewLiteral(x)
	case iceberg.Timestamp:
		return iceberg.NewLiteral(x)
	case iceberg.Decimal:
		return iceberg.NewLiteral(x)
	case []byte:
		return iceberg.NewLiteral(x)
	}
	panic("unreachable literal type")
}

// bounds returns the least and greatest of values of one ordered type.
func bounds(vals []any) (lo, hi any, ok bool) {
	switch vals[0].(type) {
	case int32:
		return minMax[int32](vals)
	case int64:
		return minMax[int64](vals)
	case string:
		return minMax[string](vals)
	case iceberg.Date:
		return minMax[iceberg.Date](vals)
	case iceberg.Timestamp:
		return minMax[iceberg.Timestamp](vals)
	}
	return nil, nil, false
}

func minMax[T cmp.Ordered](vals []any) (any, any, bool) {
	xs := make([]T, len(vals))
	for i, v := range vals {
		xs[i] = v.(T)
	}
	return slices.Min(xs), slices.Max(xs), true
}

// nullIn reports whether row i of rec has a NULL in any of cols.
func nullIn(rec arrow.RecordBatch, cols []int, i int) bool {
	for _, c := range cols {
		if rec.Column(c).IsNull(i) {
			return true
		}
	}
	return false
}
