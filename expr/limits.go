package expr

import (
	"errors"
	"fmt"
)

// Limits on the input of the parsers (Parse, ParseAssignments,
// ParseMerge). Input past one is a *SyntaxError wrapping ErrLimit (and
// ErrSyntax) that names the limit. Within them, parsing, binding,
// evaluation and conversion to Iceberg take time linear in the input.
const (
	// MaxLength is the longest expression or statement, in bytes.
	MaxLength = 1 << 20
	// MaxDepth is how deeply expressions may nest: parentheses, function
	// calls, CASE, CAST, IN lists and unary signs each open a level.
	// Chains of AND, OR, NOT, comparisons and arithmetic do not: their
	// length is bounded by MaxLength only.
	MaxDepth = 1000
	// MaxInValues is the most values an IN list may hold.
	MaxInValues = 100000
	// MaxNameLength is the longest identifier (a column, table or alias
	// name part), in bytes.
	MaxNameLength = 1024
)

// ErrLimit marks input past one of the parsers' limits (MaxLength,
// MaxDepth, MaxInValues, MaxNameLength). It comes wrapped in a
// *SyntaxError.
var ErrLimit = errors.New("limit exceeded")

func limitError(pos int, format string, args ...any) *SyntaxError {
	return &SyntaxError{Pos: pos, Msg: fmt.Sprintf(format, args...), kind: ErrLimit}
}

// checkInput enforces MaxLength and MaxNameLength on a lexed input.
func checkInput(src string, toks []token) error {
	for _, t := range toks {
		if (t.kind == tIdent || t.kind == tQIdent) && len(t.text) > MaxNameLength {
			return limitError(t.pos, "name longer than %d bytes (%d bytes)", MaxNameLength, len(t.text))
		}
	}
	return nil
}

// enter opens a nesting level; leave closes it.
func (p *parser) enter() error {
	p.depth++
	if p.depth > MaxDepth {
		return limitError(p.peek().pos, "expression nested more than %d levels deep", MaxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }
