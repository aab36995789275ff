// Package rowjson holds floe's JSON form of table rows, shared by every engine in
// the interoperability suite: rows that floe (or iceberg-go) reads, rows that
// Spark, PyIceberg and delta-rs read, all in one value model, compared as
// multisets.
//
// Conventions (each engine adapter must produce exactly these):
//
//   - NULL is JSON null; booleans are JSON booleans.
//   - Integers are JSON numbers, exact for all of int64.
//   - Floating-point values are JSON numbers; NaN and the infinities are the
//     strings "NaN", "Infinity" and "-Infinity".
//   - Decimals are strings in plain notation that keep their scale ("1.50").
//   - Timestamps are ISO-8601 strings: "2024-01-02T03:04:05.123456Z" for types
//     with a zone (always shown in UTC), the same without "Z" for zone-less
//     types. Microsecond units print 6 fraction digits, nanoseconds 9,
//     milliseconds 3, seconds none. Years outside 0000..9999 have a sign
//     (ISO 8601 expanded years, as java.time prints them): "+10000-01-01",
//     "-0001-12-31" (year 0 is 1 BC).
//   - Dates are "2024-01-02"; times of day are "03:04:05.123456".
//   - Binary and fixed-size binary values are standard base64 with padding.
//   - UUIDs are canonical lower-case strings.
//   - Lists are arrays, structs are objects keyed by field name, maps are
//     arrays of [key, value] pairs sorted by key (numbers numerically, strings
//     by code point, then everything else by its canonical text).
//
// Comparison is on canonical text: numbers that parse as the same float64 (or
// the same integer) compare equal whatever their spelling, so 1.0 from Python
// equals 1 from Go; object keys are sorted. Column types are reported by each
// engine in its own words and are not compared.
package rowjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Column names one column of a Table and the type the producing engine gave it
// (informational: engines spell types differently).
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Table is a set of rows in floe's JSON conventions. Row order carries no
// meaning for comparisons. Values are nil, bool, json.Number, string, []any
// (lists and map entries) or map[string]any (structs).
type Table struct {
	Columns []Column `json:"columns"`
	Rows    [][]any  `json:"rows"`
}

// Decode parses a Table from JSON ({"columns": [...], "rows": [[...], ...]}),
// keeping every number exact (json.Number). A row whose width differs from
// the column count is an error naming the row.
func Decode(data []byte) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRows, err)
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

func (t *Table) validate() error {
	for i, r := range t.Rows {
		if len(r) != len(t.Columns) {
			return fmt.Errorf("%w: row %d has %d values for %d columns", ErrInvalidRows, i, len(r), len(t.Columns))
		}
	}
	return nil
}

// Names returns the column names in order.
func (t *Table) Names() []string {
	out := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		out[i] = c.Name
	}
	return out
}

// Select returns a table with only the named columns, in the order given. A
// name the table lacks is an error (ErrNoSuchColumn) that lists what it has.
func (t *Table) Select(names ...string) (*Table, error) {
	idx := make([]int, len(names))
	for i, n := range names {
		j := slices.IndexFunc(t.Columns, func(c Column) bool { return c.Name == n })
		if j < 0 {
			return nil, fmt.Errorf("%w: %q (columns: %s)", ErrNoSuchColumn, n, strings.Join(t.Names(), ", "))
		}
		idx[i] = j
	}
	out := &Table{Columns: make([]Column, len(names)), Rows: make([][]any, len(t.Rows))}
	for i, j := range idx {
		out.Columns[i] = t.Columns[j]
	}
	for r, row := range t.Rows {
		nr := make([]any, len(idx))
		for i, j := range idx {
			nr[i] = row[j]
		}
		out.Rows[r] = nr
	}
	return out, nil
}

// Canonical returns each row's canonical text, sorted. Two tables hold the same
// multiset of rows exactly when their Canonical slices are equal.
func (t *Table) Canonical() []string {
	out := make([]string, len(t.Rows))
	for i, r := range t.Rows {
		out[i] = Canonical(r)
	}
	sort.Strings(out)
	return out
}

// Diff compares want and got as multisets of rows and returns "" when they are
// equal. Otherwise it returns a readable report: differing column names, then
// rows missing from got ("- ") and unexpected rows in got ("+ "), each list
// capped at 20 lines with a count of the rest.
func Diff(want, got *Table) string {
	var b strings.Builder
	if wn, gn := want.Names(), got.Names(); !slices.Equal(wn, gn) {
		fmt.Fprintf(&b, "columns differ:\n  want %s\n  got  %s\n", strings.Join(wn, ", "), strings.Join(gn, ", "))
	}
	w, g := want.Canonical(), got.Canonical()
	var missing, extra []string
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case j >= len(g) || (i < len(w) && w[i] < g[j]):
			missing = append(missing, w[i])
			i++
		case i >= len(w) || g[j] < w[i]:
			extra = append(extra, g[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) == 0 && len(extra) == 0 && b.Len() == 0 {
		return ""
	}
	fmt.Fprintf(&b, "rows: want %d, got %d; %d missing, %d unexpected\n", len(w), len(g), len(missing), len(extra))
	list := func(prefix string, rows []string) {
		for k, r := range rows {
			if k == 20 {
				fmt.Fprintf(&b, "%s... and %d more\n", prefix, len(rows)-k)
				return
			}
			b.WriteString(prefix + r + "\n")
		}
	}
	list("- ", missing)
	list("+ ", extra)
	return b.String()
}

// Canonical returns the canonical text of one value (a row is a []any value).
// It panics on a Go type outside the value model, which is a bug in the
// producer, not bad data.
func Canonical(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(canonicalNumber(string(x)))
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeCanonical(b, x[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("rowjson: value of Go type %T is outside the value model", v))
	}
}

// writeString writes s as a JSON string without HTML escaping, so the text is
// the same whichever engine produced s.
func writeString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

// canonicalNumber spells a JSON number so that equal values are equal text:
// integers in plain decimal (exact, any size), everything else as the
// shortest float64 text.
func canonicalNumber(s string) string {
	if !strings.ContainsAny(s, ".eE") {
		if n, ok := new(big.Int).SetString(s, 10); ok {
			return n.String()
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 && !(f == 0 && math.Signbit(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Number returns the json.Number spelling of f under these conventions, or the
// string "NaN", "Infinity" or "-Infinity".
func Number(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// Int returns the json.Number of an integer.
func Int(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// SortMapEntries sorts [key, value] pairs by key: numbers numerically before
// strings, strings by code point, then anything else by canonical text.
func SortMapEntries(entries []any) {
	sort.SliceStable(entries, func(i, j int) bool {
		return keyLess(entryKey(entries[i]), entryKey(entries[j]))
	})
}

func entryKey(e any) any {
	if p, ok := e.([]any); ok && len(p) == 2 {
		return p[0]
	}
	return e
}

func keyRank(k any) int {
	switch k.(type) {
	case bool:
		return 0
	case json.Number:
		return 1
	case string:
		return 2
	default:
		return 3
	}
}

func keyLess(a, b any) bool {
	ra, rb := keyRank(a), keyRank(b)
	if ra != rb {
		return ra < rb
	}
	switch x := a.(type) {
	case bool:
		return !x && b.(bool)
	case json.Number:
		fa, _ := new(big.Float).SetString(string(x))
		fb, _ := new(big.Float).SetString(string(b.(json.Number)))
		if fa != nil && fb != nil {
			return fa.Cmp(fb) < 0
		}
		return string(x) < string(b.(json.Number))
	case string:
		return x < b.(string)
	}
	return Canonical(a) < Canonical(b)
}
