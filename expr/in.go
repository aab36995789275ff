package expr

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// valueSet holds the constants of an IN list, all of one type.
type valueSet struct {
	dt      arrow.DataType
	ints    map[int64]struct{}
	floats  map[uint64]struct{}
	strs    map[string]struct{}
	decs    map[decimal128.Num]struct{}
	bools   [2]bool
	hasNull bool
	values  []any // in list order, NULLs excluded
}

func newValueSet(dt arrow.DataType) *valueSet {
	return &valueSet{dt: dt, ints: map[int64]struct{}{}, floats: map[uint64]struct{}{},
		strs: map[string]struct{}{}, decs: map[decimal128.Num]struct{}{}}
}

// floatKey maps floats so that -0.0 equals 0.0 and every NaN equals NaN.
func floatKey(f float64) uint64 {
	switch {
	case math.IsNaN(f):
		return math.Float64bits(math.NaN())
	case f == 0:
		return 0
	}
	return math.Float64bits(f)
}

func (s *valueSet) add(v any) {
	if v == nil {
		s.hasNull = true
		return
	}
	s.values = append(s.values, v)
	switch x := v.(type) {
	case bool:
		if x {
			s.bools[1] = true
		} else {
			s.bools[0] = true
		}
	case int64:
		s.ints[x] = struct{}{}
	case float64:
		s.floats[floatKey(x)] = struct{}{}
	case decimal128.Num:
		s.decs[x] = struct{}{}
	case string:
		s.strs[x] = struct{}{}
	case []byte:
		s.strs[string(x)] = struct{}{}
	}
}

func (s *valueSet) contains(v any) bool {
	switch x := v.(type) {
	case bool:
		if x {
			return s.bools[1]
		}
		return s.bools[0]
	case int64:
		_, ok := s.ints[x]
		return ok
	case float64:
		_, ok := s.floats[floatKey(x)]
		return ok
	case decimal128.Num:
		_, ok := s.decs[x]
		return ok
	case string:
		_, ok := s.strs[x]
		return ok
	case []byte:
		_, ok := s.strs[string(x)]
		return ok
	}
	return false
}

// inNode is x [NOT] IN (constants) with SQL semantics: NULL when x is NULL,
// or when x is not found and the list holds a NULL.
type inNode struct {
	x   node
	set *valueSet
	not bool
}

func (n *inNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *inNode) kids() []node             { return []node{n.x} }
func (n *inNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := n.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out := newBoolOut(ec.mem, ec.n)
	v := validityOf(x)
	put := func(i int, found bool) {
		switch {
		case found:
			out.set(i, !n.not)
		case n.set.hasNull:
			out.setNull(i)
		default:
			out.set(i, n.not)
		}
	}
	lookupInts := func(vals func(i int) int64) {
		small := len(n.set.ints) <= 8
		keys := make([]int64, 0, len(n.set.ints))
		for k := range n.set.ints {
			keys = append(keys, k)
		}
		for i := 0; i < ec.n; i++ {
			if !v.ok(i) {
				out.setNull(i)
				continue
			}
			x := vals(i)
			found := false
			if small {
				// NB: a linear scan beats hashing for short lists
				for _, k := range keys {
					if k == x {
						found = true
						break
					}
				}
			} else {
				_, found = n.set.ints[x]
			}
			put(i, found)
		}
	}
	switch a := x.(type) {
	case *array.Int8:
		vals := a.Int8Values()
		lookupInts(func(i int) int64 { return int64(vals[i]) })
	case *array.Int16:
		vals := a.Int16Values()
		lookupInts(func(i int) int64 { return int64(vals[i]) })
	case *array.Int32:
		vals := a.Int32Values()
		lookupInts(func(i int) int64 { return int64(vals[i]) })
	case *array.Int64:
		vals := a.Int64Values()
		lookupInts(func(i int) int64 { return vals[i] })
	case *array.String:
		for i := 0; i < ec.n; i++ {
			if !v.ok(i) {
				out.setNull(i)
				continue
			}
			_, ok := n.set.strs[a.Value(i)]
			put(i, ok)
		}
	default:
		g := getter(x)
		for i := 0; i < ec.n; i++ {
			val := g(i)
			if val == nil {
				out.setNull(i)
				continue
			}
			put(i, n.set.contains(val))
		}
	}
	return out.finish(), nil
}
