package expr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// sexpr renders a tree with explicit structure, so tests see exactly how
// the parser grouped things.
func sexpr(e Expr) string {
	switch e := e.(type) {
	case *Literal:
		return fmt.Sprintf("%s:%s", e.Text, typeName(e.Type))
	case *ColumnRef:
		return "$" + strings.Join(e.Parts, "|")
	case *Unary:
		op := "NEG"
		if e.Op == OpNot {
			op = "NOT"
		}
		return fmt.Sprintf("(%s %s)", op, sexpr(e.X))
	case *Binary:
		return fmt.Sprintf("(%s %s %s)", e.Op, sexpr(e.L), sexpr(e.R))
	case *IsNull:
		return fmt.Sprintf("(IS %sNULL %s)", not(e.Not), sexpr(e.X))
	case *IsBool:
		return fmt.Sprintf("(IS %s%v %s)", not(e.Not), e.Value, sexpr(e.X))
	case *In:
		items := make([]string, len(e.List))
		for i, x := range e.List {
			items[i] = sexpr(x)
		}
		return fmt.Sprintf("(%sIN %s [%s])", not(e.Not), sexpr(e.X), strings.Join(items, " "))
	case *Between:
		return fmt.Sprintf("(%sBETWEEN %s %s %s)", not(e.Not), sexpr(e.X), sexpr(e.Lo), sexpr(e.Hi))
	case *Like:
		return fmt.Sprintf("(%sLIKE %s %s)", not(e.Not), sexpr(e.X), sexpr(e.Pattern))
	case *Case:
		var b strings.Builder
		b.WriteString("(CASE")
		if e.Operand != nil {
			b.WriteString(" " + sexpr(e.Operand))
		}
		for _, w := range e.Whens {
			fmt.Fprintf(&b, " [%s => %s]", sexpr(w.Cond), sexpr(w.Result))
		}
		if e.Else != nil {
			b.WriteString(" ELSE " + sexpr(e.Else))
		}
		return b.String() + ")"
	case *Cast:
		return fmt.Sprintf("(CAST %s %s)", sexpr(e.X), typeName(e.To))
	case *Call:
		args := make([]string, len(e.Args))
		for i, a := range e.Args {
			args[i] = sexpr(a)
		}
		return fmt.Sprintf("(%s %s)", e.Name, strings.Join(args, " "))
	}
	return "?"
}

func TestParse(t *testing.T) {
	tests := []struct {
		src, want string
	}{
		// precedence, low to high: OR, AND, NOT, comparison, ||, + -, * / %, unary -
		{"a OR b AND c", "(OR $a (AND $b $c))"},
		{"a AND b OR c", "(OR (AND $a $b) $c)"},
		{"NOT a AND b", "(AND (NOT $a) $b)"},
		{"NOT a = b", "(NOT (= $a $b))"},
		{"NOT NOT a", "(NOT (NOT $a))"},
		{"a = b AND c <> d", "(AND (= $a $b) (<> $c $d))"},
		{"a || b = c", "(= (|| $a $b) $c)"},
		{"a + b || c", "(|| (+ $a $b) $c)"},
		{"a + b * c", "(+ $a (* $b $c))"},
		{"a * b + c", "(+ (* $a $b) $c)"},
		{"a - b - c", "(- (- $a $b) $c)"},
		{"a / b % c", "(% (/ $a $b) $c)"},
		{"-a * b", "(* (NEG $a) $b)"},
		{"- -a", "(NEG (NEG $a))"},
		{"+a", "$a"},
		{"(a OR b) AND c", "(AND (OR $a $b) $c)"},
		{"a = b = c", "(= (= $a $b) $c)"},
		{"a < b", "(< $a $b)"},
		{"a <= b", "(<= $a $b)"},
		{"a > b", "(> $a $b)"},
		{"a >= b", "(>= $a $b)"},
		{"a == b", "(= $a $b)"},
		{"a != b", "(<> $a $b)"},
		{"a <=> b", "(<=> $a $b)"},
		// predicates
		{"a IS NULL", "(IS NULL $a)"},
		{"a is not null", "(IS NOT NULL $a)"},
		{"a IS TRUE", "(IS true $a)"},
		{"a IS NOT FALSE", "(IS NOT false $a)"},
		{"a = 1 IS NOT TRUE", "(IS NOT true (= $a 1:int))"},
		{"a IN (1, 2, 3)", "(IN $a [1:int 2:int 3:int])"},
		{"a NOT IN ('x')", "(NOT IN $a ['x':string])"},
		{"a BETWEEN 1 AND 2", "(BETWEEN $a 1:int 2:int)"},
		{"a NOT BETWEEN b + 1 AND c AND d", "(AND (NOT BETWEEN $a (+ $b 1:int) $c) $d)"},
		{"a LIKE 'x%'", "(LIKE $a 'x%':string)"},
		{"a NOT LIKE 'x' OR b", "(OR (NOT LIKE $a 'x':string) $b)"},
		{"NOT a IN (1)", "(NOT (IN $a [1:int]))"},
		// literals
		{"1", "1:int"},
		{"2147483647", "2147483647:int"},
		{"2147483648", "2147483648:bigint"},
		{"-2147483648", "-2147483648:int"},
		{"-9223372036854775808", "-9223372036854775808:bigint"},
		{"9223372036854775808", "9223372036854775808:decimal(19,0)"},
		{"12.50", "12.50:decimal(4,2)"},
		{"0.05", "0.05:decimal(2,2)"},
		{".5", ".5:decimal(1,1)"},
		{"5.", "5.:decimal(1,0)"},
		{"1e3", "1e3:double"},
		{"1.5E-3", "1.5E-3:double"},
		{"10L", "10L:bigint"},
		{"10S", "10S:smallint"},
		{"10Y", "10Y:tinyint"},
		{"1.5D", "1.5D:double"},
		{"1.5F", "1.5F:float"},
		{"1.5BD", "1.5BD:decimal(2,1)"},
		{"'it''s'", "'it''s':string"},
		{`"dq"`, "'dq':string"},
		{"''", "'':string"},
		{"TRUE", "TRUE:boolean"},
		{"false", "FALSE:boolean"},
		{"NULL", "NULL:null"},
		{"DATE '2024-01-31'", "DATE '2024-01-31':date"},
		{"date '2024-1-5'", "DATE '2024-01-05':date"},
		{"TIMESTAMP '2024-01-31 10:00:00'", "TIMESTAMP '2024-01-31 10:00:00':timestamp"},
		{"TIMESTAMP '2024-01-31T10:00:00.123456Z'", "TIMESTAMP '2024-01-31 10:00:00.123456':timestamp"},
		{"TIMESTAMP '2024-01-31 10:00:00+02:00'", "TIMESTAMP '2024-01-31 08:00:00':timestamp"},
		{"TIMESTAMP '2024-01-31 01:00-0130'", "TIMESTAMP '2024-01-31 02:30:00':timestamp"},
		{"TIMESTAMP '2024-01-31'", "TIMESTAMP '2024-01-31 00:00:00':timestamp"},
		{"TIMESTAMP_NTZ '2024-01-31 10:00:00.5'", "TIMESTAMP_NTZ '2024-01-31 10:00:00.5':timestamp_ntz"},
		// names
		{"id", "$id"},
		{"s.id", "$s|id"},
		{"a.b.c", "$a|b|c"},
		{"`a.b`", "$a.b"},
		{"`we``ird name`", "$we`ird name"},
		{"t.`x y`", "$t|x y"},
		{"date", "$date"},
		{"timestamp + 1", "(+ $timestamp 1:int)"},
		{"_x1", "$_x1"},
		// CASE, CAST, functions
		{"CASE WHEN a THEN 1 WHEN b THEN 2 ELSE 3 END", "(CASE [$a => 1:int] [$b => 2:int] ELSE 3:int)"},
		{"CASE x WHEN 1 THEN 'a' END", "(CASE $x [1:int => 'a':string])"},
		{"CAST(a AS BIGINT)", "(CAST $a bigint)"},
		{"cast(a as decimal(10, 2))", "(CAST $a decimal(10,2))"},
		{"CAST(a AS DECIMAL)", "(CAST $a decimal(10,0))"},
		{"CAST(a AS varchar(10))", "(CAST $a string)"},
		{"CAST(a AS timestamp_ntz)", "(CAST $a timestamp_ntz)"},
		{"coalesce(a, b, 1)", "(COALESCE $a $b 1:int)"},
		{"nvl(a, 1)", "(IFNULL $a 1:int)"},
		{"NULLIF(a, 0)", "(NULLIF $a 0:int)"},
		{"lower(a) || upper(b)", "(|| (LOWER $a) (UPPER $b))"},
		{"LENGTH(TRIM(a))", "(LENGTH (TRIM $a))"},
		{"ABS(-a)", "(ABS (NEG $a))"},
		{"CONCAT(a, '-', b)", "(CONCAT $a '-':string $b)"},
		// comments and white space
		{"a -- comment\n AND b", "(AND $a $b)"},
		{"a /* c */ = 1", "(= $a 1:int)"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			e, err := Parse(tt.src)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.src, err)
			}
			if got := sexpr(e); got != tt.want {
				t.Fatalf("Parse(%q) = %s, want %s", tt.src, got, tt.want)
			}
			// String renders SQL that parses back to the same tree.
			again, err := Parse(e.String())
			if err != nil {
				t.Fatalf("re-parse of %q: %v", e.String(), err)
			}
			if got := sexpr(again); got != tt.want {
				t.Fatalf("round trip through %q gave %s, want %s", e.String(), got, tt.want)
			}
		})
	}
}

func TestParsePositions(t *testing.T) {
	e, err := Parse("a + b * c > 10 AND d IS NULL")
	if err != nil {
		t.Fatal(err)
	}
	and := e.(*Binary)
	if and.OpPos != 15 || and.Pos() != 0 {
		t.Errorf("AND at %d, starts at %d; want 15, 0", and.OpPos, and.Pos())
	}
	gt := and.L.(*Binary)
	if gt.OpPos != 10 {
		t.Errorf("> at %d, want 10", gt.OpPos)
	}
	mul := gt.L.(*Binary).R.(*Binary)
	if mul.Pos() != 4 || mul.OpPos != 6 {
		t.Errorf("b * c at %d op %d, want 4, 6", mul.Pos(), mul.OpPos)
	}
	isn := and.R.(*IsNull)
	if isn.Pos() != 19 || isn.OpPos != 21 {
		t.Errorf("IS NULL at %d op %d, want 19, 21", isn.Pos(), isn.OpPos)
	}
	lit := gt.R.(*Literal)
	if lit.P != 12 {
		t.Errorf("10 at %d, want 12", lit.P)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		src  string
		pos  int
		msg  string
		kind error
	}{
		{"id > 5 AND", 10, "expected an expression but found end of input", ErrSyntax},
		{"(a = 1 AND b", 12, `expected ")" but found end of input`, ErrSyntax},
		{"(a = 1 AND b = 2 AND c", 22, `expected ")" but found end of input`, ErrSyntax},
		{"a = (1 + 2 AND b", 16, `expected ")" but found end of input`, ErrSyntax},
		{"f(x) AND y", 0, "unknown function f; did you mean IF? (docs/sql.md lists the functions)", ErrUnknownFunction},
		{"a = sqrtt(2)", 4, "unknown function sqrtt; did you mean SQRT?", ErrUnknownFunction},
		{"a = frobnicate(2)", 4, "unknown function frobnicate (docs/sql.md lists the functions)", ErrUnknownFunction},
		{"substring(s)", 0, "function SUBSTRING takes 2 to 3 argument(s) but got 1", ErrArgCount},
		{"a::nosuchtype", 3, "unknown type nosuchtype", ErrSyntax},
		{"NULLIF(a)", 0, "function NULLIF takes 2 argument(s) but got 1", ErrArgCount},
		{"ABS(a, b)", 0, "function ABS takes 1 argument(s) but got 2", ErrArgCount},
		{"COALESCE()", 0, "function COALESCE takes at least 1 argument(s) but got 0", ErrArgCount},
		{"a = 'abc", 4, `unterminated string: expected "'" but found end of input`, ErrSyntax},
		{"`abc", 0, "unterminated quoted identifier", ErrSyntax},
		{"a = #", 4, `unexpected character '#'`, ErrSyntax},
		{"a = 12abc", 4, `invalid number "12abc"`, ErrSyntax},
		{"a AND AND b", 6, `expected an expression but found "AND"`, ErrSyntax},
		{"a b", 2, `expected end of input but found "b"`, ErrSyntax},
		{"a IS 5", 5, `expected NULL, TRUE or FALSE but found "5"`, ErrSyntax},
		{"a IN 1", 5, `expected "(" but found "1"`, ErrSyntax},
		{"a IN ()", 6, `expected an expression but found ")"`, ErrSyntax},
		{"a BETWEEN 1 OR 2", 12, `expected "AND" but found "OR"`, ErrSyntax},
		{"CASE END", 5, `expected "WHEN" but found "END"`, ErrSyntax},
		{"CASE WHEN a 1 END", 12, `expected "THEN" but found "1"`, ErrSyntax},
		{"CASE WHEN a THEN 1", 18, `expected "END" but found end of input`, ErrSyntax},
		{"CAST(a INT)", 7, `expected "AS" but found "INT"`, ErrSyntax},
		{"CAST(a AS blob)", 10, "unknown type blob", ErrSyntax},
		{"CAST(a AS DECIMAL(40, 2))", 18, "decimal precision must be between 1 and 38 but found 40", ErrSyntax},
		{"CAST(a AS DECIMAL(5, 6))", 21, "decimal scale must be between 0 and the precision 5 but found 6", ErrSyntax},
		{"DATE '2024-13-01'", 5, `invalid date "2024-13-01": no such day`, ErrSyntax},
		{"DATE '2024-02-30'", 5, `invalid date "2024-02-30": no such day`, ErrSyntax},
		{"DATE 'yesterday'", 5, `invalid date "yesterday": expected yyyy-mm-dd`, ErrSyntax},
		{"TIMESTAMP '2024-01-01 25:00:00'", 10, "hour, minute or second out of range", ErrSyntax},
		{"TIMESTAMP '2024-01-01 10:00:00.1234567'", 10, "expected 1 to 6 fractional digits", ErrSyntax},
		{"TIMESTAMP '2024-01-01 10:00:00 Mars/Base'", 10, "unknown time zone", ErrSyntax},
		{"TIMESTAMP_NTZ '2024-01-01 10:00:00Z'", 14, "TIMESTAMP_NTZ takes no time zone", ErrSyntax},
		{"99999999999999999999999999999999999999999", 0, "decimal literal has more than 38 digits", ErrSyntax},
		{"1e999", 0, "DOUBLE literal out of range", ErrSyntax},
		{"300Y", 0, "literal out of range for a 8-bit integer", ErrSyntax},
		{"1.5L", 0, "integer suffix on a non-integer literal", ErrSyntax},
		{"a.", 2, "expected a column name but found end of input", ErrSyntax},
		{"a = /* open", 4, "unterminated comment", ErrSyntax},
		{"``", 0, "empty quoted identifier", ErrSyntax},
		{"", 0, "expected an expression but found end of input", ErrSyntax},
		{"x = 1 y", 6, `expected end of input but found "y"`, ErrSyntax},
		{"NOT", 3, "expected an expression but found end of input", ErrSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			_, err := Parse(tt.src)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Parse(%q) = %v, want a *SyntaxError", tt.src, err)
			}
			if se.Pos != tt.pos || !strings.Contains(se.Msg, tt.msg) {
				t.Fatalf("Parse(%q) error at %d %q, want at %d containing %q", tt.src, se.Pos, se.Msg, tt.pos, tt.msg)
			}
			if !errors.Is(err, tt.kind) || !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q) error %v is not %v", tt.src, err, tt.kind)
			}
			if want := fmt.Sprintf("position %d: ", tt.pos); !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("Error() = %q, want prefix %q", err.Error(), want)
			}
		})
	}
}

func TestCaret(t *testing.T) {
	tests := []struct {
		src  string
		pos  int
		want string
	}{
		{"id > 5 AND AND x", 11, "id > 5 AND AND x\n           ^"},
		{"abc", 3, "abc\n   ^"},
		{"abc", 99, "abc\n   ^"},
		{"é = x", 3, "é = x\n  ^"},
		{"\ta = x", 3, "\ta = x\n\t  ^"},
		{"MERGE INTO t\nUSING s\nON x", 16, "2 | USING s\n       ^"},
	}
	for _, tt := range tests {
		if got := Caret(tt.src, tt.pos); got != tt.want {
			t.Errorf("Caret(%q, %d) =\n%s\nwant\n%s", tt.src, tt.pos, got, tt.want)
		}
	}
	src := "a = (1"
	_, err := Parse(src)
	want := "position 6: expected \")\" but found end of input\na = (1\n      ^"
	if got := FormatError(src, err); got != want {
		t.Errorf("FormatError =\n%s\nwant\n%s", got, want)
	}
}

func TestParseAssignments(t *testing.T) {
	as, err := ParseAssignments("price = price * 2, status = 'x', t.flag = a > b")
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(as))
	for i, a := range as {
		got[i] = strings.Join(a.Column.Parts, "|") + " := " + sexpr(a.Value)
	}
	want := []string{"price := (* $price 2:int)", "status := 'x':string", "t|flag := (> $a $b)"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("got %q, want %q", got, want)
	}
	errs := []struct {
		src string
		pos int
		msg string
	}{
		{"a = 1, A = 2", 7, "column A is assigned more than once"},
		{"a 1", 2, `expected "=" but found "1"`},
		{"a = 1,", 6, "expected a column name but found end of input"},
		{"= 1", 0, "expected a column name"},
		{"a = 1 b = 2", 6, `expected end of input but found "b"`},
	}
	for _, tt := range errs {
		_, err := ParseAssignments(tt.src)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Pos != tt.pos || !strings.Contains(se.Msg, tt.msg) {
			t.Errorf("ParseAssignments(%q) = %v, want position %d %q", tt.src, err, tt.pos, tt.msg)
		}
	}
}

func TestColumns(t *testing.T) {
	e, err := Parse("s.id = t.id AND (T.ID > 5 OR coalesce(s.data, x) = `s`.`id`) AND CASE WHEN y THEN z END")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range Columns(e) {
		got = append(got, fmt.Sprintf("%s:%s@%d", c.Qualifier(), c.Name(), c.P))
	}
	want := "s:id@0 t:id@7 s:data@38 :x@46 :y@75 :z@82"
	if strings.Join(got, " ") != want {
		t.Fatalf("Columns = %s, want %s", strings.Join(got, " "), want)
	}
	u := Unqualify(e, "T")
	if got := u.String(); got != "s.id = id AND (ID > 5 OR COALESCE(s.data, x) = s.id) AND CASE WHEN y THEN z END" {
		t.Fatalf("Unqualify = %s", got)
	}
	if e.String() == u.String() {
		t.Fatal("Unqualify modified its input")
	}
	if got := (&ColumnRef{Parts: []string{"s", "addr", "city"}}).Name(); got != "addr.city" {
		t.Fatalf("Name = %q", got)
	}
}

func TestQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{"id": "id", "a b": "`a b`", "and": "`and`", "x`y": "`x``y`", "1a": "`1a`", "é": "`é`"} {
		if got := QuoteIdent(in); got != want {
			t.Errorf("QuoteIdent(%q) = %q, want %q", in, got, want)
		}
	}
}
