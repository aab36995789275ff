package expr

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

type likeKind int

const (
	likeExact likeKind = iota
	likePrefix
	likeSuffix
	likeContains
	likeAny
	likeRegexp
)

// likeMatcher is a compiled LIKE pattern.
type likeMatcher struct {
	src  string // the pattern as written
	kind likeKind
	lit  string
	re   *regexp.Regexp
}

// compileLike compiles a LIKE pattern: % is any sequence, _ any one
// character, and a backslash makes the next %, _ or \ literal.
func compileLike(pat string) (*likeMatcher, error) {
	m, err := compileLikeKind(pat)
	if m != nil {
		m.src = pat
	}
	return m, err
}

func compileLikeKind(pat string) (*likeMatcher, error) {
	type tok struct {
		wild byte // 0 for a literal run, else '%' or '_'
		lit  string
	}
	var toks []tok
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, tok{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch c {
		case '\\':
			if i+1 >= len(pat) {
				return nil, errors.New("it ends with the escape character \\")
			}
			nx := pat[i+1]
			if nx != '%' && nx != '_' && nx != '\\' {
				return nil, fmt.Errorf("the escape character \\ must be followed by %%, _ or \\ but is followed by %q", nx)
			}
			lit.WriteByte(nx)
			i++
		case '%', '_':
			flush()
			if c == '%' && len(toks) > 0 && toks[len(toks)-1].wild == '%' {
				continue
			}
			toks = append(toks, tok{wild: c})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	hasUnderscore := false
	for _, t := range toks {
		hasUnderscore = hasUnderscore || t.wild == '_'
	}
	switch {
	case len(toks) == 0:
		return &likeMatcher{kind: likeExact}, nil
	case len(toks) == 1 && toks[0].wild == 0:
		return &likeMatcher{kind: likeExact, lit: toks[0].lit}, nil
	case len(toks) == 1 && toks[0].wild == '%':
		return &likeMatcher{kind: likeAny}, nil
	case !hasUnderscore && len(toks) == 2 && toks[0].wild == 0:
		return &likeMatcher{kind: likePrefix, lit: toks[0].lit}, nil
	case !hasUnderscore && len(toks) == 2 && toks[1].wild == 0:
		return &likeMatcher{kind: likeSuffix, lit: toks[1].lit}, nil
	case !hasUnderscore && len(toks) == 3 && toks[1].wild == 0:
		return &likeMatcher{kind: likeContains, lit: toks[1].lit}, nil
	}
	var re strings.Builder
	re.WriteString(`^(?s:`)
	for _, t := range toks {
		switch t.wild {
		case '%':
			re.WriteString(`.*`)
		case '_':
			re.WriteString(`.`)
		default:
			re.WriteString(regexp.QuoteMeta(t.lit))
		}
	}
	re.WriteString(`)$`)
	r, err := regexp.Compile(re.String())
	if err != nil {
		return nil, err
	}
	return &likeMatcher{kind: likeRegexp, re: r}, nil
}

func (m *likeMatcher) match(s string) bool {
	switch m.kind {
	case likeExact:
		return s == m.lit
	case likePrefix:
		return strings.HasPrefix(s, m.lit)
	case likeSuffix:
		return strings.HasSuffix(s, m.lit)
	case likeContains:
		return strings.Contains(s, m.lit)
	case likeAny:
		return true
	}
	return m.re.MatchString(s)
}

// likeNode is x [NOT] LIKE pattern.
type likeNode struct {
	x   node
	m   *likeMatcher
	not bool
}

func (n *likeNode) dataType() arrow.DataType { return arrow.FixedWidthTypes.Boolean }
func (n *likeNode) kids() []node             { return []node{n.x} }
func (n *likeNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	x, err := n.x.eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	out := newBoolOut(ec.mem, ec.n)
	str := stringsOf(x)
	v := validityOf(x)
	for i := 0; i < ec.n; i++ {
		if !v.ok(i) {
			out.setNull(i)
			continue
		}
		out.set(i, n.m.match(str(i)) != n.not)
	}
	return out.finish(), nil
}

// stringsOf returns a reader of the values of a string array.
func stringsOf(a arrow.Array) func(int) string {
	switch a := a.(type) {
	case *array.String:
		return a.Value
	case *array.LargeString:
		return a.Value
	}
	return func(int) string { return "" }
}

// funcNode is a scalar function: CONCAT, LOWER, UPPER, TRIM, LENGTH, ABS.
type funcNode struct {
	name string
	args []node
	dt   arrow.DataType
	src  *Call
}

func (n *funcNode) dataType() arrow.DataType { return n.dt }
func (n *funcNode) kids() []node             { return n.args }

func (n *funcNode) eval(ec *evalCtx, sel []byte) (arrow.Array, error) {
	if n.name == "CONCAT" {
		ops := make([]operand, 0, len(n.args))
		defer func() {
			for _, o := range ops {
				o.release()
			}
		}()
		for _, k := range n.args {
			if c, ok := k.(*constNode); ok {
				ops = append(ops, operand{isConst: true, val: c.val, dt: c.dt})
				continue
			}
			a, err := k.eval(ec, sel)
			if err != nil {
				return nil, err
			}
			ops = append(ops, operand{arr: a, dt: a.DataType()})
		}
		return concatStrings(ec, ops)
	}
	x, err := n.args[0].eval(ec, sel)
	if err != nil {
		return nil, err
	}
	defer x.Release()
	switch n.name {
	case "LOWER":
		return mapStrings(ec, x, strings.ToLower)
	case "UPPER":
		return mapStrings(ec, x, strings.ToUpper)
	case "TRIM":
		return mapStrings(ec, x, func(s string) string { return strings.Trim(s, " ") })
	case "LENGTH":
		return length(ec, x), nil
	case "ABS":
		return absolute(ec, x, sel, n.src)
	}
	return nil, fmt.Errorf("expr: no function %s", n.name)
}

// stringOut writes a STRING result straight into Arrow buffers.
type stringOut struct {
	offs *fixedOut[int32]
	data *memory.Buffer
	size int
}

func newStringOut(mem memory.Allocator, n, sizeHint int) *stringOut {
	o := &stringOut{offs: newFixedOut[int32](mem, n+1), data: memory.NewResizableBuffer(mem)}
	o.offs.vals[0] = 0
	o.data.Resize(max(sizeHint, 64))
	return o
}

// write appends s to the current value.
func (o *stringOut) write(s string) {
	need := o.size + len(s)
	if need > o.data.Len() {
		o.data.Resize(max(need, 2*o.data.Len()))
	}
	copy(o.data.Bytes()[o.size:], s)
	o.size = need
}

// end closes value i (NULL when null is set).
func (o *stringOut) end(i int, null bool) {
	if null {
		o.offs.setNull(i)
	}
	o.offs.vals[i+1] = int32(o.size)
}

func (o *stringOut) finish(n int) (arrow.Array, error) {
	if o.size > math.MaxInt32 {
		o.offs.discard()
		o.data.Release()
		return nil, fmt.Errorf("%w: string results of one batch exceed 2 GiB", ErrOverflow)
	}
	o.data.Resize(o.size)
	valid := o.offs.valid
	if o.offs.nulls == 0 {
		valid.Release()
		valid = nil
	}
	d := array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{valid, o.offs.data, o.data}, nil, o.offs.nulls, 0)
	if valid != nil {
		valid.Release()
	}
	o.offs.data.Release()
	o.data.Release()
	defer d.Release()
	return array.MakeFromData(d), nil
}

// concatStrings is CONCAT: NULL when any argument is NULL.
func concatStrings(ec *evalCtx, ops []operand) (arrow.Array, error) {
	strs := make([]func(int) string, len(ops))
	vals := make([]validity, len(ops))
	hint := 0
	for k, o := range ops {
		if o.isConst {
			if o.val == nil {
				return constNull(ec, arrow.BinaryTypes.String), nil
			}
			c := o.val.(string)
			strs[k], vals[k] = func(int) string { return c }, validity{all: true}
			hint += len(c) * ec.n
			continue
		}
		strs[k], vals[k] = stringsOf(o.arr), validityOf(o.arr)
		hint += len(o.arr.Data().Buffers()[2].Bytes())
	}
	out := newStringOut(ec.mem, ec.n, hint)
rows:
	for i := 0; i < ec.n; i++ {
		for k := range ops {
			if !vals[k].ok(i) {
				out.end(i, true)
				continue rows
			}
		}
		for k := range ops {
			out.write(strs[k](i))
		}
		out.end(i, false)
	}
	return out.finish(ec.n)
}

func mapStrings(ec *evalCtx, a arrow.Array, f func(string) string) (arrow.Array, error) {
	str, v := stringsOf(a), validityOf(a)
	out := newStringOut(ec.mem, ec.n, len(a.Data().Buffers()[2].Bytes()))
	for i := 0; i < ec.n; i++ {
		if !v.ok(i) {
			out.end(i, true)
			continue
		}
		out.write(f(str(i)))
		out.end(i, false)
	}
	return out.finish(ec.n)
}

// length counts characters of strings and bytes of binary values.
func length(ec *evalCtx, a arrow.Array) arrow.Array {
	v := validityOf(a)
	o := newFixedOut[int32](ec.mem, ec.n)
	var count func(int) int
	if familyOf(a.DataType()) == famBinary {
		g := getter(a)
		count = func(i int) int { return len(g(i).([]byte)) }
	} else {
		str := stringsOf(a)
		count = func(i int) int { return utf8.RuneCountInString(str(i)) }
	}
	for i := 0; i < ec.n; i++ {
		if !v.ok(i) {
			o.setNull(i)
			continue
		}
		o.vals[i] = int32(count(i))
	}
	return o.finish(arrow.PrimitiveTypes.Int32)
}

func absolute(ec *evalCtx, x arrow.Array, sel []byte, src *Call) (arrow.Array, error) {
	dt := x.DataType()
	switch familyOf(dt) {
	case famFloat:
		return callCompute(ec, "abs_unchecked", compute.NewDatumWithoutOwning(x))
	case famDecimal:
		return mapFixed(ec, x, dt, func(v decimal128.Num) (decimal128.Num, error) { return v.Abs(), nil }, sel, src)
	}
	lim, _ := intRange(intBits(dt))
	abs := func(v int64) (int64, error) {
		if v == lim {
			return 0, fmt.Errorf("%w: the result does not fit %s", ErrOverflow, typeName(dt))
		}
		if v < 0 {
			return -v, nil
		}
		return v, nil
	}
	switch dt.ID() {
	case arrow.INT8:
		return mapFixed(ec, x, dt, func(v int8) (int8, error) { r, err := abs(int64(v)); return int8(r), err }, sel, src)
	case arrow.INT16:
		return mapFixed(ec, x, dt, func(v int16) (int16, error) { r, err := abs(int64(v)); return int16(r), err }, sel, src)
	case arrow.INT32:
		return mapFixed(ec, x, dt, func(v int32) (int32, error) { r, err := abs(int64(v)); return int32(r), err }, sel, src)
	}
	return mapFixed(ec, x, dt, abs, sel, src)
}
