package rowjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// DecodeLines parses JSON Lines, one object per row (what floe prints with
// --format jsonl), into a Table whose columns are the first object's keys in
// the order they appear. Numbers stay exact (json.Number); blank lines are
// skipped. Every object must have exactly the first object's keys (in any
// order) and no key twice; otherwise the error wraps ErrInvalidRows and names
// the line (1-based). Input without rows gives a Table with no columns and no
// rows.
func DecodeLines(data []byte) (*Table, error) {
	t := &Table{Rows: [][]any{}}
	var index map[string]int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		keys, vals, err := decodeObject(text)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrInvalidRows, line, err)
		}
		if index == nil {
			index = make(map[string]int, len(keys))
			for i, k := range keys {
				index[k] = i
				t.Columns = append(t.Columns, Column{Name: k})
			}
		}
		if len(keys) != len(index) {
			return nil, fmt.Errorf("%w: line %d has keys %s, line 1 of the rows has %s", ErrInvalidRows, line,
				strings.Join(keys, ", "), strings.Join(t.Names(), ", "))
		}
		row := make([]any, len(keys))
		for i, k := range keys {
			j, ok := index[k]
			if !ok {
				return nil, fmt.Errorf("%w: line %d: key %q is not a column (columns: %s)", ErrInvalidRows, line, k, strings.Join(t.Names(), ", "))
			}
			row[j] = vals[i]
		}
		t.Rows = append(t.Rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: line %d: %v", ErrInvalidRows, line+1, err)
	}
	return t, nil
}

// decodeObject decodes one JSON object keeping its keys' order; a repeated
// key is an error.
func decodeObject(text []byte) ([]string, []any, error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, fmt.Errorf("want a JSON object, found %v", tok)
	}
	var keys []string
	var vals []any
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := tok.(string) // object keys are always strings
		if slices.Contains(keys, k) {
			return nil, nil, fmt.Errorf("key %q appears twice", k)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, fmt.Errorf("value of %q: %v", k, err)
		}
		keys = append(keys, k)
		vals = append(vals, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, fmt.Errorf("text after the object")
	}
	return keys, vals, nil
}
