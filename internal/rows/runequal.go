package rows

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// RunComparer compares rows of two records in a fixed set of columns with
// KeysEqual's equality (NULL equal to NULL, NaN to NaN, -0 to 0; columns
// of different types compare their encodings), column by column over runs
// of rows. The comparator of each column is chosen once, from the schema
// it is made for, instead of by a type switch per value; a column whose
// arrays turn out not to be of the expected type is compared value by
// value as KeysEqual does.
type RunComparer struct {
	cols []int
	cmps []runEqual
}

// runEqual returns how many of the n rows from row i of x and row j of y,
// pairwise, hold equal values before the first that does not.
type runEqual func(x arrow.Array, i int, y arrow.Array, j, n int) int

// NewRunComparer returns a comparer of columns cols of records of schema.
func NewRunComparer(schema *arrow.Schema, cols []int) *RunComparer {
	c := &RunComparer{cols: cols, cmps: make([]runEqual, len(cols))}
	for k, col := range cols {
		c.cmps[k] = comparatorFor(schema.Field(col).Type)
	}
	return c
}

// Run returns the largest k <= n such that rows i to i+k-1 of a equal rows
// j to j+k-1 of b, pairwise. Both records must have at least n rows from
// there. The first column is compared over all n rows, each later one
// only over the rows still equal.
func (c *RunComparer) Run(a arrow.RecordBatch, i int, b arrow.RecordBatch, j, n int) int {
	for k, col := range c.cols {
		if n == 0 {
			return 0
		}
		n = c.cmps[k](a.Column(col), i, b.Column(col), j, n)
	}
	return n
}

// Equal reports whether row i of a and row j of b are equal in the
// comparer's columns: KeysEqual(a, i, b, j, cols).
func (c *RunComparer) Equal(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int) bool {
	return c.Run(a, i, b, j, 1) == 1
}

func comparatorFor(t arrow.DataType) runEqual {
	switch t.ID() {
	case arrow.INT64:
		return fixedWidth((*array.Int64).Int64Values)
	case arrow.INT32:
		return fixedWidth((*array.Int32).Int32Values)
	case arrow.TIMESTAMP:
		return fixedWidth((*array.Timestamp).TimestampValues)
	case arrow.DATE32:
		return fixedWidth((*array.Date32).Date32Values)
	case arrow.DECIMAL128:
		return fixedWidth((*array.Decimal128).Values)
	case arrow.FLOAT64:
		return runFloat64
	case arrow.STRING:
		return runString
	case arrow.BOOL:
		return runBool
	}
	return runGeneric
}

// fixedWidth compares arrays of type A by their fixed-width values (an
// array of another type as KeysEqual does).
func fixedWidth[A arrow.Array, T comparable](values func(A) []T) runEqual {
	return func(x arrow.Array, i int, y arrow.Array, j, n int) int {
		xa, ok1 := x.(A)
		ya, ok2 := y.(A)
		if !ok1 || !ok2 {
			return runGeneric(x, i, y, j, n)
		}
		return runValues(x, y, values(xa), values(ya), i, j, n)
	}
}

// runValues compares fixed-width values; the values of NULL slots are
// never looked at.
func runValues[T comparable](x, y arrow.Array, xv, yv []T, i, j, n int) int {
	xv, yv = xv[i:i+n], yv[j:j+n]
	if x.NullN() == 0 && y.NullN() == 0 {
		for k := range xv {
			if xv[k] != yv[k] {
				return k
			}
		}
		return n
	}
	for k := range xv {
		xn, yn := x.IsNull(i+k), y.IsNull(j+k)
		if xn != yn || !xn && xv[k] != yv[k] {
			return k
		}
	}
	return n
}

func runFloat64(x arrow.Array, i int, y arrow.Array, j, n int) int {
	xa, ok1 := x.(*array.Float64)
	ya, ok2 := y.(*array.Float64)
	if !ok1 || !ok2 {
		return runGeneric(x, i, y, j, n)
	}
	xv, yv := xa.Float64Values()[i:i+n], ya.Float64Values()[j:j+n]
	nulls := x.NullN() != 0 || y.NullN() != 0
	for k := range xv {
		if nulls {
			xn, yn := x.IsNull(i+k), y.IsNull(j+k)
			if xn != yn {
				return k
			}
			if xn {
				continue
			}
		}
		// == already holds for -0 and 0; floatBits makes NaN equal NaN.
		if xv[k] != yv[k] && floatBits(xv[k]) != floatBits(yv[k]) {
			return k
		}
	}
	return n
}

func runString(x arrow.Array, i int, y arrow.Array, j, n int) int {
	xa, ok1 := x.(*array.String)
	ya, ok2 := y.(*array.String)
	if !ok1 || !ok2 {
		return runGeneric(x, i, y, j, n)
	}
	nulls := x.NullN() != 0 || y.NullN() != 0
	for k := range n {
		if nulls {
			xn, yn := x.IsNull(i+k), y.IsNull(j+k)
			if xn != yn {
				return k
			}
			if xn {
				continue
			}
		}
		if xa.Value(i+k) != ya.Value(j+k) {
			return k
		}
	}
	return n
}

func runBool(x arrow.Array, i int, y arrow.Array, j, n int) int {
	xa, ok1 := x.(*array.Boolean)
	ya, ok2 := y.(*array.Boolean)
	if !ok1 || !ok2 {
		return runGeneric(x, i, y, j, n)
	}
	for k := range n {
		xn, yn := x.IsNull(i+k), y.IsNull(j+k)
		if xn != yn || !xn && xa.Value(i+k) != ya.Value(j+k) {
			return k
		}
	}
	return n
}

// runGeneric compares value by value as KeysEqual does.
func runGeneric(x arrow.Array, i int, y arrow.Array, j, n int) int {
	for k := range n {
		if !valueEqual(x, i+k, y, j+k) {
			return k
		}
	}
	return n
}
