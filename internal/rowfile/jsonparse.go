package rowfile

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON parser into a flat node arena. It keeps number text exact (a
// decimal is never routed through float64), keeps object member order and
// reports errors with byte positions. One parser is reused for every line,
// so steady-state parsing does not allocate.

type jkind uint8

const (
	jNull jkind = iota
	jBool
	jNumber
	jString
	jArray
	jObject
)

func (k jkind) String() string {
	return [...]string{"null", "boolean", "number", "string", "array", "object"}[k]
}

// jnode is one JSON value. The children of an array or object node i are
// the nodes i+1, nodes[i+1].next, ... up to nodes[i].next.
type jnode struct {
	kind  jkind
	b     bool   // for jBool
	val   []byte // number text, or unescaped string content
	key   []byte // unescaped member key when the parent is an object
	start int32  // byte span of the value in the source, for messages
	end   int32
	next  int32 // index of the node after this one's subtree
	n     int32 // number of children
}

// maxJSONDepth bounds nesting so hostile input cannot exhaust the stack.
const maxJSONDepth = 512

type jparser struct {
	src    []byte
	pos    int
	nodes  []jnode
	strbuf []byte
	depth  int
	errMsg string
	errPos int
}

// text returns the value as shown in error messages: a string's content, or
// the source text of any other value.
func (p *jparser) text(n *jnode) string {
	if n.kind == jString {
		return string(n.val)
	}
	return string(p.src[n.start:n.end])
}

// parse parses one JSON value filling the whole of src (white space
// around it allowed). On error it returns false; errMsg and errPos (0-based
// byte offset) say what and where.
func (p *jparser) parse(src []byte) bool {
	p.src = src
	p.pos = 0
	p.nodes = p.nodes[:0]
	p.depth = 0
	p.errMsg = ""
	if cap(p.strbuf) < len(src) {
		p.strbuf = make([]byte, 0, len(src)+64)
	}
	p.strbuf = p.strbuf[:0]
	p.skipWS()
	if !p.value() {
		return false
	}
	p.skipWS()
	if p.pos != len(p.src) {
		return p.fail("unexpected %s after the JSON value", p.describe())
	}
	return true
}

func (p *jparser) fail(format string, args ...any) bool {
	if p.errMsg == "" {
		p.errMsg = fmt.Sprintf(format, args...)
		p.errPos = p.pos
	}
	return false
}

func (p *jparser) describe() string {
	if p.pos >= len(p.src) {
		return "end of input"
	}
	c := p.src[p.pos]
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("character %q", c)
}

func (p *jparser) skipWS() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jparser) value() bool {
	if p.pos >= len(p.src) {
		return p.fail("unexpected end of input, expected a value")
	}
	idx := len(p.nodes)
	p.nodes = append(p.nodes, jnode{start: int32(p.pos)})
	ok := false
	switch c := p.src[p.pos]; {
	case c == '{':
		ok = p.object(idx)
	case c == '[':
		ok = p.array(idx)
	case c == '"':
		var s []byte
		s, ok = p.str()
		p.nodes[idx].kind, p.nodes[idx].val = jString, s
	case c == '-' || (c >= '0' && c <= '9'):
		ok = p.number(idx)
	case c == 't':
		ok = p.literal("true")
		p.nodes[idx].kind, p.nodes[idx].b = jBool, true
	case c == 'f':
		ok = p.literal("false")
		p.nodes[idx].kind = jBool
	case c == 'n':
		ok = p.literal("null")
		p.nodes[idx].kind = jNull
	default:
		return p.fail("unexpected %s, expected a value", p.describe())
	}
	if !ok {
		return false
	}
	p.nodes[idx].end = int32(p.pos)
	p.nodes[idx].next = int32(len(p.nodes))
	return true
}

func (p *jparser) literal(word string) bool {
	if len(p.src)-p.pos >= len(word) && string(p.src[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return p.fail("invalid literal, expected %s", word)
}

func (p *jparser) number(idx int) bool {
	start := p.pos
	s := p.src
	i := p.pos
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.fail("invalid number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			p.pos = i
			return p.fail("invalid number: no digits after the decimal point")
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			p.pos = i
			return p.fail("invalid number: no digits in the exponent")
		}
	}
	p.pos = i
	p.nodes[idx].kind = jNumber
	p.nodes[idx].val = s[start:i]
	return true
}

// str parses a string at p.pos (which is '"') and returns its content,
// unescaped. Content without escapes is a slice of the source.
func (p *jparser) str() ([]byte, bool) {
	s := p.src
	i := p.pos + 1
	start := i
	ascii := true
	for i < len(s) {
		c := s[i]
		if c == '"' {
			out := s[start:i]
			p.pos = i + 1
			if !ascii && !utf8.Valid(out) {
				p.pos = start
				return nil, p.fail("invalid UTF-8 in string")
			}
			return out, true
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			p.pos = i
			return nil, p.fail("control character 0x%02x in string (must be escaped)", c)
		}
		if c >= 0x80 {
			ascii = false
		}
		i++
	}
	if i >= len(s) {
		p.pos = p.pos + 0
		return nil, p.fail("unterminated string")
	}
	// Slow path with escapes: unescape into strbuf, which has room for the
	// whole source, so earlier slices of it stay valid.
	bstart := len(p.strbuf)
	p.strbuf = append(p.strbuf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			out := p.strbuf[bstart:len(p.strbuf):len(p.strbuf)]
			p.pos = i + 1
			if !utf8.Valid(out) {
				p.pos = start
				return nil, p.fail("invalid UTF-8 in string")
			}
			return out, true
		case c < 0x20:
			p.pos = i
			return nil, p.fail("control character 0x%02x in string (must be escaped)", c)
		case c != '\\':
			p.strbuf = append(p.strbuf, c)
			i++
			continue
		}
		if i+1 >= len(s) {
			break
		}
		e := s[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			p.strbuf = append(p.strbuf, e)
		case 'b':
			p.strbuf = append(p.strbuf, '\b')
		case 'f':
			p.strbuf = append(p.strbuf, '\f')
		case 'n':
			p.strbuf = append(p.strbuf, '\n')
		case 'r':
			p.strbuf = append(p.strbuf, '\r')
		case 't':
			p.strbuf = append(p.strbuf, '\t')
		case 'u':
			r, ok := hex4(s, i)
			if !ok {
				p.pos = i - 2
				return nil, p.fail("invalid \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(-1), false
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2, ok2 = hex4(s, i+2)
				}
				if dec := utf16.DecodeRune(r, r2); ok2 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			p.strbuf = utf8.AppendRune(p.strbuf, r)
		default:
			p.pos = i - 2
			return nil, p.fail("invalid escape \\%c in string", e)
		}
	}
	return nil, p.fail("unterminated string")
}

func hex4(s []byte, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range s[i : i+4] {
		v, ok := hexVal(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func (p *jparser) array(idx int) bool {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.fail("nesting deeper than %d", maxJSONDepth)
	}
	p.nodes[idx].kind = jArray
	p.pos++ // [
	p.skipWS()
	var n int32
	if p.pos < len(p.src) && p.src[p.pos] == ']' {
		p.pos++
		p.depth--
		return true
	}
	for {
		p.skipWS()
		if !p.value() {
			return false
		}
		n++
		p.skipWS()
		if p.pos >= len(p.src) {
			return p.fail("unexpected end of input in array")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.nodes[idx].n = n
			p.depth--
			return true
		default:
			return p.fail("unexpected %s in array, expected ',' or ']'", p.describe())
		}
	}
}

func (p *jparser) object(idx int) bool {
	p.depth++
	if p.depth > maxJSONDepth {
		return p.fail("nesting deeper than %d", maxJSONDepth)
	}
	p.nodes[idx].kind = jObject
	p.pos++ // {
	p.skipWS()
	var n int32
	if p.pos < len(p.src) && p.src[p.pos] == '}' {
		p.pos++
		p.depth--
		return true
	}
	for {
		p.skipWS()
		if p.pos >= len(p.src) || p.src[p.pos] != '"' {
			return p.fail("unexpected %s in object, expected a string key", p.describe())
		}
		key, ok := p.str()
		if !ok {
			return false
		}
		p.skipWS()
		if p.pos >= len(p.src) || p.src[p.pos] != ':' {
			return p.fail("unexpected %s after object key, expected ':'", p.describe())
		}
		p.pos++
		p.skipWS()
		child := len(p.nodes)
		if !p.value() {
			return false
		}
		p.nodes[child].key = key
		n++
		p.skipWS()
		if p.pos >= len(p.src) {
			return p.fail("unexpected end of input in object")
		}
		switch p.src[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.nodes[idx].n = n
			p.depth--
			return true
		default:
			return p.fail("unexpected %s in object, expected ',' or '}'", p.describe())
		}
	}
}
