package catalog

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"
)

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
	return append(parts, cur.String()), nil
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
