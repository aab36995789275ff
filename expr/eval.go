package expr

import (
	"context"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// node is a bound, typed expression. eval computes one value per row of
// the batch. sel, when not nil, is a bitmap of the rows whose values matter:
// rows outside it belong to branches that are not taken, so a node must not
// fail because of them (their values are unspecified). Results are owned by
// the caller, who releases them.
type node interface {
	dataType() arrow.DataType
	kids() []node
	eval(ec *evalCtx, sel []byte) (arrow.Array, error)
}

type evalCtx struct {
	ctx context.Context
	mem memory.Allocator
	rec arrow.RecordBatch
	n   int
}

func active(sel []byte, i int) bool { return sel == nil || bitutil.BitIsSet(sel, i) }

// fallible reports whether evaluating n can fail; only then are selections
// worth computing.
func fallible(n node) bool {
	switch n := n.(type) {
	case *castNode:
		// widening numeric and string casts cannot fail; the others can
		from := n.x.dataType()
		safe := keepsValues(from, n.to) && !narrows(from, n.to) &&
			familyOf(from) != famDate && familyOf(from) != famTimestamp && familyOf(from) != famTime
		return !safe || fallible(n.x)
	case *arithNode:
		return !(familyOf(n.dt) == famFloat && n.op != OpDiv && n.op != OpMod) || anyFallible(n.kids())
	case *negNode:
		return familyOf(n.dataType()) == famInt || fallible(n.x)
	case *funcNode:
		return n.name == "ABS" && familyOf(n.dt) == famInt || anyFallible(n.args)
	case *rowFunc:
		return !n.pure || anyFallible(n.args)
	}
	return anyFallible(n.kids())
}

func anyFallible(ns []node) bool {
	for _, k := range ns {
		if fallible(k) {
			return true
		}
	}
	return false
}

// --- output buffers ---------------------------------------------------------

// fixedOut collects a fixed-width result with a validity bitmap.
type fixedOut[T arrow.FixedWidthType] struct {
	data, valid *memory.Buffer
	vals        []T
	bits        []byte
	nulls       int
}

func newFixedOut[T arrow.FixedWidthType](mem memory.Allocator, n int) *fixedOut[T] {
	var zero T
	o := &fixedOut[T]{data: memory.NewResizableBuffer(mem), valid: memory.NewResizableBuffer(mem)}
	o.data.Resize(n * int(unsafe.Sizeof(zero)))
	o.vals = arrow.GetData[T](o.data.Bytes())[:n]
	o.valid.Resize(int(bitutil.BytesForBits(int64(n))))
	o.bits = o.valid.Bytes()
	bitutil.SetBitsTo(o.bits, 0, int64(n), true)
	return o
}

func (o *fixedOut[T]) setNull(i int) {
	bitutil.ClearBit(o.bits, i)
	o.nulls++
}

// discard releases the buffers of a result that will not be built.
func (o *fixedOut[T]) discard() {
	o.data.Release()
	o.valid.Release()
}

func (o *fixedOut[T]) finish(dt arrow.DataType) arrow.Array {
	n := len(o.vals)
	valid := o.valid
	if o.nulls == 0 {
		valid.Release()
		valid = nil
	}
	d := array.NewData(dt, n, []*memory.Buffer{valid, o.data}, nil, o.nulls, 0)
	if valid != nil {
		valid.Release()
	}
	o.data.Release()
	defer d.Release()
	return array.MakeFromData(d)
}

// boolOut collects a boolean result.
type boolOut struct {
	data, valid *memory.Buffer
	vbits, bits []byte
	n, nulls    int
}

func newBoolOut(mem memory.Allocator, n int) *boolOut {
	o := &boolOut{data: memory.NewResizableBuffer(mem), valid: memory.NewResizableBuffer(mem), n: n}
	nb := int(bitutil.BytesForBits(int64(n)))
	o.data.Resize(nb)
	o.valid.Resize(nb)
	o.bits, o.vbits = o.data.Bytes(), o.valid.Bytes()
	clear(o.bits)
	bitutil.SetBitsTo(o.vbits, 0, int64(n), true)
	return o
}

func (o *boolOut) set(i int, v bool) {
	if v {
		bitutil.SetBit(o.bits, i)
	}
}

func (o *boolOut) setNull(i int) {
	bitutil.ClearBit(o.vbits, i)
	o.nulls++
}

func (o *boolOut) finish() arrow.Array {
	valid := o.valid
	if o.nulls == 0 {
		valid.Release()
		valid = nil
	}
	d := array.NewData(arrow.FixedWidthTypes.Boolean, o.n, []*memory.Buffer{valid, o.data}, nil, o.nulls, 0)
	if valid != nil {
		valid.Release()
	}
	o.data.Release()
	defer d.Release()
	return array.MakeFromData(d)
}

// validity is a read-only view of an array's validity bitmap.
type validity struct {
	bits []byte
	off  int
	all  bool // no nulls
	none bool // all nulls (NullType arrays)
}

func validityOf(a arrow.Array) validity {
	if a.DataType().ID() == arrow.NULL {
		return validity{none: true}
	}
	if a.NullN() == 0 || len(a.NullBitmapBytes()) == 0 {
		return validity{all: true}
	}
	return validity{bits: a.NullBitmapBytes(), off: a.Data().Offset()}
}

func (v validity) ok(i int) bool {
	if v.all {
		return true
	}
	if v.none {
		return false
	}
	return bitutil.BitIsSet(v.bits, v.off+i)
}

// boolView reads a boolean array without per-call interface dispatch.
type boolView struct {
	v    validity
	bits []byte
	off  int
}

func viewBool(a arrow.Array) boolView {
	if a.DataType().ID() == arrow.NULL {
		return boolView{v: validity{none: true}}
	}
	b := a.(*array.Boolean)
	return boolView{v: validityOf(a), bits: b.Data().Buffers()[1].Bytes(), off: b.Data().Offset()}
}

// state returns 1 for TRUE, 0 for FALSE, -1 for NULL.
func (b boolView) state(i int) int {
	if !b.v.ok(i) {
		return -1
	}
	if bitutil.BitIsSet(b.bits, b.off+i) {
		return 1
	}
	return 0
}

// newSel returns a selection of the rows in sel for which keep(i) holds.
func newSel(n int, sel []byte, keep func(i int) bool) []byte {
	out := make([]byte, bitutil.BytesForBits(int64(n)))
	for i := 0; i < n; i++ {
		if active(sel, i) && keep(i) {
			bitutil.SetBit(out, i)
		}
	}
	return out
}

// nullAsFalse turns a boolean (or all-NULL) array into one without nulls.
func nullAsFalse(mem memory.Allocator, a arrow.Array) *array.Boolean {
	n := a.Len()
	out := newBoolOut(mem, n)
	bv := viewBool(a)
	if bv.v.none {
		return out.finish().(*array.Boolean)
	}
	// NB: word-wise: value AND validity.
	if bv.v.all {
		bitutil.CopyBitmap(bv.bits, bv.off, n, out.bits, 0)
	} else {
		bitutil.BitmapAnd(bv.bits, bv.v.bits, int64(bv.off), int64(bv.v.off), out.bits, 0, int64(n))
	}
	return out.finish().(*array.Boolean)
}

// callCompute runs an arrow compute function and returns its array result.
func callCompute(ec *evalCtx, fn string, args ...compute.Datum) (arrow.Array, error) {
	res, err := compute.CallFunction(ec.ctx, fn, nil, args...)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	switch r := res.(type) {
	case *compute.ArrayDatum:
		return r.MakeArray(), nil
	case *compute.ScalarDatum:
		return scalarToArray(ec, r.Value)
	}
	return nil, errUnexpectedDatum
}
