package expr

import (
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

var errUnexpectedDatum = errors.New("expr: compute returned an unexpected datum")

func scalarToArray(ec *evalCtx, sc scalar.Scalar) (arrow.Array, error) {
	return scalar.MakeArrayFromScalar(sc, ec.n, ec.mem)
}

func evalErr(src Expr, row int, err error) *EvalError {
	return &EvalError{Expr: src.String(), Pos: src.Pos(), Row: row, Msg: err.Error(), Kind: kindOf(err)}
}

// --- constants and columns ---------------------------------------------------

// constNode is a constant in canonical form (nil = NULL).
type constNode struct {
	dt  arrow.DataType
	val any
}

func (c *constNode) dataType() arrow.DataType { return c.dt }
func (c *constNode) kids() []node             { return nil }
func (c *constNode) eval(ec *evalCtx, _ []byte) (arrow.Array, error) {
	if c.val == nil {
		return array.MakeArrayOfNull(ec.mem, c.dt, ec.n), nil
	}
	return scalar.MakeArrayFromScalar(makeScalar(c.dt, c.val), ec.n, ec.mem)
}

// colNode reads a column, or a field nested in struct columns.
type colNode struct {
	path  []int
	names []string
	dt    arrow.DataType
}

func (c *colNode) dataType() arrow.DataType { return c.dt }
func (c *colNode) kids() []node             { return nil }
func (c *colNode) eval(ec *evalCtx, _ []byte) (arrow.Array, error) {
	arr := ec.rec.Column(c.path[0])
	arr.Retain()
	for _, idx := range c.path[1:] {
		parent := arr.(*array.Struct)
		child := structField(ec.mem, parent, idx)
		arr.Release()
		arr = child
	}
	return arr, nil
}

// structField returns field idx of a struct array with the parent's nulls
// applied (a child value under a NULL struct is NULL).
func structField(mem memory.Allocator, parent *array.Struct, idx int) arrow.Array {
	child := parent.Field(idx)
	if parent.NullN() == 0 {
		child.Retain()
		return child
	}
	n := child.Len()
	off := child.Data().Offset()
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(off + n))))
	bits := buf.Bytes()
	clear(bits)
	cv, pv := validityOf(child), validityOf(parent)
	nulls := 0
	for i := 0; i < n; i++ {
		if cv.ok(i) && pv.ok(i) {
			bitutil.SetBit(bits, off+i)
		} else {
			nulls++
		}
	}
	bufs := append([]*memory.Buffer{buf}, child.Data().Buffers()[1:]...)
	d := array.NewData(child.DataType(), n, bufs, child.Data().Children(), nulls, off)
	buf.Release()
	defer d.Release()
	return array.MakeFromData(d)
}

// --- casts ------------------------------------------------------------------

// castNode converts its operand's values to another type (ANSI semantics).
type castNode struct {
	x   node
	to  arrow.DataType
	src Expr
}

func (c *castNode) dataType() arrow.DataType { return c.to }
func (c *castNode) kids() []node             { return []node{c.x} }
func (c *castNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := c.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	return castArray(ec, x, c.to, sel, c.src)
}

// castArray converts arr to type to. Failures on rows outside sel give NULL.
func castArray(ec *evalCtx, arr arrow.Array, to arrow.DataType, sel []byte, src Expr) (arrow.Array, error) {
	from := arr.DataType()
	if arrow.TypeEqual(from, to) {
		arr.Retain()
		return arr, nil
	}
	if familyOf(from) == famNull {
		return array.MakeArrayOfNull(ec.mem, to, arr.Len()), nil
	}
	if out := castFast(ec, arr, to); out != nil {
		return out, nil
	}
	g := getter(arr)
	b := array.NewBuilder(ec.mem, to)
	defer b.Release()
	b.Reserve(arr.Len())
	for i := 0; i < arr.Len(); i++ {
		v, err := castValue(g(i), from, to)
		if err != nil {
			if active(sel, i) {
				return nil, evalErr(src, i, err)
			}
			v = nil
		}
		appendValue(b, v)
	}
	return b.NewArray(), nil
}

// castFast handles the casts that cannot fail with typed loops: integer
// widening and integers or floats to a wider float. It returns nil for the
// others.
func castFast(ec *evalCtx, arr arrow.Array, to arrow.DataType) arrow.Array {
	from := arr.DataType()
	ff, tf := familyOf(from), familyOf(to)
	switch {
	case ff == famInt && tf == famInt && intBits(to) >= intBits(from):
		return widenInts(ec, arr, to)
	case ff == famInt && to.ID() == arrow.FLOAT64:
		return intsToFloat[float64](ec, arr, to)
	case ff == famInt && to.ID() == arrow.FLOAT32:
		return intsToFloat[float32](ec, arr, to)
	case from.ID() == arrow.FLOAT32 && to.ID() == arrow.FLOAT64:
		return convertFixed[float32, float64](ec, arr, to)
	case ff == famInt && tf == famDecimal:
		dt := to.(*arrow.Decimal128Type)
		if dt.Precision-dt.Scale < decimalOf(from).Precision {
			return nil // may overflow: the checked path reports it
		}
		mul := decimal128.GetScaleMultiplier(int(dt.Scale))
		return mapInts(ec, arr, to, func(v int64) decimal128.Num { return decimal128.FromI64(v).Mul(mul) })
	case ff == famDecimal && tf == famDecimal:
		fd, td := from.(*arrow.Decimal128Type), to.(*arrow.Decimal128Type)
		if td.Scale < fd.Scale || td.Precision-td.Scale < fd.Precision-fd.Scale {
			return nil // rounds or may overflow: the checked path
		}
		if td.Scale == fd.Scale {
			// same unscaled values, wider type: share the buffers
			d := array.NewData(to, arr.Len(), arr.Data().Buffers(), nil, arr.NullN(), arr.Data().Offset())
			defer d.Release()
			return array.MakeFromData(d)
		}
		mul := decimal128.GetScaleMultiplier(int(td.Scale - fd.Scale))
		return mapDecimals(ec, arr, to, func(v decimal128.Num) decimal128.Num { return v.Mul(mul) })
	case ff == famDecimal && tf == famFloat:
		scale := from.(*arrow.Decimal128Type).Scale
		if to.ID() == arrow.FLOAT32 {
			return mapDecimals(ec, arr, to, func(v decimal128.Num) float32 { return float32(decimalToFloat(v, scale)) })
		}
		return mapDecimals(ec, arr, to, func(v decimal128.Num) float64 { return decimalToFloat(v, scale) })
	}
	return nil
}

// mapInts converts an integer array of any width value by value.
func mapInts[R arrow.FixedWidthType](ec *evalCtx, arr arrow.Array, to arrow.DataType, f func(int64) R) arrow.Array {
	switch arr.DataType().ID() {
	case arrow.INT8:
		return mapValues(ec, arr, to, func(v int8) R { return f(int64(v)) })
	case arrow.INT16:
		return mapValues(ec, arr, to, func(v int16) R { return f(int64(v)) })
	case arrow.INT32:
		return mapValues(ec, arr, to, func(v int32) R { return f(int64(v)) })
	}
	return mapValues(ec, arr, to, f)
}

func mapDecimals[R arrow.FixedWidthType](ec *evalCtx, arr arrow.Array, to arrow.DataType, f func(decimal128.Num) R) arrow.Array {
	return mapValues(ec, arr, to, f)
}

// mapValues converts every value (NULLs included, their values are
// ignored) of a fixed-width array with a function that cannot fail.
func mapValues[T, R arrow.FixedWidthType](ec *evalCtx, arr arrow.Array, to arrow.DataType, f func(T) R) arrow.Array {
	src := arrow.GetValues[T](arr.Data(), 1)
	n := arr.Len()
	o := newFixedOut[R](ec.mem, n)
	for i, v := range src[:n] {
		o.vals[i] = f(v)
	}
	if v := validityOf(arr); !v.all {
		bitutil.CopyBitmap(v.bits, v.off, n, o.bits, 0)
		o.nulls = arr.NullN()
	}
	return o.finish(to)
}

func widenInts(ec *evalCtx, arr arrow.Array, to arrow.DataType) arrow.Array {
	switch to.ID() {
	case arrow.INT16:
		return intsTo[int16](ec, arr, to)
	case arrow.INT32:
		return intsTo[int32](ec, arr, to)
	case arrow.INT64:
		return intsTo[int64](ec, arr, to)
	}
	return intsTo[int8](ec, arr, to)
}

func intsTo[D int8 | int16 | int32 | int64](ec *evalCtx, arr arrow.Array, to arrow.DataType) arrow.Array {
	switch arr.DataType().ID() {
	case arrow.INT8:
		return convertFixed[int8, D](ec, arr, to)
	case arrow.INT16:
		return convertFixed[int16, D](ec, arr, to)
	case arrow.INT32:
		return convertFixed[int32, D](ec, arr, to)
	}
	return convertFixed[int64, D](ec, arr, to)
}

func intsToFloat[D float32 | float64](ec *evalCtx, arr arrow.Array, to arrow.DataType) arrow.Array {
	switch arr.DataType().ID() {
	case arrow.INT8:
		return convertFixed[int8, D](ec, arr, to)
	case arrow.INT16:
		return convertFixed[int16, D](ec, arr, to)
	case arrow.INT32:
		return convertFixed[int32, D](ec, arr, to)
	}
	return convertFixed[int64, D](ec, arr, to)
}

func convertFixed[S, D int8 | int16 | int32 | int64 | float32 | float64](ec *evalCtx, arr arrow.Array, to arrow.DataType) arrow.Array {
	src := arrow.GetValues[S](arr.Data(), 1)
	n := arr.Len()
	o := newFixedOut[D](ec.mem, n)
	for i, v := range src[:n] {
		o.vals[i] = D(v)
	}
	v := validityOf(arr)
	if !v.all {
		for i := 0; i < n; i++ {
			if !v.ok(i) {
				o.setNull(i)
			}
		}
	}
	return o.finish(to)
}

// --- boolean logic -------------------------------------------------------------

// logicNode is AND (or=false) or OR with three-valued logic. The right side
// only matters, and may only fail, on rows the left side does not decide.
type logicNode struct {
	or   bool
	l, r node
}

func (n *logicNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *logicNode) kids() []node             { return []node{n.l, n.r} }
func (n *logicNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	l, err := n.l.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	rsel := sel
	if fallible(n.r) {
		lv := viewBool(l)
		decided := 0 // AND: FALSE decides; OR: TRUE decides
		if n.or {
			decided = 1
		}
		rsel = newSel(ec.n, sel, func(i int) bool { return lv.state(i) != decided })
	}
	r, err := n.r.eval(ec, rsel)
	if err != nil {
		return nil, err
	}
	defer r.Release()
	fn := "and_kleene"
	if n.or {
		fn = "or_kleene"
	}
	return callCompute(ec, fn, compute.NewDatumWithoutOwning(l), compute.NewDatumWithoutOwning(r))
}

type notNode struct{ x node }

func (n *notNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *notNode) kids() []node             { return []node{n.x} }
func (n *notNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := n.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	bv := viewBool(x)
	out := newBoolOut(ec.mem, ec.n)
	switch {
	case bv.v.none:
		bitutil.SetBitsTo(out.vbits, 0, int64(ec.n), false)
		out.nulls = ec.n
	default:
		bitutil.InvertBitmap(bv.bits, bv.off, ec.n, out.bits, 0)
		if !bv.v.all {
			bitutil.CopyBitmap(bv.v.bits, bv.v.off, ec.n, out.vbits, 0)
			out.nulls = x.NullN()
		}
	}
	return out.finish(), nil
}

// isNullNode is x IS [NOT] NULL; its result has no nulls.
type isNullNode struct {
	x   node
	not bool
}

func (n *isNullNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *isNullNode) kids() []node             { return []node{n.x} }
func (n *isNullNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := n.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out := newBoolOut(ec.mem, ec.n)
	v := validityOf(x)
	switch {
	case v.none:
		bitutil.SetBitsTo(out.bits, 0, int64(ec.n), !n.not)
	case v.all:
		bitutil.SetBitsTo(out.bits, 0, int64(ec.n), n.not)
	case n.not:
		bitutil.CopyBitmap(v.bits, v.off, ec.n, out.bits, 0)
	default:
		bitutil.InvertBitmap(v.bits, v.off, ec.n, out.bits, 0)
	}
	return out.finish(), nil
}

// isBoolNode is x IS [NOT] TRUE|FALSE; its result has no nulls.
type isBoolNode struct {
	x     node
	not   bool
	value bool
}

func (n *isBoolNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *isBoolNode) kids() []node             { return []node{n.x} }
func (n *isBoolNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := n.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	want := 0
	if n.value {
		want = 1
	}
	xv := viewBool(x)
	out := newBoolOut(ec.mem, ec.n)
	for i := 0; i < ec.n; i++ {
		out.set(i, (xv.state(i) == want) != n.not)
	}
	return out.finish(), nil
}
