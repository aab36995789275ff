package catalog

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apache/iceberg-go/table"
)

// MaxNamePartLength is the longest part of a table or namespace name, in
// bytes (the width of the name columns of Iceberg's JDBC catalog and of
// AWS Glue).
const MaxNamePartLength = 255

// CheckIdent checks the parts of a table or namespace name: valid UTF-8,
// no control characters, at most MaxNamePartLength bytes each. A bad part
// is an error wrapping ErrBadName that quotes it shortened.
func CheckIdent(parts []string) error {
	for _, p := range parts {
		switch {
		case !utf8.ValidString(p):
			i := 0
			for i < len(p) {
				r, n := utf8.DecodeRuneInString(p[i:])
				if r == utf8.RuneError && n <= 1 {
					break
				}
				i += n
			}
			return fmt.Errorf("%w: %s: not valid UTF-8 (byte 0x%02x at offset %d)", ErrBadName, shortName(p), p[i], i)
		case len(p) > MaxNamePartLength:
			return fmt.Errorf("%w: %s: longer than %d bytes (%d bytes)", ErrBadName, shortName(p), MaxNamePartLength, len(p))
		}
		for i, r := range p {
			if r < 0x20 || r == 0x7f {
				return fmt.Errorf("%w: %s: control character %U at offset %d", ErrBadName, shortName(p), r, i)
			}
		}
	}
	return nil
}

// shortName quotes a name part for messages: whole when short, else its
// first 32 bytes (cut at a rune boundary).
func shortName(p string) string {
	const width = 32
	if len(p) <= width {
		return fmt.Sprintf("%q", p)
	}
	end := width
	for end > 0 && !utf8.RuneStart(p[end]) {
		end--
	}
	return fmt.Sprintf("%q…", p[:end])
}

// ParseName splits a dotted name such as "ns.tbl", "a.b.tbl" or
// "`my.ns`.tbl" into its parts. Backquotes protect dots inside a part; a
// doubled backquote inside backquotes stands for one backquote.
func ParseName(s string) ([]string, error) {
	var (
		parts  []string
		cur    strings.Builder
		inQ    bool
		quoted bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQ && c == '`':
			if i+1 < len(s) && s[i+1] == '`' {
				cur.WriteByte('`')
				i++
				continue
			}
			inQ = false
		case inQ:
			cur.WriteByte(c)
		case c == '`':
			if cur.Len() > 0 {
				return nil, fmt.Errorf("%w: %q: backquote inside a name part", ErrBadName, s)
			}
			inQ, quoted = true, true
		case c == '.':
			if cur.Len() == 0 && !quoted {
				return nil, fmt.Errorf("%w: %q: empty name part", ErrBadName, s)
			}
			parts = append(parts, cur.String())
			cur.Reset()
			quoted = false
		default:
			if quoted {
				return nil, fmt.Errorf("%w: %q: text after a closing backquote", ErrBadName, s)
			}
			cur.WriteByte(c)
		}
	}
	if inQ {
		return nil, fmt.Errorf("%w: %q: unterminated backquote", ErrBadName, s)
	}
	if cur.Len() == 0 && !quoted {
		return nil, fmt.Errorf("%w: %q: empty name part", ErrBadName, s)
	}
	parts = append(parts, cur.String())
	if err := CheckIdent(parts); err != nil {
		return nil, err
	}
	return parts, nil
}

// ParseTableName parses "ns.tbl" (nested namespaces allowed) into an
// iceberg-go identifier. A name without a namespace is an error.
func ParseTableName(s string) (table.Identifier, error) {
	parts, err := ParseName(s)
	if err != nil {
		return nil, err
	}
	if len(parts) < 2 {
		return nil, fmt.Errorf("%w: %q: a table name needs a namespace, as in ns.%s", ErrBadName, s, s)
	}
	return parts, nil
}

// ParseNamespace parses "ns" or "a.b" into an identifier.
func ParseNamespace(s string) (table.Identifier, error) {
	return ParseName(s)
}

// FormatName joins name parts with dots, quoting parts that need it.
func FormatName(parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		if p == "" || strings.ContainsAny(p, ".` ") {
			p = "`" + strings.ReplaceAll(p, "`", "``") + "`"
		}
		out[i] = p
	}
	return strings.Join(out, ".")
}

// MissingNamespace says that the namespace of table ident does not exist
// and how to create it: "namespace shop (table shop.t); create it with
// `floe namespace create shop`". A long namespace is named once (what is
// the table's name, the last part only).
func MissingNamespace(ident table.Identifier, what string) string {
	ns := FormatName(ident[:len(ident)-1])
	if len(ns) <= 64 {
		return fmt.Sprintf("namespace %s (%s %s); create it with `floe namespace create %s`", ns, what, FormatName(ident), ns)
	}
	return fmt.Sprintf("namespace %s (%s %s in it); create it first with `floe namespace create`", ns, what, FormatName(ident[len(ident)-1:]))
}
