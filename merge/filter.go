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
// become ranges only.
const maxInList = 10000

// statsInLimit is the largest IN list iceberg-go checks against column
// statistics (its inPredicateLimit); longer lists get ranges too.
const statsInLimit = 200

// maxRanges is the most ranges a long list of integer-like key values
// becomes: the values are cut at their widest gaps, so that changes to a
// few clusters of keys (a range of old keys and the new keys past the end
// of the table, say) leave out the files between the clusters.
const maxRanges = 64

// keyFilter builds a conservative Iceberg filter matching the key values of
// the given rows, ANDed over the key columns: per column an IN list (up to
// maxInList values) and, past statsInLimit values, ranges (cut at the
// widest gaps for integer-like types, one min..max range for other ordered
// types). Columns whose type has no literal form are left out (no pruning
// on them).
func keyFilter(sc *iceberg.Schema, recs []arrow.RecordBatch, keyCols []int, keyNames []string, rowsOf iter.Seq2[int, int]) iceberg.BooleanExpression {
	var out iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	for k, col := range keyCols {
		vals, ints, ok := keyValues(recs, col, rowsOf)
		if !ok || len(vals) == 0 && (ints == nil || len(ints.xs) == 0) {
			continue
		}
		if _, ok := sc.FindFieldByName(keyNames[k]); !ok {
			continue
		}
		ref := iceberg.Reference(keyNames[k])
		var e iceberg.BooleanExpression
		n := len(vals)
		if ints != nil {
			n = len(ints.xs)
		}
		if n <= maxInList {
			lits := make([]iceberg.Literal, n)
			for i := range lits {
				if ints != nil {
					lits[i] = toLiteral(fromInt(ints.like, ints.xs[i]))
				} else {
					lits[i] = toLiteral(vals[i])
				}
			}
			e = iceberg.SetPredicate(iceberg.OpIn, ref, lits)
		}
		if n > statsInLimit {
			// NB: iceberg-go (as Iceberg Java) does not check an IN list of
			// more than 200 values against a file's column statistics: every
			// file might match. Ranges prune by statistics; the IN list,
			// when there is one, still prunes partitions (its projection on
			// a bucket or identity partition is exact).
			var r iceberg.BooleanExpression
			if ints != nil {
				r = rangesExpr(ref, intRanges(ints.xs, maxRanges, ints.like))
			} else if lo, hi, ok := bounds(vals); ok {
				r = rangesExpr(ref, [][2]any{{lo, hi}})
			}
			switch {
			case r == nil:
			case e == nil:
				e = r
			default:
				e = iceberg.NewAnd(e, r)
			}
			if e == nil {
				continue
			}
		}
		out = iceberg.NewAnd(out, e)
	}
	return out
}

// intKeys are the distinct values of an integer-like key column, sorted,
// with a value of the column's Go literal type.
type intKeys struct {
	xs   []int64
	like any
}

// keyValues returns the distinct values of column col in the rows rowsOf
// of recs: as sorted integers for integer-like columns (int32, int64,
// dates, microsecond timestamps), else as literal values. It reports false
// when a value has no literal form (a NULL, an unsupported type).
func keyValues(recs []arrow.RecordBatch, col int, rowsOf iter.Seq2[int, int]) ([]any, *intKeys, bool) {
	if len(recs) > 0 {
		var like any
		switch t := recs[0].Column(col).DataType().(type) {
		case *arrow.Int32Type:
			like = int32(0)
		case *arrow.Int64Type:
			like = int64(0)
		case *arrow.Date32Type:
			like = iceberg.Date(0)
		case *arrow.TimestampType:
			if t.Unit == arrow.Microsecond {
				like = iceberg.Timestamp(0)
			}
		}
		if like != nil {
			var xs []int64
			for b, i := range rowsOf {
				arr := recs[b].Column(col)
				if arr.IsNull(i) {
					return nil, nil, false
				}
				switch a := arr.(type) {
				case *array.Int32:
					xs = append(xs, int64(a.Value(i)))
				case *array.Int64:
					xs = append(xs, a.Value(i))
				case *array.Date32:
					xs = append(xs, int64(a.Value(i)))
				case *array.Timestamp:
					xs = append(xs, int64(a.Value(i)))
				default:
					return nil, nil, false
				}
			}
			slices.Sort(xs)
			return nil, &intKeys{xs: slices.Compact(xs), like: like}, true
		}
	}
	seen := map[any]bool{}
	var vals []any
	for b, i := range rowsOf {
		v, ok := literalValue(recs[b].Column(col), i)
		if !ok {
			return nil, nil, false
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
	return vals, nil, true
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

// rangesExpr is ref in any of the closed ranges rs.
func rangesExpr(ref iceberg.UnboundTerm, rs [][2]any) iceberg.BooleanExpression {
	var out iceberg.BooleanExpression
	for _, r := range rs {
		var e iceberg.BooleanExpression
		if r[0] == r[1] {
			e = iceberg.LiteralPredicate(iceberg.OpEQ, ref, toLiteral(r[0]))
		} else {
			e = iceberg.NewAnd(iceberg.LiteralPredicate(iceberg.OpGTEQ, ref, toLiteral(r[0])), iceberg.LiteralPredicate(iceberg.OpLTEQ, ref, toLiteral(r[1])))
		}
		if out == nil {
			out = e
		} else {
			out = iceberg.NewOr(out, e)
		}
	}
	return out
}

// gapRanges covers distinct integer-like values (int32, int64, dates,
// timestamps) with at most n closed ranges, cutting at the n-1 widest
// gaps between consecutive values. It reports false for other types.
func gapRanges(vals []any, n int) ([][2]any, bool) {
	xs := make([]int64, len(vals))
	for i, v := range vals {
		x, ok := asInt(v)
		if !ok {
			return nil, false
		}
		xs[i] = x
	}
	slices.Sort(xs)
	return intRanges(slices.Compact(xs), n, vals[0]), true
}

// intRanges covers the sorted distinct values xs with at most n closed
// ranges, cut at the n-1 widest gaps between consecutive values (the first
// of equal gaps), bounds converted to the type of like.
func intRanges(xs []int64, n int, like any) [][2]any {
	// A gap of 1 (adjacent values) is no gap.
	cuts := make([]int, 0, len(xs))
	for i := 1; i < len(xs); i++ {
		if uint64(xs[i])-uint64(xs[i-1]) > 1 {
			cuts = append(cuts, i)
		}
	}
	gap := func(i int) uint64 { return uint64(xs[i]) - uint64(xs[i-1]) }
	slices.SortStableFunc(cuts, func(a, b int) int { return cmp.Compare(gap(b), gap(a)) })
	cuts = cuts[:min(len(cuts), n-1)]
	slices.Sort(cuts)
	out := make([][2]any, 0, len(cuts)+1)
	start := 0
	for _, c := range append(cuts, len(xs)) {
		out = append(out, [2]any{fromInt(like, xs[start]), fromInt(like, xs[c-1])})
		start = c
	}
	return out
}

// asInt returns an integer-like value as an int64.
func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case iceberg.Date:
		return int64(x), true
	case iceberg.Timestamp:
		return int64(x), true
	}
	return 0, false
}

// fromInt converts x back to the type of like.
func fromInt(like any, x int64) any {
	switch like.(type) {
	case int32:
		return int32(x)
	case iceberg.Date:
		return iceberg.Date(x)
	case iceberg.Timestamp:
		return iceberg.Timestamp(x)
	}
	return x
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
