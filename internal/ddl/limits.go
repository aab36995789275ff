package ddl

import "fmt"

// Limits on the input of the parsers of this package. Input past one is an
// *Error (wrapping ErrSyntax) that names the limit.
const (
	// MaxInputLength is the longest column or partition list, in bytes.
	MaxInputLength = 1 << 20
	// MaxTypeDepth is how deeply list<>, map<> and struct<> types may nest.
	MaxTypeDepth = 100
)

func checkLength(src string) error {
	if len(src) > MaxInputLength {
		return &Error{Input: src, Pos: MaxInputLength, Msg: fmt.Sprintf("longer than %d bytes (%d bytes)", MaxInputLength, len(src))}
	}
	return nil
}

// nest opens a level of nested types; the caller closes it with l.depth--.
func (l *lexer) nest() error {
	l.depth++
	if l.depth > MaxTypeDepth {
		return l.errf("types nested more than %d levels deep", MaxTypeDepth)
	}
	return nil
}

// shown is the input as error messages quote it: whole when short, else
// the part around pos.
func shown(src string, pos int) string {
	const width = 120
	if len(src) <= width {
		return fmt.Sprintf("%q", src)
	}
	start := max(0, min(pos, len(src))-width/2)
	end := min(len(src), start+width)
	s := fmt.Sprintf("%q", src[start:end])
	if start > 0 {
		s = "…" + s
	}
	if end < len(src) {
		s += "…"
	}
	return s
}
