package merge

import (
	"cmp"
	"container/heap"
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
// widest gaps for integer-like types, one min..max range for strings).
// Columns whose type has no literal form are left out (no pruning on
// them). See keyStats.
func keyFilter(sc *iceberg.Schema, recs []arrow.RecordBatch, keyCols []int, keyNames []string, rowsOf iter.Seq2[int, int]) iceberg.BooleanExpression {
	if len(recs) == 0 {
		return iceberg.AlwaysTrue{}
	}
	types := make([]arrow.DataType, len(keyCols))
	for k, c := range keyCols {
		types[k] = recs[0].Column(c).DataType()
	}
	st := newKeyStats(types, 0)
	for b, i := range rowsOf {
		for k, c := range keyCols {
			st.cols[k].add(recs[b].Column(c), i)
		}
	}
	return st.filter(sc, keyNames)
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
	g := newGapCutter(n)
	for _, x := range xs {
		g.add(x)
	}
	return g.ranges(like)
}

// gapCutter finds, over sorted distinct values given one at a time, the
// n-1 widest gaps between consecutive values (the first of equal gaps),
// in memory for n values: the ranges of intRanges without holding the
// values.
type gapCutter struct {
	k           int
	cuts        gapHeap // the widest gaps so far, narrowest (and latest) on top
	first, last int64
	idx         int
}

type gap struct {
	width  uint64
	at     int   // index of the value after the gap
	lo, hi int64 // the values either side
}

func newGapCutter(n int) *gapCutter { return &gapCutter{k: max(n-1, 0)} }

func (g *gapCutter) add(x int64) {
	if g.idx == 0 {
		g.first = x
	} else if w := uint64(x) - uint64(g.last); w > 1 && g.k > 0 {
		// A gap of 1 (adjacent values) is no gap.
		c := gap{width: w, at: g.idx, lo: g.last, hi: x}
		if len(g.cuts) < g.k {
			heap.Push(&g.cuts, c)
		} else if top := g.cuts[0]; w > top.width {
			// An equal gap comes later than those kept: the first wins.
			g.cuts[0] = c
			heap.Fix(&g.cuts, 0)
		}
	}
	g.last = x
	g.idx++
}

// ranges returns the ranges, bounds of the type of like; nil when no value
// was added.
func (g *gapCutter) ranges(like any) [][2]any {
	if g.idx == 0 {
		return nil
	}
	cuts := slices.Clone(g.cuts)
	slices.SortFunc(cuts, func(a, b gap) int { return cmp.Compare(a.at, b.at) })
	out := make([][2]any, 0, len(cuts)+1)
	start := g.first
	for _, c := range cuts {
		out = append(out, [2]any{fromInt(like, start), fromInt(like, c.lo)})
		start = c.hi
	}
	return append(out, [2]any{fromInt(like, start), fromInt(like, g.last)})
}

// gapHeap is a min-heap of gaps: narrowest first, and of equal ones the
// latest first, so that the top is the gap to give up.
type gapHeap []gap

func (h gapHeap) Len() int { return len(h) }
func (h gapHeap) Less(i, j int) bool {
	if h[i].width != h[j].width {
		return h[i].width < h[j].width
	}
	return h[i].at > h[j].at
}
func (h gapHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *gapHeap) Push(x any)   { *h = append(*h, x.(gap)) }
func (h *gapHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
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

// nullIn reports whether row i of rec has a NULL in any of cols.
func nullIn(rec arrow.RecordBatch, cols []int, i int) bool {
	for _, c := range cols {
		if rec.Column(c).IsNull(i) {
			return true
		}
	}
	return false
}
