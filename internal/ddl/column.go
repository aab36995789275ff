package ddl

import (
	"strings"

	"github.com/apache/iceberg-go"
)

// Column is one column as `floe table alter --add-column` and
// `--alter-type` take it, in the words of Spark's ALTER TABLE ... ADD
// COLUMN: "name type [not null] [comment 'text'] [first | after other]".
// A dotted name ("loc.alt") names a field of a struct column.
type Column struct {
	Path     []string
	Type     iceberg.Type
	Required bool
	Doc      string
	First    bool   // place it first among its siblings
	After    string // place it after this sibling ("" = last)
}

// Name is the column's dotted name.
func (c Column) Name() string { return strings.Join(c.Path, ".") }

// ParseColumn parses a column definition (see Column). Nested types get
// placeholder field IDs; the table assigns real ones.
func ParseColumn(src string) (Column, error) {
	l := &lexer{src: src}
	var c Column
	for {
		part, err := l.ident()
		if err != nil {
			return Column{}, err
		}
		c.Path = append(c.Path, part)
		if !l.accept('.') {
			break
		}
	}
	next := 1
	typ, err := parseType(l, &next)
	if err != nil {
		return Column{}, err
	}
	c.Type = typ
	for !l.eof() {
		switch {
		case l.keyword("not"):
			if !l.keyword("null") {
				return Column{}, l.errf("expected NULL after NOT")
			}
			c.Required = true
		case l.keyword("required"):
			c.Required = true
		case l.keyword("null"), l.keyword("optional"):
		case l.keyword("comment"):
			if c.Doc, err = quoted(l); err != nil {
				return Column{}, err
			}
		case l.keyword("first"):
			c.First = true
		case l.keyword("after"):
			if c.After, err = l.ident(); err != nil {
				return Column{}, err
			}
		default:
			return Column{}, l.errf("expected NOT NULL, COMMENT 'text', FIRST, AFTER column or the end, but found %q", l.src[l.pos:])
		}
	}
	if c.First && c.After != "" {
		return Column{}, l.errf("FIRST and AFTER exclude each other")
	}
	return c, nil
}

// ParseNamePair parses "old TO new" (as Spark's RENAME COLUMN old TO new)
// or "old=new".
func ParseNamePair(src string) (from, to string, err error) {
	if a, b, ok := strings.Cut(src, "="); ok {
		from, to = strings.TrimSpace(a), strings.TrimSpace(b)
	} else {
		l := &lexer{src: src}
		if from, err = l.ident(); err == nil {
			for l.accept('.') {
				var part string
				if part, err = l.ident(); err != nil {
					return "", "", err
				}
				from += "." + part
			}
			if !l.keyword("to") {
				return "", "", l.errf("expected TO (as in \"old TO new\", or write old=new)")
			}
			if to, err = l.ident(); err != nil {
				return "", "", err
			}
			if !l.eof() {
				return "", "", l.errf("unexpected %q", l.src[l.pos:])
			}
		}
		if err != nil {
			return "", "", err
		}
	}
	if from == "" || to == "" {
		return "", "", &Error{Input: src, Msg: `want "old TO new" or old=new`}
	}
	return from, to, nil
}
