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
		}
		if len(vals) > statsInLimit {
			// NB: iceberg-go (as Iceberg Java) does not check an IN list of
			// more than 200 values against a file's column statistics: every
			// file might match. Ranges prune by statistics; the IN list,
			// when there is one, still prunes partitions (its projection on
			// a bucket or identity partition is exact).
			var r iceberg.BooleanExpression
			if rs, ok := gapRanges(vals, maxRanges); ok {
				r = rangesExpr(ref, rs)
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
	xs = slices.Compact(xs)
	// Gaps between consecutive values, widest first; a gap of 1 (adjacent
	// values) is no gap.
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
		out = append(out, [2]any{fromInt(vals[0], xs[start]), fromInt(vals[0], xs[c-1])})
		start = c
	}
	return out, true
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
