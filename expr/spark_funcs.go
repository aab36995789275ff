package expr

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// The Spark SQL scalar functions beyond the core ones: each is a rowFunc
// (or a rewrite into CASE, comparison or arithmetic nodes) over canonical
// values, with Spark's argument order, result types and NULL handling
// (NULL in, NULL out unless said otherwise). Errors follow ANSI mode, as
// the rest of the language: a value a function cannot take is an
// *EvalError (ErrInvalidArgument) naming the call and the row, or a
// *BindError when it is a constant.

var (
	tsType   = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	dateType = arrow.FixedWidthTypes.Date32
	strType  = arrow.BinaryTypes.String
	boolType = arrow.FixedWidthTypes.Boolean
	i32Type  = arrow.PrimitiveTypes.Int32
	i64Type  = arrow.PrimitiveTypes.Int64
	f64Type  = arrow.PrimitiveTypes.Float64
)

// --- argument conversion -----------------------------------------------------

func argTypeErr(e *Call, i int, want string, n node) error {
	return bindErr(e.Args[i].Pos(), ErrType, "%s argument %d needs %s but found %s", e.Name, i+1, want, describe(e.Args[i], n.dataType()))
}

// strArg converts argument i to STRING: numbers, booleans, dates and
// timestamps are cast as Spark casts them implicitly.
func (b *binder) strArg(e *Call, args []node, i int) (node, error) {
	a := args[i]
	switch familyOf(a.dataType()) {
	case famNull:
		return &constNode{dt: strType}, nil
	case famString, famInt, famFloat, famDecimal, famBool, famDate, famTimestamp:
		return b.castTo(a, strType, e.Args[i])
	}
	return nil, argTypeErr(e, i, "a string", a)
}

// intArg converts argument i, an integer, to BIGINT.
func (b *binder) intArg(e *Call, args []node, i int) (node, error) {
	a := args[i]
	switch familyOf(a.dataType()) {
	case famNull:
		return &constNode{dt: i64Type}, nil
	case famInt:
		return b.castTo(a, i64Type, e.Args[i])
	}
	return nil, argTypeErr(e, i, "an integer", a)
}

// doubleArg converts argument i, a number, to DOUBLE.
func (b *binder) doubleArg(e *Call, args []node, i int) (node, error) {
	a := args[i]
	switch familyOf(a.dataType()) {
	case famNull:
		return &constNode{dt: f64Type}, nil
	case famInt, famFloat, famDecimal:
		return b.castTo(a, f64Type, e.Args[i])
	}
	return nil, argTypeErr(e, i, "a number", a)
}

// dateArg converts argument i to DATE: a timestamp is cast (its UTC day), a
// string is parsed as CAST does.
func (b *binder) dateArg(e *Call, args []node, i int) (node, error) {
	a := args[i]
	switch familyOf(a.dataType()) {
	case famNull:
		return &constNode{dt: dateType}, nil
	case famDate, famTimestamp, famString:
		return b.castTo(a, dateType, e.Args[i])
	}
	return nil, argTypeErr(e, i, "a date", a)
}

// tsArg converts argument i to a timestamp in microseconds: timestamps keep
// whether they have a zone, dates and strings become TIMESTAMP.
func (b *binder) tsArg(e *Call, args []node, i int) (node, error) {
	a := args[i]
	switch familyOf(a.dataType()) {
	case famNull:
		return &constNode{dt: tsType}, nil
	case famTimestamp:
		tz := a.dataType().(*arrow.TimestampType).TimeZone
		return b.castTo(a, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: tz}, e.Args[i])
	case famDate, famString:
		return b.castTo(a, tsType, e.Args[i])
	}
	return nil, argTypeErr(e, i, "a timestamp", a)
}

// constStrArg returns argument i, which must be a constant string; ok is
// false when it is NULL.
func constStrArg(e *Call, args []node, i int, what string) (s string, ok bool, err error) {
	c, isConst := args[i].(*constNode)
	if !isConst {
		return "", false, bindErr(e.Args[i].Pos(), ErrUnsupported, "%s argument %d (%s) must be a constant but is %s", e.Name, i+1, what, describe(e.Args[i], args[i].dataType()))
	}
	switch familyOf(c.dt) {
	case famNull:
		return "", false, nil
	case famString:
		return c.val.(string), true, nil
	}
	return "", false, argTypeErr(e, i, "a string "+what, args[i])
}

// constIntArg returns argument i, which must be a constant integer.
func constIntArg(e *Call, args []node, i int, what string) (int64, error) {
	c, isConst := args[i].(*constNode)
	if !isConst || familyOf(c.dt) != famInt || c.val == nil {
		return 0, bindErr(e.Args[i].Pos(), ErrType, "%s argument %d (%s) must be a constant integer but is %s", e.Name, i+1, what, describe(e.Args[i], args[i].dataType()))
	}
	return c.val.(int64), nil
}

// argError is a function argument the function cannot take: its message
// without the sentinel's words, which errors.Is still finds.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }
func (e *argError) Unwrap() error { return ErrInvalidArgument }

func invalidArg(format string, args ...any) error {
	return &argError{msg: fmt.Sprintf(format, args...)}
}

// fn builds a rowFunc.
func fn(e *Call, dt arrow.DataType, args []node, f func(v []any) (any, error)) *rowFunc {
	return &rowFunc{name: strings.ToLower(e.Name), args: args, dt: dt, src: e, f: f}
}

// pureFn builds a rowFunc that cannot fail.
func pureFn(e *Call, dt arrow.DataType, args []node, f func(v []any) any) *rowFunc {
	r := fn(e, dt, args, func(v []any) (any, error) { return f(v), nil })
	r.pure = true
	return r
}

// convertArgs converts the arguments with conv[i] (the last converter
// repeats for variadic functions).
func (b *binder) convertArgs(e *Call, args []node, conv ...func(*binder, *Call, []node, int) (node, error)) ([]node, error) {
	out := make([]node, len(args))
	for i := range args {
		c := conv[min(i, len(conv)-1)]
		n, err := c(b, e, args, i)
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

type argConv = func(*binder, *Call, []node, int) (node, error)

var (
	aStr    argConv = (*binder).strArg
	aInt    argConv = (*binder).intArg
	aDouble argConv = (*binder).doubleArg
	aDate   argConv = (*binder).dateArg
	aTs     argConv = (*binder).tsArg
)

// simple binds a function whose arguments are converted by conv and whose
// values f maps to a result of type dt.
func simple(dt arrow.DataType, f func(v []any) (any, error), conv ...argConv) func(*binder, *Call, []node) (node, error) {
	return func(b *binder, e *Call, args []node) (node, error) {
		out, err := b.convertArgs(e, args, conv...)
		if err != nil {
			return nil, err
		}
		return fn(e, dt, out, f), nil
	}
}

// simplePure is simple for functions that cannot fail.
func simplePure(dt arrow.DataType, f func(v []any) any, conv ...argConv) func(*binder, *Call, []node) (node, error) {
	return func(b *binder, e *Call, args []node) (node, error) {
		out, err := b.convertArgs(e, args, conv...)
		if err != nil {
			return nil, err
		}
		return pureFn(e, dt, out, f), nil
	}
}

// now is the instant current_date and current_timestamp stand for: one per
// compiled expression, as Spark takes one per query.
func (b *binder) nowMicros() int64 {
	if b.now == 0 {
		b.now = time.Now().UnixMicro()
	}
	return b.now
}

func utcMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
func utcDays(d int64) time.Time    { return time.Unix(d*86400, 0).UTC() }

func daysOf(t time.Time) int64 {
	return floorDiv(t.Unix(), 86400)
}

func fitsInt32(v int64) bool { return v >= math.MinInt32 && v <= math.MaxInt32 }

func sparkBuiltins() []*builtin {
	var all []*builtin
	add := func(cat string, fs ...*builtin) {
		for _, f := range fs {
			f.Category = cat
			all = append(all, f)
		}
	}
	add("conditional", conditionalBuiltins()...)
	add("string", stringBuiltins()...)
	add("date/time", datetimeBuiltins()...)
	add("math", mathBuiltins()...)
	return all
}

func def(name string, aliases []string, minArgs, maxArgs int, sig, doc string, bind func(*binder, *Call, []node) (node, error)) *builtin {
	return &builtin{FuncInfo: FuncInfo{Name: name, Aliases: aliases, MinArgs: minArgs, MaxArgs: maxArgs, Signature: sig, Doc: doc}, bind: bind}
}

// --- conditional ---------------------------------------------------------------

func conditionalBuiltins() []*builtin {
	return []*builtin{
		def("IF", nil, 3, 3, "if(cond BOOLEAN, a, b) -> common type", "a where cond is TRUE, else b (NULL counts as not TRUE); only the branch taken is evaluated.",
			func(b *binder, e *Call, args []node) (node, error) {
				c, err := b.toBool(args[0], e.Args[0], "IF")
				if err != nil {
					return nil, err
				}
				res, t, err := b.unify(e.Args[1:], args[1:], "IF")
				if err != nil {
					return nil, err
				}
				return &caseNode{conds: []node{c}, results: res[:1], els: res[1], dt: t}, nil
			}),
		def("NVL2", nil, 3, 3, "nvl2(x, a, b) -> common type", "a when x is not NULL, else b.",
			func(b *binder, e *Call, args []node) (node, error) {
				res, t, err := b.unify(e.Args[1:], args[1:], "NVL2")
				if err != nil {
					return nil, err
				}
				return &caseNode{conds: []node{b.fold(&isNullNode{x: args[0], not: true})}, results: res[:1], els: res[1], dt: t}, nil
			}),
	}
}
