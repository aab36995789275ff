package expr

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// reserved words cannot name a column without backquotes.
var reserved = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IS": true, "NULL": true, "TRUE": true, "FALSE": true,
	"IN": true, "BETWEEN": true, "LIKE": true, "CASE": true, "WHEN": true, "THEN": true,
	"ELSE": true, "END": true, "CAST": true,
}

// Assignment is one `column = expression` of a SET list.
type Assignment struct {
	Column *ColumnRef
	Value  Expr
}

// String renders the assignment as SQL.
func (a Assignment) String() string { return a.Column.String() + " = " + a.Value.String() }

type parser struct {
	src   string
	toks  []token
	i     int
	depth int // nesting levels open (see MaxDepth)
}

func newParser(src string) (*parser, error) {
	if len(src) > MaxLength {
		return nil, limitError(MaxLength, "input longer than %d bytes (%d bytes)", MaxLength, len(src))
	}
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	if err := checkInput(src, toks); err != nil {
		return nil, err
	}
	return &parser{src: src, toks: toks}, nil
}

// Parse parses a SQL expression such as `id > 5 AND data IS NOT NULL`. On
// malformed input it returns a *SyntaxError (errors.Is ErrSyntax, and
// ErrUnknownFunction or ErrArgCount for bad calls) with the byte position of
// the problem.
func Parse(src string) (Expr, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if err := p.expectEOF(); err != nil {
		return nil, err
	}
	return e, nil
}

// ParseAssignments parses a comma-separated list of assignments such as
// `price = price * 2, status = 'x'` (the SET list of an UPDATE). A column
// assigned twice is a *SyntaxError.
func ParseAssignments(src string) ([]Assignment, error) {
	p, err := newParser(src)
	if err != nil {
		return nil, err
	}
	as, err := p.parseAssignments()
	if err != nil {
		return nil, err
	}
	if err := p.expectEOF(); err != nil {
		return nil, err
	}
	return as, nil
}

func (p *parser) parseAssignments() ([]Assignment, error) {
	var out []Assignment
	for {
		col, err := p.parseColumnName()
		if err != nil {
			return nil, err
		}
		for _, a := range out {
			if equalFoldParts(a.Column.Parts, col.Parts) {
				return nil, p.errAt(col.P, fmt.Sprintf("column %s is assigned more than once", col))
			}
		}
		if !p.acceptOp("=") && !p.acceptOp("==") {
			return nil, p.expected(`"="`)
		}
		v, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		out = append(out, Assignment{Column: col, Value: v})
		if !p.acceptOp(",") {
			return out, nil
		}
	}
}

// --- token helpers ---------------------------------------------------------

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) peekAt(k int) token {
	if p.i+k < len(p.toks) {
		return p.toks[p.i+k]
	}
	return p.toks[len(p.toks)-1]
}

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) isKeyword(t token, kw string) bool {
	return t.kind == tIdent && strings.EqualFold(t.text, kw)
}

func (p *parser) atKeyword(kw string) bool { return p.isKeyword(p.peek(), kw) }

func (p *parser) acceptKeyword(kw string) bool {
	if p.atKeyword(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectKeyword(kw string) (token, error) {
	if p.atKeyword(kw) {
		return p.next(), nil
	}
	return token{}, p.expected(strconv.Quote(kw))
}

func (p *parser) atOp(op string) bool {
	t := p.peek()
	return t.kind == tOp && t.text == op
}

func (p *parser) acceptOp(op string) bool {
	if p.atOp(op) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expectOp(op string) (token, error) {
	if p.atOp(op) {
		return p.next(), nil
	}
	return token{}, p.expected(strconv.Quote(op))
}

func (p *parser) expectEOF() error {
	if p.peek().kind != tEOF {
		return p.expected("end of input")
	}
	return nil
}

func (p *parser) errAt(pos int, msg string) *SyntaxError {
	return &SyntaxError{Pos: pos, Msg: msg}
}

// expected reports that `what` was expected at the current token.
func (p *parser) expected(what string) *SyntaxError {
	t := p.peek()
	return p.errAt(t.pos, fmt.Sprintf("expected %s but found %s", what, t.describe(p.src)))
}

// --- expressions -------------------------------------------------------------

func (p *parser) parseExpr() (Expr, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	return p.parseOr()
}

func (p *parser) parseOr() (Expr, error) {
	l, err := p.parseAnd()
	if err != nil {
		return nil, err
	}
	for p.atKeyword("OR") {
		t := p.next()
		r, err := p.parseAnd()
		if err != nil {
			return nil, err
		}
		l = &Binary{OpPos: t.pos, Op: OpOr, L: l, R: r}
	}
	return l, nil
}

func (p *parser) parseAnd() (Expr, error) {
	l, err := p.parseNot()
	if err != nil {
		return nil, err
	}
	for p.atKeyword("AND") {
		t := p.next()
		r, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		l = &Binary{OpPos: t.pos, Op: OpAnd, L: l, R: r}
	}
	return l, nil
}

func (p *parser) parseNot() (Expr, error) {
	// NB: a loop, not recursion: chains of NOT nest no level (MaxDepth).
	var nots []int
	for p.atKeyword("NOT") {
		nots = append(nots, p.next().pos)
	}
	x, err := p.parsePredicate()
	if err != nil {
		return nil, err
	}
	for i := len(nots) - 1; i >= 0; i-- {
		x = &Unary{P: nots[i], Op: OpNot, X: x}
	}
	return x, nil
}

var comparisonOps = map[string]BinaryOp{
	"=": OpEq, "==": OpEq, "<>": OpNe, "!=": OpNe, "<": OpLt, "<=": OpLe, ">": OpGt, ">=": OpGe, "<=>": OpNullSafeEq,
}

func (p *parser) parsePredicate() (Expr, error) {
	l, err := p.parseConcat()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind == tOp {
			op, ok := comparisonOps[t.text]
			if !ok {
				return l, nil
			}
			p.next()
			r, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			l = &Binary{OpPos: t.pos, Op: op, L: l, R: r}
			continue
		}
		if p.isKeyword(t, "IS") {
			p.next()
			neg := p.acceptKeyword("NOT")
			switch {
			case p.acceptKeyword("NULL"):
				l = &IsNull{OpPos: t.pos, X: l, Not: neg}
			case p.acceptKeyword("TRUE"):
				l = &IsBool{OpPos: t.pos, X: l, Not: neg, Value: true}
			case p.acceptKeyword("FALSE"):
				l = &IsBool{OpPos: t.pos, X: l, Not: neg, Value: false}
			default:
				return nil, p.expected("NULL, TRUE or FALSE")
			}
			continue
		}
		neg := false
		if p.isKeyword(t, "NOT") {
			n := p.peekAt(1)
			if !p.isKeyword(n, "IN") && !p.isKeyword(n, "BETWEEN") && !p.isKeyword(n, "LIKE") &&
				!p.isKeyword(n, "RLIKE") && !p.isKeyword(n, "REGEXP") {
				return l, nil
			}
			p.next()
			neg = true
		}
		switch {
		case p.acceptKeyword("IN"):
			if _, err := p.expectOp("("); err != nil {
				return nil, err
			}
			var list []Expr
			for {
				if len(list) == MaxInValues {
					return nil, limitError(p.peek().pos, "IN list of more than %d values", MaxInValues)
				}
				x, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				list = append(list, x)
				if !p.acceptOp(",") {
					break
				}
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			l = &In{OpPos: t.pos, X: l, List: list, Not: neg}
		case p.acceptKeyword("BETWEEN"):
			lo, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectKeyword("AND"); err != nil {
				return nil, err
			}
			hi, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			l = &Between{OpPos: t.pos, X: l, Lo: lo, Hi: hi, Not: neg}
		case p.acceptKeyword("LIKE"):
			pat, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			l = &Like{OpPos: t.pos, X: l, Pattern: pat, Not: neg}
		case p.acceptKeyword("RLIKE") || p.acceptKeyword("REGEXP"):
			// NB: x RLIKE p is the call RLIKE(x, p), and renders as one.
			pat, err := p.parseConcat()
			if err != nil {
				return nil, err
			}
			l = &Call{P: t.pos, Name: "RLIKE", Args: []Expr{l, pat}}
			if neg {
				l = &Unary{P: t.pos, Op: OpNot, X: l}
			}
		default:
			return l, nil
		}
	}
}

func (p *parser) parseConcat() (Expr, error) {
	l, err := p.parseAdditive()
	if err != nil {
		return nil, err
	}
	for p.atOp("||") {
		t := p.next()
		r, err := p.parseAdditive()
		if err != nil {
			return nil, err
		}
		l = &Binary{OpPos: t.pos, Op: OpConcat, L: l, R: r}
	}
	return l, nil
}

func (p *parser) parseAdditive() (Expr, error) {
	l, err := p.parseMultiplicative()
	if err != nil {
		return nil, err
	}
	for p.atOp("+") || p.atOp("-") {
		t := p.next()
		op := OpAdd
		if t.text == "-" {
			op = OpSub
		}
		r, err := p.parseMultiplicative()
		if err != nil {
			return nil, err
		}
		l = &Binary{OpPos: t.pos, Op: op, L: l, R: r}
	}
	return l, nil
}

func (p *parser) parseMultiplicative() (Expr, error) {
	l, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for p.atOp("*") || p.atOp("/") || p.atOp("%") {
		t := p.next()
		op := map[string]BinaryOp{"*": OpMul, "/": OpDiv, "%": OpMod}[t.text]
		r, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		l = &Binary{OpPos: t.pos, Op: op, L: l, R: r}
	}
	return l, nil
}

func (p *parser) parseUnary() (Expr, error) {
	if p.atOp("-") || p.atOp("+") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer p.leave()
	}
	switch {
	case p.atOp("-"):
		t := p.next()
		if n := p.peek(); n.kind == tNumber {
			// NB: fold the sign into the literal so that -2147483648 is an INT
			// and -9223372036854775808 a BIGINT, as in Spark.
			p.next()
			lit, err := numberLiteral(p.src, n, t.pos)
			if err != nil {
				return nil, err
			}
			return p.parseCasts(lit)
		}
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return &Unary{P: t.pos, Op: OpNeg, X: x}, nil
	case p.atOp("+"):
		p.next()
		return p.parseUnary()
	}
	return p.parsePrimary()
}

// parsePrimary parses a primary expression and the `::type` casts after
// it (Spark's x::type, binding tighter than any operator).
func (p *parser) parsePrimary() (Expr, error) {
	x, err := p.parseAtom()
	if err != nil {
		return nil, err
	}
	return p.parseCasts(x)
}

func (p *parser) parseCasts(x Expr) (Expr, error) {
	for p.atOp("::") {
		t := p.next()
		dt, err := p.parseType()
		if err != nil {
			return nil, err
		}
		x = &Cast{P: t.pos, X: x, To: dt}
	}
	return x, nil
}

func (p *parser) parseAtom() (Expr, error) {
	t := p.peek()
	switch t.kind {
	case tNumber:
		p.next()
		return numberLiteral(p.src, t, -1)
	case tString:
		p.next()
		return &Literal{P: t.pos, Type: arrow.BinaryTypes.String, Value: t.text, Text: quoteString(t.text)}, nil
	case tQIdent:
		return p.parseColumnName()
	case tOp:
		if t.text == "(" {
			p.next()
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return e, nil
		}
	case tIdent:
		up := strings.ToUpper(t.text)
		switch up {
		case "NULL":
			p.next()
			return &Literal{P: t.pos, Type: arrow.Null, Value: nil, Text: "NULL"}, nil
		case "TRUE", "FALSE":
			p.next()
			return &Literal{P: t.pos, Type: arrow.FixedWidthTypes.Boolean, Value: up == "TRUE", Text: up}, nil
		case "INTERVAL":
			if p.startsInterval() {
				return p.parseInterval()
			}
		case "CASE":
			return p.parseCase()
		case "CAST":
			return p.parseCast()
		case "DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ":
			if s := p.peekAt(1); s.kind == tString {
				p.next()
				p.next()
				lit, err := typedLiteral(up, s.text)
				if err != nil {
					return nil, p.errAt(s.pos, err.Error())
				}
				lit.P = t.pos
				return lit, nil
			}
		}
		if n := p.peekAt(1); n.kind == tOp && n.text == "(" {
			return p.parseCall()
		}
		if up == "CURRENT_DATE" || up == "CURRENT_TIMESTAMP" {
			// Spark's niladic forms, without parentheses
			if n := p.peekAt(1); !(n.kind == tOp && n.text == ".") {
				p.next()
				return &Call{P: t.pos, Name: up}, nil
			}
		}
		if reserved[up] {
			return nil, p.expected("an expression")
		}
		return p.parseColumnName()
	}
	return nil, p.expected("an expression")
}

// parseColumnName parses ident(.ident)* where each part may be backquoted.
func (p *parser) parseColumnName() (*ColumnRef, error) {
	t := p.peek()
	ref := &ColumnRef{P: t.pos}
	for {
		t := p.peek()
		switch {
		case t.kind == tQIdent:
		case t.kind == tIdent && !reserved[strings.ToUpper(t.text)]:
		default:
			return nil, p.expected("a column name")
		}
		p.next()
		ref.Parts = append(ref.Parts, t.text)
		if !p.atOp(".") {
			return ref, nil
		}
		p.next()
	}
}

func (p *parser) parseCall() (Expr, error) {
	t := p.next()
	f, ok := lookupBuiltin(t.text)
	if !ok {
		return nil, &SyntaxError{Pos: t.pos, Msg: unknownFunction(t.text), kind: ErrUnknownFunction}
	}
	name := f.Name
	arity := [2]int{f.MinArgs, f.MaxArgs}
	p.next() // (
	var args []Expr
	if !p.atOp(")") {
		for {
			a, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if !p.acceptOp(",") {
				break
			}
		}
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	if len(args) < arity[0] || (arity[1] >= 0 && len(args) > arity[1]) {
		want := fmt.Sprintf("%d", arity[0])
		switch {
		case arity[1] < 0:
			want = fmt.Sprintf("at least %d", arity[0])
		case arity[1] != arity[0]:
			want = fmt.Sprintf("%d to %d", arity[0], arity[1])
		}
		return nil, &SyntaxError{Pos: t.pos, Msg: fmt.Sprintf("function %s takes %s argument(s) but got %d",
			name, want, len(args)), kind: ErrArgCount}
	}
	return &Call{P: t.pos, Name: name, Args: args}, nil
}

func (p *parser) parseCase() (Expr, error) {
	t := p.next()
	c := &Case{P: t.pos}
	if p.atKeyword("END") {
		return nil, p.expected(`"WHEN"`)
	}
	if !p.atKeyword("WHEN") {
		op, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Operand = op
	}
	for p.acceptKeyword("WHEN") {
		cond, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if _, err := p.expectKeyword("THEN"); err != nil {
			return nil, err
		}
		res, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, When{Cond: cond, Result: res})
	}
	if len(c.Whens) == 0 {
		return nil, p.expected(`"WHEN"`)
	}
	if p.acceptKeyword("ELSE") {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Else = e
	}
	if _, err := p.expectKeyword("END"); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *parser) parseCast() (Expr, error) {
	t := p.next()
	if _, err := p.expectOp("("); err != nil {
		return nil, err
	}
	x, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectKeyword("AS"); err != nil {
		return nil, err
	}
	dt, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if _, err := p.expectOp(")"); err != nil {
		return nil, err
	}
	return &Cast{P: t.pos, X: x, To: dt}, nil
}

// castType is a type name CAST accepts (docs/sql.md lists them).
type castType struct {
	names []string // the first is the one messages use
	param string   // the parameters it takes, as documented
	dt    arrow.DataType
	doc   string
}

var castTypes = []castType{
	{names: []string{"BOOLEAN", "BOOL"}, dt: arrow.FixedWidthTypes.Boolean, doc: "true or false"},
	{names: []string{"TINYINT", "BYTE"}, dt: arrow.PrimitiveTypes.Int8, doc: "8-bit integer (stored as an Iceberg int)"},
	{names: []string{"SMALLINT", "SHORT"}, dt: arrow.PrimitiveTypes.Int16, doc: "16-bit integer (stored as an Iceberg int)"},
	{names: []string{"INT", "INTEGER"}, dt: arrow.PrimitiveTypes.Int32, doc: "32-bit integer"},
	{names: []string{"BIGINT", "LONG"}, dt: arrow.PrimitiveTypes.Int64, doc: "64-bit integer"},
	{names: []string{"FLOAT", "REAL"}, dt: arrow.PrimitiveTypes.Float32, doc: "32-bit floating point"},
	{names: []string{"DOUBLE"}, dt: arrow.PrimitiveTypes.Float64, doc: "64-bit floating point"},
	{names: []string{"DECIMAL", "DEC", "NUMERIC"}, param: "[(p[, s])]", dt: &arrow.Decimal128Type{Precision: 10, Scale: 0},
		doc: "exact decimal of precision p (1 to 38, 10 by default) and scale s (0 by default)"},
	{names: []string{"STRING", "TEXT"}, dt: arrow.BinaryTypes.String, doc: "UTF-8 text"},
	{names: []string{"VARCHAR", "CHAR"}, param: "[(n)]", dt: arrow.BinaryTypes.String, doc: "STRING, as Spark casts to them (the length is not enforced)"},
	{names: []string{"BINARY"}, dt: arrow.BinaryTypes.Binary, doc: "bytes"},
	{names: []string{"DATE"}, dt: arrow.FixedWidthTypes.Date32, doc: "calendar date"},
	{names: []string{"TIMESTAMP", "TIMESTAMP_LTZ"}, dt: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		doc: "instant with time zone (Iceberg timestamptz), as in Spark SQL; shown in UTC"},
	{names: []string{"TIMESTAMP_NTZ"}, dt: &arrow.TimestampType{Unit: arrow.Microsecond}, doc: "wall-clock time without zone (Iceberg timestamp)"},
}

func lookupCastType(name string) (*castType, bool) {
	up := strings.ToUpper(name)
	for i := range castTypes {
		for _, n := range castTypes[i].names {
			if n == up {
				return &castTypes[i], true
			}
		}
	}
	return nil, false
}

// parseType parses a SQL type name for CAST.
func (p *parser) parseType() (arrow.DataType, error) {
	t := p.peek()
	if t.kind != tIdent {
		return nil, p.expected("a type name")
	}
	p.next()
	ct, ok := lookupCastType(t.text)
	if !ok {
		names := make([]string, len(castTypes))
		for i, c := range castTypes {
			names[i] = c.names[0] + map[string]string{"DECIMAL": "(p,s)", "VARCHAR": "(n)"}[c.names[0]]
		}
		return nil, p.errAt(t.pos, fmt.Sprintf("unknown type %s; expected one of %s", t.text, strings.Join(names, ", ")))
	}
	switch ct.names[0] {
	case "VARCHAR":
		// Spark treats VARCHAR(n)/CHAR(n) casts as STRING.
		if p.acceptOp("(") {
			if _, err := p.parseTypeInt(); err != nil {
				return nil, err
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
	case "DECIMAL":
		prec, scale := 10, 0
		if p.acceptOp("(") {
			pt := p.peek()
			v, err := p.parseTypeInt()
			if err != nil {
				return nil, err
			}
			if v < 1 || v > 38 {
				return nil, p.errAt(pt.pos, fmt.Sprintf("decimal precision must be between 1 and 38 but found %d", v))
			}
			prec, scale = v, 0
			if p.acceptOp(",") {
				st := p.peek()
				s, err := p.parseTypeInt()
				if err != nil {
					return nil, err
				}
				if s > prec {
					return nil, p.errAt(st.pos, fmt.Sprintf("decimal scale must be between 0 and the precision %d but found %d", prec, s))
				}
				scale = s
			}
			if _, err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
		return &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}, nil
	}
	return ct.dt, nil
}

func (p *parser) parseTypeInt() (int, error) {
	t := p.peek()
	if t.kind != tNumber || t.suffix != "" || strings.ContainsAny(t.text, ".eE") {
		return 0, p.expected("an integer")
	}
	p.next()
	v, err := strconv.Atoi(t.text)
	if err != nil {
		return 0, p.errAt(t.pos, fmt.Sprintf("integer %s out of range", t.text))
	}
	return v, nil
}

// numberLiteral converts a number token, negated when minusPos >= 0 (the
// position of the minus sign), into a typed Literal.
func numberLiteral(src string, t token, minusPos int) (*Literal, error) {
	neg := minusPos >= 0
	pos := t.pos
	text := src[t.pos:t.end]
	if neg {
		pos = minusPos
		text = "-" + text
	}
	lit := &Literal{P: pos, Text: text}
	fail := func(msg string) (*Literal, error) {
		return nil, &SyntaxError{Pos: pos, Msg: fmt.Sprintf("%s: %s", msg, text)}
	}
	isFloat := strings.ContainsAny(t.text, "eE")
	isFrac := strings.Contains(t.text, ".")
	switch t.suffix {
	case "D", "F":
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil || math.IsInf(f, 0) {
			return fail("floating-point literal out of range")
		}
		if neg {
			f = -f
		}
		if t.suffix == "F" {
			if math.Abs(f) > math.MaxFloat32 {
				return fail("FLOAT literal out of range")
			}
			lit.Type, lit.Value = arrow.PrimitiveTypes.Float32, float64(float32(f))
		} else {
			lit.Type, lit.Value = arrow.PrimitiveTypes.Float64, f
		}
		return lit, nil
	case "L", "S", "Y":
		if isFloat || isFrac {
			return fail("integer suffix on a non-integer literal")
		}
		bits := map[string]int{"L": 64, "S": 16, "Y": 8}[t.suffix]
		v, err := strconv.ParseInt(sign(neg)+t.text, 10, bits)
		if err != nil {
			return fail(fmt.Sprintf("literal out of range for a %d-bit integer", bits))
		}
		lit.Type = map[string]arrow.DataType{"L": arrow.PrimitiveTypes.Int64, "S": arrow.PrimitiveTypes.Int16, "Y": arrow.PrimitiveTypes.Int8}[t.suffix]
		lit.Value = v
		return lit, nil
	case "BD":
		unscaled, scale, ok := parseDecimalText(sign(neg) + t.text)
		if !ok {
			return fail("invalid decimal literal")
		}
		return decimalLiteral(lit, unscaled, scale, fail)
	}
	if isFloat {
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil || math.IsInf(f, 0) {
			return fail("DOUBLE literal out of range")
		}
		if neg {
			f = -f
		}
		lit.Type, lit.Value = arrow.PrimitiveTypes.Float64, f
		return lit, nil
	}
	unscaled, scale, ok := parseDecimalText(sign(neg) + t.text)
	if !ok {
		return fail("invalid number")
	}
	if !isFrac && unscaled.IsInt64() {
		v := unscaled.Int64()
		if v >= math.MinInt32 && v <= math.MaxInt32 {
			lit.Type, lit.Value = arrow.PrimitiveTypes.Int32, v
		} else {
			lit.Type, lit.Value = arrow.PrimitiveTypes.Int64, v
		}
		return lit, nil
	}
	return decimalLiteral(lit, unscaled, scale, fail)
}

func sign(neg bool) string {
	if neg {
		return "-"
	}
	return ""
}

func decimalLiteral(lit *Literal, unscaled *big.Int, scale int, fail func(string) (*Literal, error)) (*Literal, error) {
	if scale < 0 {
		unscaled = new(big.Int).Mul(unscaled, pow10Big(-scale))
		scale = 0
	}
	prec := max(digits(unscaled), scale, 1)
	if prec > 38 {
		return fail("decimal literal has more than 38 digits")
	}
	lit.Type = &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}
	lit.Value = decimal128.FromBigInt(unscaled)
	return lit, nil
}

// typedLiteral builds DATE '...', TIMESTAMP '...' and TIMESTAMP_NTZ '...'
// literals.
func typedLiteral(kind, s string) (*Literal, error) {
	switch kind {
	case "DATE":
		d, err := parseDate(s)
		if err != nil {
			return nil, err
		}
		return &Literal{Type: arrow.FixedWidthTypes.Date32, Value: d, Text: "DATE " + quoteString(formatDate(d))}, nil
	case "TIMESTAMP_NTZ":
		us, err := parseTimestamp(s, false)
		if err != nil {
			return nil, err
		}
		return &Literal{Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Value: us,
			Text: "TIMESTAMP_NTZ " + quoteString(formatTimestamp(us, arrow.Microsecond))}, nil
	default:
		us, err := parseTimestamp(s, true)
		if err != nil {
			return nil, err
		}
		return &Literal{Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Value: us,
			Text: "TIMESTAMP " + quoteString(formatTimestamp(us, arrow.Microsecond))}, nil
	}
}
