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

// sub renders e, in parentheses when its precedence is below min.
func sub(e Expr, min int) string {
	if prec(e) < min {
		return "(" + e.String() + ")"
	}
	return e.String()
}

func not(b bool) string {
	if b {
		return "NOT "
	}
	return ""
}

// String implements Expr.
func (e *Literal) String() string { return e.Text }

// String implements Expr.
func (e *ColumnRef) String() string {
	parts := make([]string, len(e.Parts))
	for i, p := range e.Parts {
		parts[i] = QuoteIdent(p)
	}
	return strings.Join(parts, ".")
}

// String implements Expr.
func (e *Unary) String() string {
	if e.Op == OpNot {
		return "NOT " + sub(e.X, precNot)
	}
	s := sub(e.X, precUnary)
	if strings.HasPrefix(s, "-") {
		return "- " + s
	}
	return "-" + s
}

// String implements Expr.
func (e *Binary) String() string {
	p := binaryPrec(e.Op)
	return sub(e.L, p) + " " + e.Op.String() + " " + sub(e.R, p+1)
}

// String implements Expr.
func (e *IsNull) String() string {
	return sub(e.X, precCmp) + " IS " + not(e.Not) + "NULL"
}

// String implements Expr.
func (e *IsBool) String() string {
	v := "FALSE"
	if e.Value {
		v = "TRUE"
	}
	return sub(e.X, precCmp) + " IS " + not(e.Not) + v
}

// String implements Expr.
func (e *In) String() string {
	items := make([]string, len(e.List))
	for i, x := range e.List {
		items[i] = x.String()
	}
	return sub(e.X, precCmp) + " " + not(e.Not) + "IN (" + strings.Join(items, ", ") + ")"
}

// String implements Expr.
func (e *Between) String() string {
	return sub(e.X, precCmp) + " " + not(e.Not) + "BETWEEN " + sub(e.Lo, precConcat) + " AND " + sub(e.Hi, precConcat)
}

// String implements Expr.
func (e *Like) String() string {
	return sub(e.X, precCmp) + " " + not(e.Not) + "LIKE " + sub(e.Pattern, precConcat)
}

// String implements Expr.
func (e *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if e.Operand != nil {
		b.WriteString(" " + e.Operand.String())
	}
	for _, w := range e.Whens {
		b.WriteString(" WHEN " + w.Cond.String() + " THEN " + w.Result.String())
	}
	if e.Else != nil {
		b.WriteString(" ELSE " + e.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

// String implements Expr.
func (e *Cast) String() string {
	return "CAST(" + e.X.String() + " AS " + TypeSQL(e.To) + ")"
}

// String implements Expr.
func (e *Call) String() string {
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = a.String()
	}
	return e.Name + "(" + strings.Join(args, ", ") + ")"
}

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
