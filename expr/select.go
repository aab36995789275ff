package expr

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
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
	choice := make([]int32, ec.n)
	for i := range choice {
		choice[i] = -1
	}
	for k, c := range n.conds {
		cv, err := c.eval(ec, undecided)
		if err != nil {
			return nil, err
		}
		bv := viewBool(cv)
		for i := 0; i < ec.n; i++ {
			if bitutil.BitIsSet(undecided, i) && bv.state(i) == 1 {
				choice[i] = int32(k)
				bitutil.ClearBit(undecided, i)
			}
		}
		cv.Release()
	}
	for i := 0; i < ec.n; i++ {
		if bitutil.BitIsSet(undecided, i) {
			choice[i] = int32(len(n.conds))
		}
	}
	branches := append(append([]node{}, n.results...), n.els)
	return pick(ec, n.dt, branches, choice, make([]arrow.Array, len(branches)), sel)
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

// pick builds the result whose row i is row i of branches[choice[i]]
// (NULL for -1); rows outside sel are don't-cares. done[k], when not nil,
// is branch k already evaluated on a superset of the rows that chose it;
// pick releases it. The other branches are evaluated only on the rows that
// chose them, and not at all when none did.
func pick(ec *evalCtx, dt arrow.DataType, branches []node, choice []int32, done []arrow.Array, sel []byte) (arrow.Array, error) {
	var arrays []arrow.Array
	defer func() {
		for _, a := range arrays {
			a.Release()
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
	counts := make([]int, len(branches))
	hasNull := false
	for i, c := range choice {
		switch {
		case c >= 0:
			counts[c]++
		case active(sel, i):
			hasNull = true
		}
	}
	slot := make([]int, len(branches)) // position in arrays, -1 when not evaluated
	for k, b := range branches {
		slot[k] = -1
		if counts[k] == 0 {
			continue
		}
		if done[k] != nil {
			slot[k] = len(arrays)
			arrays = append(arrays, done[k])
			done[k] = nil
			continue
		}
		bsel := make([]byte, bitutil.BytesForBits(int64(ec.n)))
		for i, c := range choice {
			if int(c) == k {
				bitutil.SetBit(bsel, i)
			}
		}
		a, err := b.eval(ec, bsel)
		if err != nil {
			return nil, err
		}
		slot[k] = len(arrays)
		arrays = append(arrays, a)
	}
	if len(arrays) == 0 {
		return constNull(ec, dt), nil
	}
	if len(arrays) == 1 && !hasNull {
		arrays[0].Retain()
		return arrays[0], nil
	}
	all, err := array.Concatenate(arrays, ec.mem)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	idx := newFixedOut[int64](ec.mem, ec.n)
	for i, c := range choice {
		if c < 0 {
			idx.setNull(i)
			continue
		}
		idx.vals[i] = int64(slot[c]*ec.n + i)
	}
	indices := idx.finish(arrow.PrimitiveTypes.Int64)
	defer indices.Release()
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
	choice := make([]int32, ec.n)
	for i := range choice {
		choice[i] = -1
	}
	done := make([]arrow.Array, len(n.args))
	for k, a := range n.args {
		if k == len(n.args)-1 {
			// the last argument decides every remaining row, NULL or not
			for i := 0; i < ec.n; i++ {
				if bitutil.BitIsSet(undecided, i) {
					choice[i] = int32(k)
				}
			}
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
		vv := validityOf(v)
		for i := 0; i < ec.n; i++ {
			if bitutil.BitIsSet(undecided, i) && vv.ok(i) {
				choice[i] = int32(k)
				bitutil.ClearBit(undecided, i)
			}
		}
		done[k] = v
	}
	return pick(ec, n.dt, n.args, choice, done, sel)
}
