package expr

import (
	"fmt"
	"strings"
)

type tokKind int

const (
	tEOF    tokKind = iota
	tIdent          // plain identifier or keyword, text as written
	tQIdent         // `backquoted` identifier, text unescaped
	tNumber         // numeric literal, text without suffix
	tString         // 'string' or "string", text unescaped
	tOp             // operator or punctuation, text is the operator
)

// token is one lexical unit. pos and end are byte offsets into the source.
type token struct {
	kind   tokKind
	pos    int
	end    int
	text   string
	suffix string // numeric type suffix, upper case: L, S, Y, D, F, BD
}

// lex splits src into tokens. It ends with a tEOF token at len(src).
func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for {
		// skip white space and comments
		for i < len(src) {
			c := src[i]
			if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
				i++
				continue
			}
			if c == '-' && i+1 < len(src) && src[i+1] == '-' {
				for i < len(src) && src[i] != '\n' {
					i++
				}
				continue
			}
			if c == '/' && i+1 < len(src) && src[i+1] == '*' {
				end := strings.Index(src[i+2:], "*/")
				if end < 0 {
					return nil, &SyntaxError{Pos: i, Msg: "unterminated comment: expected \"*/\" but found end of input"}
				}
				i += end + 4
				continue
			}
			break
		}
		if i >= len(src) {
			toks = append(toks, token{kind: tEOF, pos: len(src), end: len(src)})
			return toks, nil
		}
		start := i
		c := src[i]
		switch {
		case isIdentStart(c):
			for i < len(src) && isIdentPart(src[i]) {
				i++
			}
			toks = append(toks, token{kind: tIdent, pos: start, end: i, text: src[start:i]})
		case c == '`':
			var b strings.Builder
			i++
			for {
				if i >= len(src) {
					return nil, &SyntaxError{Pos: start, Msg: "unterminated quoted identifier: expected \"`\" but found end of input"}
				}
				if src[i] == '`' {
					if i+1 < len(src) && src[i+1] == '`' {
						b.WriteByte('`')
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(src[i])
				i++
			}
			if b.Len() == 0 {
				return nil, &SyntaxError{Pos: start, Msg: "empty quoted identifier ``"}
			}
			toks = append(toks, token{kind: tQIdent, pos: start, end: i, text: b.String()})
		case c == '\'' || c == '"':
			var b strings.Builder
			i++
			for {
				if i >= len(src) {
					return nil, &SyntaxError{Pos: start, Msg: fmt.Sprintf("unterminated string: expected %q but found end of input", string(c))}
				}
				if src[i] == c {
					if i+1 < len(src) && src[i+1] == c {
						b.WriteByte(c)
						i += 2
						continue
					}
					i++
					break
				}
				b.WriteByte(src[i])
				i++
			}
			toks = append(toks, token{kind: tString, pos: start, end: i, text: b.String()})
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			tok, err := lexNumber(src, i)
			if err != nil {
				return nil, err
			}
			i = tok.end
			toks = append(toks, tok)
		default:
			op := ""
			for _, cand := range []string{"<=>", "<>", "<=", ">=", "!=", "==", "||", "::"} {
				if strings.HasPrefix(src[i:], cand) {
					op = cand
					break
				}
			}
			if op == "" && strings.IndexByte("()[],.*/%+-=<>;", c) >= 0 {
				op = string(c)
			}
			if op == "" {
				r := []rune(src[i:])[0]
				return nil, &SyntaxError{Pos: i, Msg: fmt.Sprintf("unexpected character %q", r)}
			}
			i += len(op)
			toks = append(toks, token{kind: tOp, pos: start, end: i, text: op})
		}
	}
}

func lexNumber(src string, i int) (token, error) {
	start := i
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	if i < len(src) && src[i] == '.' {
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			i = j
		}
	}
	tok := token{kind: tNumber, pos: start, text: src[start:i]}
	// optional type suffix, then the number must end
	rest := i
	for rest < len(src) && isIdentPart(src[rest]) {
		rest++
	}
	if rest > i {
		suf := strings.ToUpper(src[i:rest])
		switch suf {
		case "L", "S", "Y", "D", "F", "BD":
			tok.suffix = suf
		default:
			return token{}, &SyntaxError{Pos: start, Msg: fmt.Sprintf("invalid number %q", src[start:rest])}
		}
	}
	tok.end = rest
	return tok, nil
}

func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isIdentStart(c byte) bool { return c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' || c >= 0x80 }
func isIdentPart(c byte) bool  { return isIdentStart(c) || isDigit(c) }

// describe renders a token for "but found ..." messages.
func (t token) describe(src string) string {
	if t.kind == tEOF {
		return "end of input"
	}
	s := src[t.pos:t.end]
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	return fmt.Sprintf("%q", s)
}
