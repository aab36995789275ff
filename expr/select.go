package expr

import (
	"encoding/binary"
	mathbits "math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// caseNode is a searched CASE (a simple CASE is bound as one). Each
// condition is evaluated only on rows no earlier arm took, and each result
// only on the rows that chose it, so a guard such as
// CASE WHEN b <> 0 THEN a / b END never divides by zero.
type caseNode struct {
	conds   []node
	results []node
	els     node
	dt      arrow.DataType
}

func (n *caseNode) dataType() arrow.DataType { return n.dt }
func (n *caseNode) kids() []node {
	out := append(append([]node{}, n.conds...), n.results...)
	return append(out, n.els)
}

func (n *caseNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	undecided := copySel(ec.n, sel)
	sels := make([][]byte, len(n.conds)+1)
	for k, c := range n.conds {
		if bitutil.CountSetBits(undecided, 0, ec.n) == 0 {
			break
		}
		cv, err := c.eval(ec, undecided)
		if err != nil {
			return nil, err
		}
		matched := trueBits(cv, ec.n)
		cv.Release()
		bitutil.BitmapAnd(matched, undecided, 0, 0, matched, 0, int64(ec.n))
		bitutil.BitmapAndNot(undecided, matched, 0, 0, undecided, 0, int64(ec.n))
		sels[k] = matched
	}
	sels[len(n.conds)] = undecided
	branches := append(append([]node{}, n.results...), n.els)
	return pick(ec, n.dt, branches, sels, make([]arrow.Array, len(branches)), sel)
}

// trueBits returns a fresh bitmap of the rows where a boolean array is TRUE.
func trueBits(a arrow.Array, n int) []byte {
	out := make([]byte, bitutil.BytesForBits(int64(n)))
	bv := viewBool(a)
	switch {
	case bv.v.none:
	case bv.v.all:
		bitutil.CopyBitmap(bv.bits, bv.off, n, out, 0)
	default:
		bitutil.BitmapAnd(bv.bits, bv.v.bits, int64(bv.off), int64(bv.v.off), out, 0, int64(n))
	}
	return out
}

// copySel returns a modifiable selection equal to sel (all rows for nil).
func copySel(n int, sel []byte) []byte {
	out := make([]byte, bitutil.BytesForBits(int64(n)))
	if sel == nil {
		bitutil.SetBitsTo(out, 0, int64(n), true)
	} else {
		copy(out, sel)
	}
	return out
}

// pick builds the result whose row i is row i of branches[k] for the k
// with bit i set in sels[k] (at most one); rows in no selection are NULL
// when they are in sel, don't-cares otherwise. done[k], when not nil, is
// branch k already evaluated on a superset of sels[k]; pick releases it.
// The other branches are evaluated only on their selection, and not at all
// when it is empty.
func pick(ec *evalCtx, dt arrow.DataType, branches []node, sels [][]byte, done []arrow.Array, sel []byte) (arrow.Array, error) {
	ops := make([]operand, len(branches))
	defer func() {
		for _, o := range ops {
			o.release()
		}
		for _, a := range done {
			if a != nil {
				a.Release()
			}
		}
	}()
	if familyOf(dt) == famNull {
		return constNull(ec, dt), nil
	}
	strs := familyOf(dt) == famString
	covered := make([]byte, bitutil.BytesForBits(int64(ec.n)))
	used, last := 0, -1
	for k, b := range branches {
		if sels[k] == nil || bitutil.CountSetBits(sels[k], 0, ec.n) == 0 {
			continue
		}
		bitutil.BitmapOr(covered, sels[k], 0, 0, covered, 0, int64(ec.n))
		used, last = used+1, k
		switch c, isConst := b.(*constNode); {
		case done[k] != nil:
			ops[k], done[k] = operand{arr: done[k], dt: dt}, nil
		case isConst && strs:
			// string constants are written as they are, not materialized
			ops[k] = operand{isConst: true, val: c.val, dt: dt}
		default:
			a, err := b.eval(ec, sels[k])
			if err != nil {
				return nil, err
			}
			ops[k] = operand{arr: a, dt: dt}
		}
	}
	// rows that matter but no branch covers are NULL
	uncovered := copySel(ec.n, sel)
	bitutil.BitmapAndNot(uncovered, covered, 0, 0, uncovered, 0, int64(ec.n))
	hasNull := bitutil.CountSetBits(uncovered, 0, ec.n) > 0
	switch {
	case used == 0:
		return constNull(ec, dt), nil
	case used == 1 && !hasNull && !ops[last].isConst:
		ops[last].arr.Retain()
		return ops[last].arr, nil
	case strs:
		return mergeStrings(ec, ops, sels)
	}
	arrays := make([]arrow.Array, len(ops))
	for k, o := range ops {
		arrays[k] = o.arr
	}
	switch familyOf(dt) {
	case famInt, famFloat, famDecimal, famDate, famTime, famTimestamp:
		return mergeFixed(ec, dt, arrays, sels), nil
	}
	return mergeTake(ec, arrays, sels)
}

// mergeStrings merges string branch results (arrays or constants) row by
// row into a new STRING array.
func mergeStrings(ec *evalCtx, ops []operand, sels [][]byte) (arrow.Array, error) {
	var ks []int
	hint := 0
	strs := make([]func(int) string, len(ops))
	vals := make([]validity, len(ops))
	for k, o := range ops {
		switch {
		case o.isConst:
			ks = append(ks, k)
			if o.val == nil {
				vals[k] = validity{none: true}
				strs[k] = func(int) string { return "" }
				continue
			}
			c := o.val.(string)
			strs[k], vals[k] = func(int) string { return c }, validity{all: true}
			hint += len(c) * ec.n / len(ops)
		case o.arr != nil:
			ks = append(ks, k)
			strs[k], vals[k] = stringsOf(o.arr), validityOf(o.arr)
			hint += len(o.arr.Data().Buffers()[2].Bytes())
		}
	}
	out := newStringOut(ec.mem, ec.n, hint)
	for i := 0; i < ec.n; i++ {
		null := true
		for _, k := range ks {
			if bitutil.BitIsSet(sels[k], i) {
				if vals[k].ok(i) {
					out.write(strs[k](i))
					null = false
				}
				break
			}
		}
		out.end(i, null)
	}
	return out.finish(ec.n)
}

// mergeFixed merges fixed-width branch results by copying runs of rows.
func mergeFixed(ec *evalCtx, dt arrow.DataType, arrays []arrow.Array, sels [][]byte) arrow.Array {
	switch dt.(arrow.FixedWidthDataType).BitWidth() {
	case 8:
		return mergeValues[int8](ec, dt, arrays, sels)
	case 16:
		return mergeValues[int16](ec, dt, arrays, sels)
	case 32:
		return mergeValues[int32](ec, dt, arrays, sels)
	case 64:
		return mergeValues[int64](ec, dt, arrays, sels)
	}
	return mergeValues[decimal128.Num](ec, dt, arrays, sels)
}

func mergeValues[T arrow.FixedWidthType](ec *evalCtx, dt arrow.DataType, arrays []arrow.Array, sels [][]byte) arrow.Array {
	o := newFixedOut[T](ec.mem, ec.n)
	clear(o.bits) // rows no branch covers stay NULL
	for k, a := range arrays {
		if a == nil {
			continue
		}
		vals := arrow.GetValues[T](a.Data(), 1)
		v := validityOf(a)
		forEachSet(sels[k], ec.n, func(start, end int) {
			copy(o.vals[start:end], vals[start:end])
			switch {
			case v.all:
				bitutil.SetBitsTo(o.bits, int64(start), int64(end-start), true)
			case v.none:
			case end-start == 1:
				if v.ok(start) {
					bitutil.SetBit(o.bits, start)
				}
			default:
				bitutil.CopyBitmap(v.bits, v.off+start, end-start, o.bits, start)
			}
		})
	}
	o.nulls = ec.n - bitutil.CountSetBits(o.bits, 0, ec.n)
	return o.finish(dt)
}

// forEachSet calls f(start, end) for the set bits among the first n of
// bits, 64 at a time when a word is full and bit by bit otherwise.
func forEachSet(bits []byte, n int, f func(start, end int)) {
	for base := 0; base < n; base += 64 {
		var word uint64
		if base+64 <= n {
			word = binary.LittleEndian.Uint64(bits[base>>3:])
			if word == ^uint64(0) {
				f(base, base+64)
				continue
			}
		} else {
			for b := base >> 3; b < len(bits); b++ {
				word |= uint64(bits[b]) << (8 * (b - base>>3))
			}
			if rest := n - base; rest < 64 {
				word &= 1<<rest - 1
			}
		}
		for word != 0 {
			t := mathbits.TrailingZeros64(word)
			f(base+t, base+t+1)
			word &= word - 1
		}
	}
}

// mergeTake merges branch results of any type with arrow's Take over their
// concatenation.
func mergeTake(ec *evalCtx, arrays []arrow.Array, sels [][]byte) (arrow.Array, error) {
	var parts []arrow.Array
	idx := newFixedOut[int64](ec.mem, ec.n)
	clear(idx.bits)
	for k, a := range arrays {
		if a == nil {
			continue
		}
		base := int64(len(parts) * ec.n)
		parts = append(parts, a)
		forEachSet(sels[k], ec.n, func(start, end int) {
			for i := start; i < end; i++ {
				idx.vals[i] = base + int64(i)
			}
			bitutil.SetBitsTo(idx.bits, int64(start), int64(end-start), true)
		})
	}
	idx.nulls = ec.n - bitutil.CountSetBits(idx.bits, 0, ec.n)
	indices := idx.finish(arrow.PrimitiveTypes.Int64)
	defer indices.Release()
	all, err := array.Concatenate(parts, ec.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	return compute.TakeArray(ec.ctx, all, indices)
}

// coalesceNode returns the first non-NULL argument; an argument is only
// evaluated on the rows the previous ones left NULL.
type coalesceNode struct {
	args []node
	dt   arrow.DataType
}

func (n *coalesceNode) dataType() arrow.DataType { return n.dt }
func (n *coalesceNode) kids() []node             { return n.args }

func (n *coalesceNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	undecided := copySel(ec.n, sel)
	sels := make([][]byte, len(n.args))
	done := make([]arrow.Array, len(n.args))
	for k, a := range n.args {
		if k == len(n.args)-1 {
			// the last argument decides every remaining row, NULL or not
			sels[k] = undecided
			break
		}
		if bitutil.CountSetBits(undecided, 0, ec.n) == 0 {
			break
		}
		v, err := a.eval(ec, undecided)
		if err != nil {
			for _, d := range done {
				if d != nil {
					d.Release()
				}
			}
			return nil, err
		}
		taken := validBits(v, ec.n)
		bitutil.BitmapAnd(taken, undecided, 0, 0, taken, 0, int64(ec.n))
		bitutil.BitmapAndNot(undecided, taken, 0, 0, undecided, 0, int64(ec.n))
		sels[k], done[k] = taken, v
	}
	return pick(ec, n.dt, n.args, sels, done, sel)
}

// validBits returns a fresh bitmap of the non-NULL rows of a.
func validBits(a arrow.Array, n int) []byte {
	out := make([]byte, bitutil.BytesForBits(int64(n)))
	v := validityOf(a)
	switch {
	case v.none:
	case v.all:
		bitutil.SetBitsTo(out, 0, int64(n), true)
	default:
		bitutil.CopyBitmap(v.bits, v.off, n, out, 0)
	}
	return out
}
