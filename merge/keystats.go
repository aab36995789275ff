package merge

import (
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
)

// defaultStatsLimit bounds the memory of the value bitmap of one
// integer-like key column when no limit is given.
const defaultStatsLimit = 64 << 20

// keyStats gathers, column by column, what a key filter needs of a set of
// keys, in bounded memory: the distinct values of integer-like columns as
// a bitmap (while it stays under a limit; past it, their bounds only), and
// of other columns up to maxInList distinct values plus, for strings,
// their bounds. Keys are added one value at a time, so the keys of a
// change set too large for memory can be summed up as they go by.
type keyStats struct {
	cols []*colStats
}

// colStats sums up the values of one key column.
type colStats struct {
	like  any // the Go literal type of integer-like columns; nil for others
	limit int64
	// Integer-like columns: the distinct values (intBits order), nil once
	// over the limit; and the bounds.
	ints   *roaring64.Bitmap
	buf    []uint64
	lo, hi int64
	// Other columns: the distinct values, up to maxInList+1 of them.
	vals []any
	seen map[any]struct{}
	many bool // more than maxInList distinct values
	// String bounds.
	slo, shi string
	strs     bool
	n        int64
	bad      bool // a value without a literal form: no pruning on the column
}

// newKeyStats returns stats for key columns of the given types; limit
// bounds each integer bitmap (<= 0: defaultStatsLimit).
func newKeyStats(types []arrow.DataType, limit int64) *keyStats {
	if limit <= 0 {
		limit = defaultStatsLimit
	}
	st := &keyStats{}
	for _, t := range types {
		c := &colStats{limit: limit, seen: map[any]struct{}{}}
		switch t := t.(type) {
		case *arrow.Int32Type:
			c.like = int32(0)
		case *arrow.Int64Type:
			c.like = int64(0)
		case *arrow.Date32Type:
			c.like = iceberg.Date(0)
		case *arrow.TimestampType:
			if t.Unit == arrow.Microsecond {
				c.like = iceberg.Timestamp(0)
			}
		}
		if c.like != nil {
			c.ints = roaring64.New()
		}
		st.cols = append(st.cols, c)
	}
	return st
}

// intBits maps an integer to a bitmap value, keeping the order.
func intBits(x int64) uint64 { return uint64(x) ^ 1<<63 }

func bitsInt(u uint64) int64 { return int64(u ^ 1<<63) }

// intValue returns arr[i] of an integer-like column as an int64.
func intValue(arr arrow.Array, i int) (int64, bool) {
	switch a := arr.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Date32:
		return int64(a.Value(i)), true
	case *array.Timestamp:
		return int64(a.Value(i)), true
	}
	return 0, false
}

// isIntArray reports whether intValue takes values of arr.
func isIntArray(arr arrow.Array) bool {
	switch arr.(type) {
	case *array.Int64, *array.Int32, *array.Date32, *array.Timestamp:
		return true
	}
	return false
}

// add adds arr[i] (a key value, never NULL in a change set).
func (c *colStats) add(arr arrow.Array, i int) {
	if c.bad {
		return
	}
	if c.like != nil {
		x, ok := intValue(arr, i)
		if !ok || arr.IsNull(i) {
			c.bad = true
			return
		}
		if c.n == 0 || x < c.lo {
			c.lo = x
		}
		if c.n == 0 || x > c.hi {
			c.hi = x
		}
		c.n++
		if c.ints != nil {
			c.buf = append(c.buf, intBits(x))
			if len(c.buf) == 64<<10 {
				c.flush()
			}
		}
		return
	}
	v, ok := literalValue(arr, i)
	if !ok {
		c.bad = true
		return
	}
	if s, isStr := v.(string); isStr {
		if !c.strs || s < c.slo {
			c.slo = s
		}
		if !c.strs || s > c.shi {
			c.shi = s
		}
		c.strs = true
	}
	if c.many {
		return
	}
	key := v
	if bs, isBytes := v.([]byte); isBytes {
		key = string(bs)
	}
	if _, ok := c.seen[key]; !ok {
		c.seen[key] = struct{}{}
		c.vals = append(c.vals, v)
		if len(c.vals) > maxInList {
			c.many, c.vals, c.seen = true, nil, nil
		}
	}
}

// flush adds the buffered integers to the bitmap, giving the bitmap up
// when it passes the limit.
func (c *colStats) flush() {
	if c.ints == nil || len(c.buf) == 0 {
		return
	}
	c.ints.AddMany(c.buf)
	c.buf = c.buf[:0]
	if int64(c.ints.GetSizeInBytes()) > c.limit {
		c.ints, c.buf = nil, nil
	}
}

// distinct returns the number of distinct values of an integer-like
// column, or -1 when the bitmap was given up.
func (c *colStats) distinct() int64 {
	c.flush()
	if c.ints == nil {
		return -1
	}
	return int64(c.ints.GetCardinality())
}

// filter returns the filter on the keys added: per column (by name) an IN
// list of up to maxInList values and, past statsInLimit values, ranges
// (widest gaps cut for integers, one range for strings) that column
// statistics can prune with.
func (st *keyStats) filter(sc *iceberg.Schema, names []string) iceberg.BooleanExpression {
	var out iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	for k, c := range st.cols {
		if c.bad {
			continue
		}
		if _, ok := sc.FindFieldByName(names[k]); !ok {
			continue
		}
		if e := c.expr(iceberg.Reference(names[k])); e != nil {
			out = iceberg.NewAnd(out, e)
		}
	}
	return out
}

func (c *colStats) expr(ref iceberg.UnboundTerm) iceberg.BooleanExpression {
	var e iceberg.BooleanExpression
	if c.like != nil {
		if c.n == 0 {
			return nil
		}
		n := c.distinct()
		if n >= 0 && n <= maxInList {
			lits := make([]iceberg.Literal, 0, n)
			it := c.ints.Iterator()
			for it.HasNext() {
				lits = append(lits, toLiteral(fromInt(c.like, bitsInt(it.Next()))))
			}
			e = iceberg.SetPredicate(iceberg.OpIn, ref, lits)
		}
		if n >= 0 && n <= statsInLimit {
			return e
		}
		// NB: iceberg-go (as Iceberg Java) does not check an IN list of
		// more than 200 values against a file's column statistics: every
		// file might match. Ranges prune by statistics; the IN list, when
		// there is one, still prunes partitions (its projection on a
		// bucket or identity partition is exact).
		var rs [][2]any
		if n < 0 {
			rs = [][2]any{{fromInt(c.like, c.lo), fromInt(c.like, c.hi)}}
		} else {
			g := newGapCutter(maxRanges)
			it := c.ints.Iterator()
			for it.HasNext() {
				g.add(bitsInt(it.Next()))
			}
			rs = g.ranges(c.like)
		}
		r := rangesExpr(ref, rs)
		if e == nil {
			return r
		}
		return iceberg.NewAnd(e, r)
	}
	if len(c.vals) == 0 && !c.many {
		return nil
	}
	if !c.many {
		lits := make([]iceberg.Literal, len(c.vals))
		for i, v := range c.vals {
			lits[i] = toLiteral(v)
		}
		e = iceberg.SetPredicate(iceberg.OpIn, ref, lits)
		if len(c.vals) <= statsInLimit {
			return e
		}
	}
	if !c.strs {
		return e
	}
	r := rangesExpr(ref, [][2]any{{c.slo, c.shi}})
	if e == nil {
		return r
	}
	return iceberg.NewAnd(e, r)
}
