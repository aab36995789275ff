package expr

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Sentinel errors. Every error returned by this package wraps one of them
// (with %w or through Unwrap), so callers can test the kind with errors.Is.
var (
	// ErrSyntax marks a malformed expression, assignment list or MERGE
	// statement. The concrete error is a *SyntaxError.
	ErrSyntax = errors.New("syntax error")
	// ErrUnknownFunction marks a call of a function the language does not
	// have. It comes wrapped in a *SyntaxError.
	ErrUnknownFunction = errors.New("unknown function")
	// ErrArgCount marks a function call with the wrong number of arguments.
	// It comes wrapped in a *SyntaxError.
	ErrArgCount = errors.New("wrong number of arguments")
	// ErrUnknownColumn marks a reference that names no column of the schema.
	// It comes wrapped in a *BindError.
	ErrUnknownColumn = errors.New("unknown column")
	// ErrAmbiguousColumn marks a reference that matches more than one
	// column. It comes wrapped in a *BindError.
	ErrAmbiguousColumn = errors.New("ambiguous column")
	// ErrType marks operands whose types do not fit the operator, function
	// or context. It comes wrapped in a *BindError.
	ErrType = errors.New("type mismatch")
	// ErrUnsupported marks a construct or Arrow type the package does not
	// handle (for example arithmetic on decimal256). It comes wrapped in a
	// *BindError.
	ErrUnsupported = errors.New("unsupported")
	// ErrDivideByZero marks a division or remainder by zero during
	// evaluation (ANSI semantics: an error, not NULL). It comes wrapped in an
	// *EvalError.
	ErrDivideByZero = errors.New("division by zero")
	// ErrOverflow marks an arithmetic result or cast that does not fit its
	// type during evaluation. It comes wrapped in an *EvalError.
	ErrOverflow = errors.New("numeric overflow")
	// ErrInvalidCast marks a value that cannot be converted to the target
	// type, such as CAST('abc' AS INT). It comes wrapped in an *EvalError,
	// or in a *BindError when the value is a literal.
	ErrInvalidCast = errors.New("invalid cast")
	// ErrInvalidArgument marks a function argument whose value the function
	// cannot take, such as make_date(2024, 13, 1) or a string that does not
	// match to_date's pattern. It comes wrapped in an *EvalError, or in a
	// *BindError when the argument is a constant.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrSchemaMismatch marks a record batch whose schema does not match the
	// schema a Program was compiled against.
	ErrSchemaMismatch = errors.New("schema mismatch")
)

// Positioned is implemented by errors that know the byte offset (0-based)
// in the source text where the problem is. FormatError uses it to draw a
// caret.
type Positioned interface {
	error
	Position() int
}

// SyntaxError reports malformed input: Pos is the 0-based byte offset in the
// source, Msg says what was expected and what was found.
type SyntaxError struct {
	Pos int
	Msg string

	kind error // optional finer sentinel (ErrUnknownFunction, ErrArgCount)
}

// Error renders the error as `position 12: expected ")" but found "AND"`.
func (e *SyntaxError) Error() string { return fmt.Sprintf("position %d: %s", e.Pos, e.Msg) }

// Position returns Pos.
func (e *SyntaxError) Position() int { return e.Pos }

// Unwrap returns ErrSyntax and, for unknown functions and wrong argument
// counts, ErrUnknownFunction or ErrArgCount.
func (e *SyntaxError) Unwrap() []error {
	if e.kind != nil {
		return []error{ErrSyntax, e.kind}
	}
	return []error{ErrSyntax}
}

// BindError reports a problem found while resolving names and types against
// a schema (Compile, ToIceberg): Pos is the 0-based byte offset of the
// offending expression and Kind is one of the sentinel errors
// (ErrUnknownColumn, ErrAmbiguousColumn, ErrType, ErrUnsupported,
// ErrInvalidCast).
type BindError struct {
	Pos  int
	Msg  string
	Kind error
}

// Error renders the error as `position 7: cannot compare ...`.
func (e *BindError) Error() string { return fmt.Sprintf("position %d: %s", e.Pos, e.Msg) }

// Position returns Pos.
func (e *BindError) Position() int { return e.Pos }

// Unwrap returns Kind.
func (e *BindError) Unwrap() error { return e.Kind }

// EvalError reports a failure while evaluating a compiled expression on a
// record batch: which sub-expression failed (Expr, rendered as SQL, and its
// position Pos), at which row of the batch, and why (Kind is ErrDivideByZero,
// ErrOverflow or ErrInvalidCast).
type EvalError struct {
	Expr string
	Pos  int
	Row  int
	Msg  string
	Kind error
}

// Error renders the error as `division by zero in "a / b" (position 4) at row 17`.
func (e *EvalError) Error() string {
	return fmt.Sprintf("%s in %q (position %d) at row %d", e.Msg, e.Expr, e.Pos, e.Row)
}

// Position returns Pos.
func (e *EvalError) Position() int { return e.Pos }

// Unwrap returns Kind.
func (e *EvalError) Unwrap() error { return e.Kind }

// Caret renders the line of src that contains byte offset pos with a caret
// under that position, prefixed by the line number when src has several
// lines:
//
//	id > 5 AND AND x
//	           ^
//
// Positions past the end point just after the last character.
func Caret(src string, pos int) string {
	if pos < 0 {
		pos = 0
	}
	if pos > len(src) {
		pos = len(src)
	}
	start := strings.LastIndexByte(src[:pos], '\n') + 1
	end := strings.IndexByte(src[pos:], '\n')
	if end < 0 {
		end = len(src)
	} else {
		end += pos
	}
	line := strings.TrimRight(src[start:end], "\r")
	// A long line shows a window around the position, cut at rune
	// boundaries, with … where text is left out.
	const window = 60
	lead, trail := "", ""
	if len(line) > 2*window+20 {
		from := max(0, pos-start-window)
		for from > 0 && !utf8.RuneStart(line[from]) {
			from--
		}
		to := min(len(line), max(pos-start, 0)+window)
		for to < len(line) && !utf8.RuneStart(line[to]) {
			to++
		}
		if from > 0 {
			lead = "…"
		}
		if to < len(line) {
			trail = "…"
		}
		line = line[from:to]
		start += from
	}
	prefix := ""
	if strings.Contains(src, "\n") {
		prefix = fmt.Sprintf("%d | ", strings.Count(src[:start], "\n")+1)
	}
	var pad strings.Builder
	pad.WriteString(strings.Repeat(" ", len(prefix)))
	if lead != "" {
		pad.WriteByte(' ')
	}
	// NB: count runes, not bytes, so the caret sits under the character; keep
	// tabs so terminals expand them the same way in both lines.
	for _, r := range src[start:min(pos, start+len(line))] {
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
	}
	return prefix + lead + line + trail + "\n" + pad.String() + "^"
}

// FormatError renders err for a terminal: the error message, and, when err
// carries a position (see Positioned), the source line with a caret under
// the position.
func FormatError(src string, err error) string {
	var p Positioned
	if errors.As(err, &p) {
		return err.Error() + "\n" + Caret(src, p.Position())
	}
	return err.Error()
}
