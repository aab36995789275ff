package expr

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Precedence levels, low to high, shared by the parser and the printer.
const (
	precOr = iota + 1
	precAnd
	precNot
	precCmp // comparisons, IS, IN, BETWEEN, LIKE
	precConcat
	precAdd
	precMul
	precUnary
	precPrimary
)

func binaryPrec(op BinaryOp) int {
	switch op {
	case OpOr:
		return precOr
	case OpAnd:
		return precAnd
	case OpConcat:
		return precConcat
	case OpAdd, OpSub:
		return precAdd
	case OpMul, OpDiv, OpMod:
		return precMul
	}
	return precCmp
}

func prec(e Expr) int {
	switch e := e.(type) {
	case *Binary:
		return binaryPrec(e.Op)
	case *Unary:
		if e.Op == OpNot {
			return precNot
		}
		return precUnary
	case *IsNull, *IsBool, *In, *Between, *Like:
		return precCmp
	}
	return precPrimary
}

// writeSub writes e to b, in parentheses when its precedence is below min.
// NB: the String methods all write into one builder: building each node's
// text from its children's strings made rendering quadratic in the depth.
func writeSub(b *strings.Builder, e Expr, min int) {
	if prec(e) < min {
		b.WriteByte('(')
		writeExpr(b, e)
		b.WriteByte(')')
		return
	}
	writeExpr(b, e)
}

// startsWithMinus reports whether e, rendered at precedence min, starts
// with "-" (so that negating it must not write "--", a comment).
func startsWithMinus(e Expr, min int) bool {
	if prec(e) < min {
		return false
	}
	switch e := e.(type) {
	case *Literal:
		return strings.HasPrefix(e.Text, "-")
	case *Unary:
		return e.Op == OpNeg
	}
	return false
}

func not(b bool) string {
	if b {
		return "NOT "
	}
	return ""
}

func render(e Expr) string {
	var b strings.Builder
	writeExpr(&b, e)
	return b.String()
}

// writeExpr writes e as SQL.
func writeExpr(b *strings.Builder, e Expr) {
	switch e := e.(type) {
	case *Literal:
		b.WriteString(e.Text)
	case *ColumnRef:
		for i, p := range e.Parts {
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(QuoteIdent(p))
		}
	case *Unary:
		if e.Op == OpNot {
			b.WriteString("NOT ")
			writeSub(b, e.X, precNot)
			return
		}
		if startsWithMinus(e.X, precUnary) {
			b.WriteString("- ")
		} else {
			b.WriteByte('-')
		}
		writeSub(b, e.X, precUnary)
	case *Binary:
		p := binaryPrec(e.Op)
		writeSub(b, e.L, p)
		b.WriteString(" " + e.Op.String() + " ")
		writeSub(b, e.R, p+1)
	case *IsNull:
		writeSub(b, e.X, precCmp)
		b.WriteString(" IS " + not(e.Not) + "NULL")
	case *IsBool:
		v := "FALSE"
		if e.Value {
			v = "TRUE"
		}
		writeSub(b, e.X, precCmp)
		b.WriteString(" IS " + not(e.Not) + v)
	case *In:
		writeSub(b, e.X, precCmp)
		b.WriteString(" " + not(e.Not) + "IN (")
		for i, x := range e.List {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, x)
		}
		b.WriteByte(')')
	case *Between:
		writeSub(b, e.X, precCmp)
		b.WriteString(" " + not(e.Not) + "BETWEEN ")
		writeSub(b, e.Lo, precConcat)
		b.WriteString(" AND ")
		writeSub(b, e.Hi, precConcat)
	case *Like:
		writeSub(b, e.X, precCmp)
		b.WriteString(" " + not(e.Not) + "LIKE ")
		writeSub(b, e.Pattern, precConcat)
	case *Case:
		b.WriteString("CASE")
		if e.Operand != nil {
			b.WriteByte(' ')
			writeExpr(b, e.Operand)
		}
		for _, w := range e.Whens {
			b.WriteString(" WHEN ")
			writeExpr(b, w.Cond)
			b.WriteString(" THEN ")
			writeExpr(b, w.Result)
		}
		if e.Else != nil {
			b.WriteString(" ELSE ")
			writeExpr(b, e.Else)
		}
		b.WriteString(" END")
	case *Cast:
		b.WriteString("CAST(")
		writeExpr(b, e.X)
		b.WriteString(" AS " + TypeSQL(e.To) + ")")
	case *Call:
		b.WriteString(e.Name + "(")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			writeExpr(b, a)
		}
		b.WriteByte(')')
	default:
		b.WriteString(e.String())
	}
}

// String implements Expr.
func (e *Literal) String() string { return e.Text }

// String implements Expr.
func (e *ColumnRef) String() string { return render(e) }

// String implements Expr.
func (e *Unary) String() string { return render(e) }

// String implements Expr.
func (e *Binary) String() string { return render(e) }

// String implements Expr.
func (e *IsNull) String() string { return render(e) }

// String implements Expr.
func (e *IsBool) String() string { return render(e) }

// String implements Expr.
func (e *In) String() string { return render(e) }

// String implements Expr.
func (e *Between) String() string { return render(e) }

// String implements Expr.
func (e *Like) String() string { return render(e) }

// String implements Expr.
func (e *Case) String() string { return render(e) }

// String implements Expr.
func (e *Cast) String() string { return render(e) }

// String implements Expr.
func (e *Call) String() string { return render(e) }

// QuoteIdent renders an identifier for SQL: as is when it is a plain
// identifier that is not a reserved word, else in backquotes with inner
// backquotes doubled.
func QuoteIdent(s string) string {
	plain := s != "" && !isDigit(s[0])
	for i := 0; i < len(s) && plain; i++ {
		plain = isIdentPart(s[i]) && s[i] < 0x80
	}
	if plain && !reserved[strings.ToUpper(s)] {
		return s
	}
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// quoteString renders s as a SQL string literal.
func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// TypeSQL renders an Arrow type with its SQL name as CAST accepts it
// (INT, BIGINT, DECIMAL(10,2), TIMESTAMP, ...). Types without a SQL name are
// rendered with Arrow's own notation.
func TypeSQL(dt arrow.DataType) string {
	switch t := dt.(type) {
	case *arrow.NullType:
		return "VOID"
	case *arrow.BooleanType:
		return "BOOLEAN"
	case *arrow.Int8Type:
		return "TINYINT"
	case *arrow.Int16Type:
		return "SMALLINT"
	case *arrow.Int32Type:
		return "INT"
	case *arrow.Int64Type:
		return "BIGINT"
	case *arrow.Float32Type:
		return "FLOAT"
	case *arrow.Float64Type:
		return "DOUBLE"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case *arrow.StringType, *arrow.LargeStringType:
		return "STRING"
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return "BINARY"
	case *arrow.Date32Type:
		return "DATE"
	case *arrow.TimestampType:
		ns := ""
		if t.Unit == arrow.Nanosecond {
			ns = "(9)"
		}
		if t.TimeZone == "" {
			return "TIMESTAMP_NTZ" + ns
		}
		return "TIMESTAMP" + ns
	}
	return dt.String()
}
