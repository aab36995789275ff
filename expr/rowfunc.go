package expr

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// rowFunc is a scalar function evaluated row by row on canonical values
// (see getter): the Spark functions of spark_funcs.go. Its arguments have
// been converted to the types f expects by the binder.
type rowFunc struct {
	name string
	args []node
	dt   arrow.DataType
	src  Expr
	// lenient functions see NULL arguments (CONCAT_WS, LOCATE, GREATEST);
	// the others give NULL as soon as one argument is NULL.
	lenient bool
	// pure functions cannot fail, so they are folded and never need a
	// selection.
	pure bool
	f    func(v []any) (any, error)
}

func (n *rowFunc) dataType() arrow.DataType { return n.dt }
func (n *rowFunc) kids() []node             { return n.args }

func (n *rowFunc) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	arrs := make([]arrow.Array, len(n.args))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	gets := make([]func(int) any, len(n.args))
	for k, a := range n.args {
		if c, ok := a.(*constNode); ok {
			v := c.val
			gets[k] = func(int) any { return v }
			continue
		}
		arr, err := a.eval(ec, sel)
		if err != nil {
			return nil, err
		}
		arrs[k] = arr
		gets[k] = getter(arr)
	}
	bld := array.NewBuilder(ec.mem, n.dt)
	defer bld.Release()
	bld.Reserve(ec.n)
	vals := make([]any, len(n.args))
rows:
	for i := 0; i < ec.n; i++ {
		if !active(sel, i) {
			bld.AppendNull()
			continue
		}
		for k, g := range gets {
			vals[k] = g(i)
			if vals[k] == nil && !n.lenient {
				bld.AppendNull()
				continue rows
			}
		}
		r, err := n.f(vals)
		if err != nil {
			return nil, evalErr(n.src, i, fmt.Errorf("%s: %w", n.name, err))
		}
		appendValue(bld, r)
	}
	return bld.NewArray(), nil
}
