package expr

import (
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Expr is a node of a parsed expression. The concrete types are *Literal,
// *ColumnRef, *Unary, *Binary, *IsNull, *IsBool, *In, *Between, *Like,
// *Case, *Cast and *Call. Nodes are immutable once parsed and safe to share
// between goroutines.
type Expr interface {
	// Pos returns the 0-based byte offset in the source where the node's
	// text starts.
	Pos() int
	// String renders the node as SQL that parses back to an equal tree,
	// with parentheses only where precedence needs them.
	String() string
	exprNode()
}

// Literal is a constant. Type is the SQL type of the literal as an Arrow type
// and Value holds it in the package's canonical Go form:
//
//	NULL                         arrow.Null            nil
//	TRUE, FALSE                  Boolean               bool
//	12Y, 12S, 12, 12L            Int8/16/32/64         int64
//	12.50, 12BD                  Decimal128(p, s)      decimal128.Num (unscaled)
//	1.5F                         Float32               float64
//	1e3, 1.5D                    Float64               float64
//	'text'                       String                string
//	DATE '2024-01-31'            Date32                int64 (days since 1970-01-01)
//	TIMESTAMP '...'              Timestamp(us, "UTC")  int64 (microseconds since the epoch)
//	TIMESTAMP_NTZ '...'          Timestamp(us, "")     int64 (microseconds, wall clock)
//
// Integer literals without a suffix are INT when they fit 32 bits, else
// BIGINT, else DECIMAL(n, 0) up to 38 digits.
type Literal struct {
	P     int
	Type  arrow.DataType
	Value any
	// Text is the literal as written in the source (for numbers) or its
	// canonical SQL rendering (for the others).
	Text string
}

// ColumnRef names a column: Parts holds the dot-separated identifiers as
// written (backquotes removed), e.g. ["t", "id"] for t.id or ["a.b"] for
// `a.b`. See Compile for how a reference is matched to a field.
type ColumnRef struct {
	P     int
	Parts []string
}

// Qualifier returns the first part of a reference with several parts
// (the table alias in MERGE conditions such as t.id), or "".
func (c *ColumnRef) Qualifier() string {
	if len(c.Parts) > 1 {
		return c.Parts[0]
	}
	return ""
}

// Name returns the reference without its qualifier: the last part of t.id,
// the parts after the first joined by "." for s.addr.city.
func (c *ColumnRef) Name() string {
	if len(c.Parts) > 1 {
		return strings.Join(c.Parts[1:], ".")
	}
	return c.Parts[0]
}

// UnaryOp is the operator of a Unary node.
type UnaryOp int

const (
	// OpNeg is arithmetic negation: -x.
	OpNeg UnaryOp = iota
	// OpNot is logical negation: NOT x.
	OpNot
)

// Unary is -X or NOT X.
type Unary struct {
	P  int
	Op UnaryOp
	X  Expr
}

// BinaryOp is the operator of a Binary node.
type BinaryOp int

// Binary operators, by precedence from low to high.
const (
	OpOr BinaryOp = iota
	OpAnd
	OpEq         // = or ==
	OpNe         // <> or !=
	OpLt         // <
	OpLe         // <=
	OpGt         // >
	OpGe         // >=
	OpNullSafeEq // <=>
	OpConcat     // ||
	OpAdd        // +
	OpSub        // -
	OpMul        // *
	OpDiv        // /
	OpMod        // %
)

var binaryOpText = [...]string{"OR", "AND", "=", "<>", "<", "<=", ">", ">=", "<=>", "||", "+", "-", "*", "/", "%"}

// String returns the operator's SQL spelling.
func (op BinaryOp) String() string { return binaryOpText[op] }

// IsComparison reports whether op is one of = <> < <= > >= <=>.
func (op BinaryOp) IsComparison() bool { return op >= OpEq && op <= OpNullSafeEq }

// Binary is L Op R. OpPos is the offset of the operator.
type Binary struct {
	OpPos int
	Op    BinaryOp
	L, R  Expr
}

// IsNull is X IS NULL, or X IS NOT NULL when Not is set.
type IsNull struct {
	OpPos int
	X     Expr
	Not   bool
}

// IsBool is X IS [NOT] TRUE or X IS [NOT] FALSE (Value says which).
type IsBool struct {
	OpPos int
	X     Expr
	Not   bool
	Value bool
}

// In is X [NOT] IN (List...).
type In struct {
	OpPos int
	X     Expr
	List  []Expr
	Not   bool
}

// Between is X [NOT] BETWEEN Lo AND Hi.
type Between struct {
	OpPos  int
	X      Expr
	Lo, Hi Expr
	Not    bool
}

// Like is X [NOT] LIKE Pattern. In the pattern % matches any sequence, _ any
// single character, and a backslash makes the next character literal.
type Like struct {
	OpPos   int
	X       Expr
	Pattern Expr
	Not     bool
}

// When is one WHEN ... THEN ... arm of a Case.
type When struct {
	Cond   Expr
	Result Expr
}

// Case is CASE [Operand] WHEN ... THEN ... [ELSE Else] END. With an Operand,
// each When.Cond is a value compared with it for equality.
type Case struct {
	P       int
	Operand Expr // nil for a searched CASE
	Whens   []When
	Else    Expr // nil when absent (NULL)
}

// Cast is CAST(X AS To).
type Cast struct {
	P  int
	X  Expr
	To arrow.DataType
}

// Call is a function call. Name is the function's canonical upper-case name
// (NVL is reported as IFNULL); the parser has checked that the function
// exists and the argument count fits.
type Call struct {
	P    int
	Name string
	Args []Expr
}

func (*Literal) exprNode()   {}
func (*ColumnRef) exprNode() {}
func (*Unary) exprNode()     {}
func (*Binary) exprNode()    {}
func (*IsNull) exprNode()    {}
func (*IsBool) exprNode()    {}
func (*In) exprNode()        {}
func (*Between) exprNode()   {}
func (*Like) exprNode()      {}
func (*Case) exprNode()      {}
func (*Cast) exprNode()      {}
func (*Call) exprNode()      {}

// Pos implements Expr.
func (e *Literal) Pos() int { return e.P }

// Pos implements Expr.
func (e *ColumnRef) Pos() int { return e.P }

// Pos implements Expr.
func (e *Unary) Pos() int { return e.P }

// Pos implements Expr.
func (e *Binary) Pos() int { return e.L.Pos() }

// Pos implements Expr.
func (e *IsNull) Pos() int { return e.X.Pos() }

// Pos implements Expr.
func (e *IsBool) Pos() int { return e.X.Pos() }

// Pos implements Expr.
func (e *In) Pos() int { return e.X.Pos() }

// Pos implements Expr.
func (e *Between) Pos() int { return e.X.Pos() }

// Pos implements Expr.
func (e *Like) Pos() int { return e.X.Pos() }

// Pos implements Expr.
func (e *Case) Pos() int { return e.P }

// Pos implements Expr.
func (e *Cast) Pos() int { return e.P }

// Pos implements Expr.
func (e *Call) Pos() int { return e.P }

// Inspect traverses e depth-first in source order: it calls f(node) and, when
// f returns true, visits the node's children. Nil children are skipped.
func Inspect(e Expr, f func(Expr) bool) {
	if e == nil || !f(e) {
		return
	}
	for _, c := range children(e) {
		Inspect(c, f)
	}
}

func children(e Expr) []Expr {
	switch e := e.(type) {
	case *Unary:
		return []Expr{e.X}
	case *Binary:
		return []Expr{e.L, e.R}
	case *IsNull:
		return []Expr{e.X}
	case *IsBool:
		return []Expr{e.X}
	case *In:
		return append([]Expr{e.X}, e.List...)
	case *Between:
		return []Expr{e.X, e.Lo, e.Hi}
	case *Like:
		return []Expr{e.X, e.Pattern}
	case *Case:
		out := []Expr{}
		if e.Operand != nil {
			out = append(out, e.Operand)
		}
		for _, w := range e.Whens {
			out = append(out, w.Cond, w.Result)
		}
		if e.Else != nil {
			out = append(out, e.Else)
		}
		return out
	case *Cast:
		return []Expr{e.X}
	case *Call:
		return e.Args
	}
	return nil
}

// Columns returns the distinct column references of e in order of first
// appearance. References are distinct when their Parts differ (compared
// case-insensitively); the first occurrence's position is kept. Callers use
// it to decide which columns to read, e.g. the refs qualified by the MERGE
// source alias.
func Columns(e Expr) []ColumnRef {
	var out []ColumnRef
	Inspect(e, func(n Expr) bool {
		c, ok := n.(*ColumnRef)
		if !ok {
			return true
		}
		for _, o := range out {
			if equalFoldParts(o.Parts, c.Parts) {
				return true
			}
		}
		out = append(out, ColumnRef{P: c.P, Parts: append([]string(nil), c.Parts...)})
		return true
	})
	return out
}

func equalFoldParts(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i], b[i]) {
			return false
		}
	}
	return true
}

// Unqualify returns a copy of e in which every column reference whose
// qualifier equals qualifier (case-insensitively) loses it: with qualifier
// "t", t.id becomes id and t.addr.city becomes addr.city. Other nodes are
// shared with e. Use it to evaluate a MERGE condition on one side's rows or
// to prune the target table with ToIceberg.
func Unqualify(e Expr, qualifier string) Expr {
	return rewrite(e, func(n Expr) Expr {
		if c, ok := n.(*ColumnRef); ok && len(c.Parts) > 1 && strings.EqualFold(c.Parts[0], qualifier) {
			return &ColumnRef{P: c.P, Parts: append([]string(nil), c.Parts[1:]...)}
		}
		return n
	})
}

// rewrite rebuilds e bottom-up, replacing each node by f(node with rewritten
// children). Nodes whose children did not change are reused.
func rewrite(e Expr, f func(Expr) Expr) Expr {
	if e == nil {
		return nil
	}
	r := func(x Expr) Expr { return rewrite(x, f) }
	switch n := e.(type) {
	case *Unary:
		if x := r(n.X); x != n.X {
			c := *n
			c.X = x
			return f(&c)
		}
	case *Binary:
		l, rr := r(n.L), r(n.R)
		if l != n.L || rr != n.R {
			c := *n
			c.L, c.R = l, rr
			return f(&c)
		}
	case *IsNull:
		if x := r(n.X); x != n.X {
			c := *n
			c.X = x
			return f(&c)
		}
	case *IsBool:
		if x := r(n.X); x != n.X {
			c := *n
			c.X = x
			return f(&c)
		}
	case *In:
		c := *n
		changed := false
		c.X = r(n.X)
		changed = c.X != n.X
		c.List = make([]Expr, len(n.List))
		for i, x := range n.List {
			c.List[i] = r(x)
			changed = changed || c.List[i] != x
		}
		if changed {
			return f(&c)
		}
	case *Between:
		c := *n
		c.X, c.Lo, c.Hi = r(n.X), r(n.Lo), r(n.Hi)
		if c.X != n.X || c.Lo != n.Lo || c.Hi != n.Hi {
			return f(&c)
		}
	case *Like:
		c := *n
		c.X, c.Pattern = r(n.X), r(n.Pattern)
		if c.X != n.X || c.Pattern != n.Pattern {
			return f(&c)
		}
	case *Case:
		c := *n
		changed := false
		c.Operand = r(n.Operand)
		changed = c.Operand != n.Operand
		c.Whens = make([]When, len(n.Whens))
		for i, w := range n.Whens {
			c.Whens[i] = When{Cond: r(w.Cond), Result: r(w.Result)}
			changed = changed || c.Whens[i].Cond != w.Cond || c.Whens[i].Result != w.Result
		}
		c.Else = r(n.Else)
		changed = changed || c.Else != n.Else
		if changed {
			return f(&c)
		}
	case *Cast:
		if x := r(n.X); x != n.X {
			c := *n
			c.X = x
			return f(&c)
		}
	case *Call:
		c := *n
		changed := false
		c.Args = make([]Expr, len(n.Args))
		for i, x := range n.Args {
			c.Args[i] = r(x)
			changed = changed || c.Args[i] != x
		}
		if changed {
			return f(&c)
		}
	}
	return f(e)
}
