//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/floedata/floe/internal/rowjson"
)

// FloeColumn is one column of a table as floe table describe prints it.
type FloeColumn struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"` // floe's type syntax: long, decimal(12,2), list<string>, ...
	Required bool   `json:"required"`
}

// FloeRef is one branch or tag of a described table.
type FloeRef struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	SnapshotID int64  `json:"snapshot_id"`
}

// FloeTable is what floe table describe --format json prints.
type FloeTable struct {
	Table           string            `json:"table"`
	Location        string            `json:"location"`
	FormatVersion   int               `json:"format_version"`
	Schema          []FloeColumn      `json:"schema"`
	Identifier      []string          `json:"identifier_fields"`
	Partition       []string          `json:"partition_spec"`
	Properties      map[string]string `json:"properties"`
	CurrentSnapshot *int64            `json:"current_snapshot_id"`
	Refs            []FloeRef         `json:"refs"`
}

// Describe runs floe table describe on table ("ns.t").
func (f *Floe) Describe(ctx context.Context, table string) (*FloeTable, error) {
	var d FloeTable
	if err := f.JSON(ctx, &d, "table", "describe", table); err != nil {
		return nil, err
	}
	return &d, nil
}

// TableRows runs a floe command that prints rows of table (table scan,
// changelog), with --format jsonl, and returns them in rowjson's conventions:
// FloeToRowJSON with the types of table's current schema.
func (f *Floe) TableRows(ctx context.Context, table string, args ...string) (*rowjson.Table, error) {
	d, err := f.Describe(ctx, table)
	if err != nil {
		return nil, err
	}
	rows, err := f.Rows(ctx, args...)
	if err != nil {
		return nil, err
	}
	types := map[string]string{}
	for _, c := range d.Schema {
		types[c.Name] = c.Type
	}
	if err := FloeToRowJSON(rows, types); err != nil {
		return nil, fmt.Errorf("floe %s: %w", strings.Join(args, " "), err)
	}
	return rows, nil
}

// FloeToRowJSON rewrites, in place, the values floe prints in JSON Lines into
// rowjson's conventions where the two differ, using each column's floe type
// (columns absent from types are left alone):
//
//   - timestamps and times: floe trims trailing fractional zeros
//     ("…:05.1234Z", "…:05Z"); rowjson prints every digit of the unit (6 for
//     microseconds, 9 for nanoseconds);
//   - float (32-bit): floe prints the shortest text that reads back as the
//     float32; rowjson prints the value widened to float64, as Arrow-based
//     engines do;
//   - maps: floe prints an object when keys are strings and an array of
//     {"key", "value"} objects otherwise; rowjson prints [key, value] pairs
//     sorted by key.
//
// Lists and structs are converted element by element. A value that does not
// have the form its type implies is an error naming the column and row.
func FloeToRowJSON(rows *rowjson.Table, types map[string]string) error {
	for j, c := range rows.Columns {
		typ, ok := types[c.Name]
		if !ok {
			continue
		}
		t, err := parseFloeType(typ)
		if err != nil {
			return fmt.Errorf("column %s: %w", c.Name, err)
		}
		for i, r := range rows.Rows {
			v, err := t.normalize(r[j])
			if err != nil {
				return fmt.Errorf("%w: row %d column %s (%s): %v", rowjson.ErrInvalidRows, i, c.Name, typ, err)
			}
			r[j] = v
		}
	}
	return nil
}

// floeType is a parsed floe type: a name and, for list, map and struct, the
// element types (struct fields carry their names).
type floeType struct {
	name   string // list, map, struct, or a primitive name such as timestamptz
	elems  []*floeType
	fields []string // struct field names, parallel to elems
}

// parseFloeType parses floe's type syntax (ddl.FormatType).
func parseFloeType(s string) (*floeType, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), " not null"))
	open := strings.IndexByte(s, '<')
	if open < 0 {
		return &floeType{name: strings.ToLower(s)}, nil
	}
	if !strings.HasSuffix(s, ">") {
		return nil, fmt.Errorf("type %q: unbalanced <>", s)
	}
	t := &floeType{name: strings.ToLower(strings.TrimSpace(s[:open]))}
	parts, err := splitTop(s[open+1 : len(s)-1])
	if err != nil {
		return nil, fmt.Errorf("type %q: %w", s, err)
	}
	for _, p := range parts {
		if t.name == "struct" {
			name, typ, ok := strings.Cut(p, ":")
			if !ok {
				return nil, fmt.Errorf("type %q: struct field %q has no type", s, p)
			}
			t.fields = append(t.fields, strings.TrimSpace(name))
			p = typ
		}
		e, err := parseFloeType(p)
		if err != nil {
			return nil, err
		}
		t.elems = append(t.elems, e)
	}
	switch {
	case t.name == "list" && len(t.elems) != 1, t.name == "map" && len(t.elems) != 2:
		return nil, fmt.Errorf("type %q: wrong number of element types", s)
	case t.name != "list" && t.name != "map" && t.name != "struct":
		return nil, fmt.Errorf("type %q: unknown nested type", s)
	}
	return t, nil
}

// splitTop splits s at the commas outside <> and ().
func splitTop(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced %q", c)
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced brackets")
	}
	return append(out, s[start:]), nil
}

var (
	timestampText = regexp.MustCompile(`^(-?\d{4,}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z?)$`)
	timeText      = regexp.MustCompile(`^(\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?$`)
)

// padFraction spells the fraction of a timestamp or time with digits digits.
func padFraction(v any, re *regexp.Regexp, digits int) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%v is not a string", v)
	}
	m := re.FindStringSubmatch(s)
	if m == nil || len(m[2]) > digits {
		return nil, fmt.Errorf("%q is not an ISO-8601 value with at most %d fractional digits", s, digits)
	}
	zone := ""
	if len(m) > 3 {
		zone = m[3]
	}
	return m[1] + "." + m[2] + strings.Repeat("0", digits-len(m[2])) + zone, nil
}

func (t *floeType) normalize(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch t.name {
	case "timestamp", "timestamp_ntz", "timestamptz":
		return padFraction(v, timestampText, 6)
	case "timestamp_ns", "timestamptz_ns":
		return padFraction(v, timestampText, 9)
	case "time":
		return padFraction(v, timeText, 6)
	case "float":
		n, ok := v.(json.Number)
		if !ok {
			return v, nil // "NaN", "Infinity", "-Infinity"
		}
		f, err := strconv.ParseFloat(string(n), 32)
		if err != nil {
			return nil, fmt.Errorf("%s is not a float: %v", n, err)
		}
		return rowjson.Number(float64(float32(f))), nil
	case "list":
		l, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("%v is not a list", v)
		}
		out := make([]any, len(l))
		for i, e := range l {
			var err error
			if out[i], err = t.elems[0].normalize(e); err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
		}
		return out, nil
	case "struct":
		m, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%v is not a struct", v)
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			out[k] = e
		}
		for i, name := range t.fields {
			if e, ok := m[name]; ok {
				n, err := t.elems[i].normalize(e)
				if err != nil {
					return nil, fmt.Errorf("field %s: %w", name, err)
				}
				out[name] = n
			}
		}
		return out, nil
	case "map":
		var pairs []any
		add := func(k, val any) error {
			nk, err := t.elems[0].normalize(k)
			if err != nil {
				return fmt.Errorf("key: %w", err)
			}
			nv, err := t.elems[1].normalize(val)
			if err != nil {
				return fmt.Errorf("value of %v: %w", k, err)
			}
			pairs = append(pairs, []any{nk, nv})
			return nil
		}
		switch m := v.(type) {
		case map[string]any:
			for k, val := range m {
				if err := add(k, val); err != nil {
					return nil, err
				}
			}
		case []any:
			for _, e := range m {
				kv, ok := e.(map[string]any)
				if !ok || len(kv) != 2 {
					return nil, fmt.Errorf("map entry %v is not {\"key\", \"value\"}", e)
				}
				k, okK := kv["key"]
				val, okV := kv["value"]
				if !okK || !okV {
					return nil, fmt.Errorf("map entry %v is not {\"key\", \"value\"}", e)
				}
				if err := add(k, val); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("%v is not a map", v)
		}
		if pairs == nil {
			pairs = []any{}
		}
		rowjson.SortMapEntries(pairs)
		return pairs, nil
	}
	return v, nil
}
