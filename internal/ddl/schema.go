package ddl

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// ParseSchema parses a comma-separated column list such as
//
//	id long not null, data string, price decimal(10,2), ts timestamptz,
//	tags list<string>, attrs map<string, int>, loc struct<lat: double, lon: double>
//
// into an Iceberg schema with fresh field IDs, assigned the way Iceberg
// assigns them when a table is created. identifier names the identifier
// columns (top-level, required, primitive); each must exist.
//
// Types: boolean, int/integer, long/bigint, float, double, decimal(p,s),
// date, time, timestamp and timestamptz (an instant, with zone, as Spark
// SQL's timestamp), timestamp_ntz (no zone), timestamp_ns (no zone),
// timestamptz_ns,
// string, uuid, binary, fixed(n) / fixed[n], list<T>, map<K,V>,
// struct<name: T, ...>. A column is optional unless followed by
// "not null" (or "required").
func ParseSchema(src string, identifier []string) (*iceberg.Schema, error) {
	if err := checkLength(src); err != nil {
		return nil, err
	}
	l := &lexer{src: src}
	var fields []iceberg.NestedField
	seen := map[string]bool{}
	next := 1
	for {
		if l.eof() {
			return nil, l.errf("expected a column definition")
		}
		f, err := parseField(l, &next, false)
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(f.Name)
		if seen[key] {
			return nil, fmt.Errorf("%w: column %q is defined twice in %q", ErrSyntax, f.Name, src)
		}
		seen[key] = true
		fields = append(fields, f)
		if l.accept(',') {
			continue
		}
		if !l.eof() {
			return nil, l.errf("expected ',' or end of column list but found %q", l.src[l.pos:])
		}
		break
	}
	sc := iceberg.NewSchema(0, fields...)
	fresh, err := reassign(sc)
	if err != nil {
		return nil, err
	}
	if len(identifier) == 0 {
		return fresh, nil
	}
	ids := make([]int, 0, len(identifier))
	for _, name := range identifier {
		f, ok := fresh.FindFieldByName(name)
		if !ok {
			return nil, fmt.Errorf("identifier column %q is not a column of the schema (columns: %s)", name, columnNames(fresh))
		}
		if _, top := topLevel(fresh, f.ID); !top {
			return nil, fmt.Errorf("identifier column %q must be a top-level column", name)
		}
		if !f.Required {
			return nil, fmt.Errorf("identifier column %q must be declared not null", name)
		}
		if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
			return nil, fmt.Errorf("identifier column %q must have a primitive type, not %s", name, f.Type)
		}
		switch f.Type.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			return nil, fmt.Errorf("identifier column %q cannot be a floating-point column", name)
		}
		ids = append(ids, f.ID)
	}
	return iceberg.NewSchemaWithIdentifiers(fresh.ID, ids, fresh.Fields()...), nil
}

func topLevel(sc *iceberg.Schema, id int) (iceberg.NestedField, bool) {
	for _, f := range sc.Fields() {
		if f.ID == id {
			return f, true
		}
	}
	return iceberg.NestedField{}, false
}

func columnNames(sc *iceberg.Schema) string {
	names := make([]string, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

func reassign(sc *iceberg.Schema) (*iceberg.Schema, error) {
	n := 0
	return iceberg.AssignFreshSchemaIDs(sc, func() int { n++; return n })
}

// parseField parses "name type [not null]" (or "name: type" inside struct<>).
func parseField(l *lexer, next *int, inStruct bool) (iceberg.NestedField, error) {
	name, err := l.ident()
	if err != nil {
		return iceberg.NestedField{}, err
	}
	if inStruct {
		l.accept(':')
	}
	typ, err := parseType(l, next)
	if err != nil {
		return iceberg.NestedField{}, err
	}
	f := iceberg.NestedField{ID: *next, Name: name, Type: typ}
	*next++
	for {
		switch {
		case l.keyword("not"):
			if !l.keyword("null") {
				return iceberg.NestedField{}, l.errf("expected NULL after NOT")
			}
			f.Required = true
			continue
		case l.keyword("required"):
			f.Required = true
			continue
		case l.keyword("null"), l.keyword("optional"):
			continue
		case l.keyword("comment"):
			doc, err := quoted(l)
			if err != nil {
				return iceberg.NestedField{}, err
			}
			f.Doc = doc
			continue
		}
		break
	}
	return f, nil
}

func quoted(l *lexer) (string, error) {
	l.skipSpace()
	if l.pos >= len(l.src) || l.src[l.pos] != '\'' {
		return "", l.errf("expected a quoted string")
	}
	l.pos++
	var b strings.Builder
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		l.pos++
		if c == '\'' {
			if l.pos < len(l.src) && l.src[l.pos] == '\'' {
				b.WriteByte('\'')
				l.pos++
				continue
			}
			return b.String(), nil
		}
		b.WriteByte(c)
	}
	return "", l.errf("unterminated string")
}

// ParseType parses a single type name such as "decimal(10,2)" or
// "map<string, list<int>>". Nested field IDs are placeholders.
func ParseType(src string) (iceberg.Type, error) {
	if err := checkLength(src); err != nil {
		return nil, err
	}
	l := &lexer{src: src}
	next := 1
	t, err := parseType(l, &next)
	if err != nil {
		return nil, err
	}
	if !l.eof() {
		return nil, l.errf("unexpected %q after the type", l.src[l.pos:])
	}
	return t, nil
}

func parseType(l *lexer, next *int) (iceberg.Type, error) {
	l.skipSpace()
	typePos := l.pos
	word, err := l.ident()
	if err != nil {
		return nil, err
	}
	switch strings.ToLower(word) {
	case "boolean", "bool":
		return iceberg.PrimitiveTypes.Bool, nil
	case "int", "integer", "int32":
		return iceberg.PrimitiveTypes.Int32, nil
	case "long", "bigint", "int64":
		return iceberg.PrimitiveTypes.Int64, nil
	case "float", "real", "float32":
		return iceberg.PrimitiveTypes.Float32, nil
	case "double", "float64":
		return iceberg.PrimitiveTypes.Float64, nil
	case "date":
		return iceberg.PrimitiveTypes.Date, nil
	case "time":
		return iceberg.PrimitiveTypes.Time, nil
	case "timestamp_ntz", "timestamp_without_time_zone":
		return iceberg.PrimitiveTypes.Timestamp, nil
	case "timestamp", "timestamptz", "timestamp_ltz":
		// NB: as in Spark SQL, timestamp is an instant (with zone);
		// timestamp_ntz is the wall-clock time without a zone.
		return iceberg.PrimitiveTypes.TimestampTz, nil
	case "timestamp_ns", "timestamp_ntz_ns":
		return iceberg.PrimitiveTypes.TimestampNs, nil
	case "timestamptz_ns":
		return iceberg.PrimitiveTypes.TimestampTzNs, nil
	case "string", "varchar", "text":
		return iceberg.PrimitiveTypes.String, nil
	case "uuid":
		return iceberg.PrimitiveTypes.UUID, nil
	case "binary", "bytes":
		return iceberg.PrimitiveTypes.Binary, nil
	case "fixed":
		open, close := byte('('), byte(')')
		if l.peekByte() == '[' {
			open, close = '[', ']'
		}
		if err := l.expect(open); err != nil {
			return nil, err
		}
		n, err := l.number()
		if err != nil {
			return nil, err
		}
		if err := l.expect(close); err != nil {
			return nil, err
		}
		return iceberg.FixedTypeOf(n), nil
	case "decimal", "numeric":
		if err := l.expect('('); err != nil {
			return nil, err
		}
		p, err := l.number()
		if err != nil {
			return nil, err
		}
		s := 0
		if l.accept(',') {
			if s, err = l.number(); err != nil {
				return nil, err
			}
		}
		if err := l.expect(')'); err != nil {
			return nil, err
		}
		if p < 1 || p > 38 || s < 0 || s > p {
			l.pos = typePos
			return nil, l.errf("decimal(%d,%d): precision must be 1..38 and scale 0..precision", p, s)
		}
		return iceberg.DecimalTypeOf(p, s), nil
	case "list", "array":
		if err := l.expect('<'); err != nil {
			return nil, err
		}
		if err := l.nest(); err != nil {
			return nil, err
		}
		defer func() { l.depth-- }()
		id := *next
		*next++
		elem, err := parseType(l, next)
		if err != nil {
			return nil, err
		}
		required := false
		if l.keyword("not") {
			if !l.keyword("null") {
				return nil, l.errf("expected NULL after NOT")
			}
			required = true
		}
		if err := l.expect('>'); err != nil {
			return nil, err
		}
		return &iceberg.ListType{ElementID: id, Element: elem, ElementRequired: required}, nil
	case "map":
		if err := l.expect('<'); err != nil {
			return nil, err
		}
		if err := l.nest(); err != nil {
			return nil, err
		}
		defer func() { l.depth-- }()
		kid, vid := *next, *next+1
		*next += 2
		k, err := parseType(l, next)
		if err != nil {
			return nil, err
		}
		if err := l.expect(','); err != nil {
			return nil, err
		}
		v, err := parseType(l, next)
		if err != nil {
			return nil, err
		}
		required := false
		if l.keyword("not") {
			if !l.keyword("null") {
				return nil, l.errf("expected NULL after NOT")
			}
			required = true
		}
		if err := l.expect('>'); err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyID: kid, KeyType: k, ValueID: vid, ValueType: v, ValueRequired: required}, nil
	case "struct":
		if err := l.expect('<'); err != nil {
			return nil, err
		}
		if err := l.nest(); err != nil {
			return nil, err
		}
		defer func() { l.depth-- }()
		var fields []iceberg.NestedField
		for {
			f, err := parseField(l, next, true)
			if err != nil {
				return nil, err
			}
			fields = append(fields, f)
			if l.accept(',') {
				continue
			}
			break
		}
		if err := l.expect('>'); err != nil {
			return nil, err
		}
		return &iceberg.StructType{FieldList: fields}, nil
	}
	l.pos = typePos
	return nil, l.errf("unknown type %q (want boolean, int, long, float, double, decimal(p,s), date, time, timestamp, timestamp_ntz, timestamp_ns, timestamptz_ns, string, uuid, binary, fixed(n), list<T>, map<K,V> or struct<...>)", word)
}

// FormatType renders an Iceberg type in the syntax ParseType accepts.
func FormatType(t iceberg.Type) string {
	switch t := t.(type) {
	case *iceberg.ListType:
		s := "list<" + FormatType(t.Element)
		if t.ElementRequired {
			s += " not null"
		}
		return s + ">"
	case *iceberg.MapType:
		s := "map<" + FormatType(t.KeyType) + ", " + FormatType(t.ValueType)
		if t.ValueRequired {
			s += " not null"
		}
		return s + ">"
	case *iceberg.StructType:
		parts := make([]string, len(t.FieldList))
		for i, f := range t.FieldList {
			parts[i] = f.Name + ": " + FormatType(f.Type)
			if f.Required {
				parts[i] += " not null"
			}
		}
		return "struct<" + strings.Join(parts, ", ") + ">"
	case iceberg.FixedType:
		return fmt.Sprintf("fixed(%d)", t.Len())
	case iceberg.DecimalType:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision(), t.Scale())
	case iceberg.TimestampType:
		return "timestamp_ntz" // "timestamp" reads as timestamptz
	}
	return t.String()
}
