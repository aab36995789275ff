// Package ddl parses the small declarative languages of `floe table create`:
// column lists ("id long not null, data string, tags list<string>") into
// Iceberg schemas, and partition lists ("day(ts), bucket(16, id), data")
// into Iceberg partition specs.
package ddl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ErrSyntax is wrapped by every parse error of this package.
var ErrSyntax = errors.New("syntax error")

// Error is a parse error at a byte position of the input.
type Error struct {
	Input string
	Pos   int
	Msg   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at position %d of %s: %s", ErrSyntax, e.Pos, shown(e.Input, e.Pos), e.Msg)
}

// Unwrap lets errors.Is(err, ErrSyntax) succeed.
func (e *Error) Unwrap() error { return ErrSyntax }

type lexer struct {
	src   string
	pos   int
	depth int // nested types open (MaxTypeDepth)
}

func (l *lexer) errf(format string, args ...any) error {
	return &Error{Input: l.src, Pos: l.pos, Msg: fmt.Sprintf(format, args...)}
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.src) && unicode.IsSpace(rune(l.src[l.pos])) {
		l.pos++
	}
}

func (l *lexer) eof() bool { l.skipSpace(); return l.pos >= len(l.src) }

func (l *lexer) peekByte() byte {
	l.skipSpace()
	if l.pos >= len(l.src) {
		return 0
	}
	return l.src[l.pos]
}

func (l *lexer) accept(b byte) bool {
	if l.peekByte() == b {
		l.pos++
		return true
	}
	return false
}

func (l *lexer) expect(b byte) error {
	if !l.accept(b) {
		found := "end of input"
		if l.pos < len(l.src) {
			found = strconv.Quote(string(l.src[l.pos]))
		}
		return l.errf("expected %q but found %s", string(b), found)
	}
	return nil
}

// ident reads a plain word or a `backquoted` name.
func (l *lexer) ident() (string, error) {
	l.skipSpace()
	if l.pos >= len(l.src) {
		return "", l.errf("expected a name but found end of input")
	}
	if l.src[l.pos] == '`' {
		var b strings.Builder
		l.pos++
		for l.pos < len(l.src) {
			c := l.src[l.pos]
			if c == '`' {
				if l.pos+1 < len(l.src) && l.src[l.pos+1] == '`' {
					b.WriteByte('`')
					l.pos += 2
					continue
				}
				l.pos++
				return b.String(), nil
			}
			b.WriteByte(c)
			l.pos++
		}
		return "", l.errf("unterminated backquoted name")
	}
	start := l.pos
	for l.pos < len(l.src) {
		c := rune(l.src[l.pos])
		if c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c) {
			l.pos++
			continue
		}
		break
	}
	if start == l.pos {
		return "", l.errf("expected a name but found %q", string(l.src[l.pos]))
	}
	return l.src[start:l.pos], nil
}

func (l *lexer) number() (int, error) {
	l.skipSpace()
	start := l.pos
	for l.pos < len(l.src) && l.src[l.pos] >= '0' && l.src[l.pos] <= '9' {
		l.pos++
	}
	if start == l.pos {
		return 0, l.errf("expected a number")
	}
	n, err := strconv.Atoi(l.src[start:l.pos])
	if err != nil {
		l.pos = start
		return 0, l.errf("bad number: %v", err)
	}
	return n, nil
}

// keyword reports whether the next word is kw (case-insensitive) and
// consumes it when it is.
func (l *lexer) keyword(kw string) bool {
	l.skipSpace()
	save := l.pos
	w, err := l.ident()
	if err == nil && strings.EqualFold(w, kw) {
		return true
	}
	l.pos = save
	return false
}
