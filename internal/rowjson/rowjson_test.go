package rowjson

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"null", nil, "null"},
		{"bool", true, "true"},
		{"int", json.Number("42"), "42"},
		{"int64 max stays exact", json.Number("9223372036854775807"), "9223372036854775807"},
		{"negative int", json.Number("-7"), "-7"},
		{"float with integral value equals the int", json.Number("1.0"), "1"},
		{"float", json.Number("0.1"), "0.1"},
		{"float exponent spelling", json.Number("1E-7"), "1e-07"},
		{"float32 widened", json.Number("0.10000000149011612"), "0.10000000149011612"},
		{"big float", json.Number("1e20"), "1e+20"},
		{"negative zero keeps its sign", json.Number("-0.0"), "-0"},
		{"string without html escaping", "<a&b>", `"<a&b>"`},
		{"unicode string", "héllo \U0001F600", `"héllo ` + "\U0001F600" + `"`},
		{"control characters", "a\nb\t\"", `"a\nb\t\""`},
		{"list", []any{json.Number("1"), nil, "x"}, `[1,null,"x"]`},
		{"struct keys sorted", map[string]any{"b": json.Number("2"), "a": json.Number("1")}, `{"a":1,"b":2}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Canonical(tc.in); got != tc.want {
				t.Errorf("Canonical(%#v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestCanonicalPanicsOutsideModel(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Canonical(int) did not panic")
		}
	}()
	Canonical(3)
}

func TestDecodeAndDiff(t *testing.T) {
	want, err := Decode([]byte(`{"columns":[{"name":"id","type":"int64"},{"name":"v","type":"string"}],
		"rows":[[1,"a"],[2,"b"],[2,"b"]]}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		got      string
		wantDiff []string // substrings; empty means equal
	}{
		{"same rows other order and number spelling", `{"columns":[{"name":"id","type":"long"},{"name":"v","type":"string"}],
			"rows":[[2,"b"],[1.0,"a"],[2,"b"]]}`, nil},
		{"duplicate missing", `{"columns":[{"name":"id"},{"name":"v"}],"rows":[[1,"a"],[2,"b"]]}`,
			[]string{"want 3, got 2", `- [2,"b"]`}},
		{"unexpected row", `{"columns":[{"name":"id"},{"name":"v"}],"rows":[[1,"a"],[2,"b"],[2,"b"],[3,null]]}`,
			[]string{"1 unexpected", `+ [3,null]`}},
		{"column names differ", `{"columns":[{"name":"id"},{"name":"w"}],"rows":[[1,"a"],[2,"b"],[2,"b"]]}`,
			[]string{"columns differ", "want id, v", "got  id, w"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.got))
			if err != nil {
				t.Fatal(err)
			}
			d := Diff(want, got)
			if len(tc.wantDiff) == 0 {
				if d != "" {
					t.Fatalf("Diff reported a difference for equal tables:\n%s", d)
				}
				return
			}
			for _, s := range tc.wantDiff {
				if !strings.Contains(d, s) {
					t.Errorf("Diff does not mention %q:\n%s", s, d)
				}
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not json", `{"columns":`, "invalid rows"},
		{"ragged row", `{"columns":[{"name":"a"}],"rows":[[1],[1,2]]}`, "row 1 has 2 values for 1 columns"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.in))
			if !errors.Is(err, ErrInvalidRows) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode(%s) error = %v, want ErrInvalidRows mentioning %q", tc.in, err, tc.want)
			}
		})
	}
}

func TestDiffCapsLongLists(t *testing.T) {
	want := &Table{Columns: []Column{{Name: "i"}}}
	got := &Table{Columns: []Column{{Name: "i"}}}
	for i := 0; i < 30; i++ {
		want.Rows = append(want.Rows, []any{Int(int64(i))})
	}
	d := Diff(want, got)
	if !strings.Contains(d, "... and 10 more") || strings.Count(d, "\n- [") != 20 {
		t.Fatalf("Diff did not cap the list at 20 rows:\n%s", d)
	}
}

func TestSelect(t *testing.T) {
	tbl := &Table{
		Columns: []Column{{Name: "a"}, {Name: "b"}, {Name: "c"}},
		Rows:    [][]any{{Int(1), "x", true}, {Int(2), "y", false}},
	}
	got, err := tbl.Select("c", "a")
	if err != nil {
		t.Fatal(err)
	}
	if want := `[true,1]|[false,2]`; Canonical(got.Rows[0])+"|"+Canonical(got.Rows[1]) != want {
		t.Errorf("Select rows = %v, want %s", got.Rows, want)
	}
	if _, err := tbl.Select("a", "zz"); !errors.Is(err, ErrNoSuchColumn) || !strings.Contains(err.Error(), "a, b, c") {
		t.Errorf("Select of a missing column: err = %v, want ErrNoSuchColumn listing the columns", err)
	}
}

func TestSortMapEntries(t *testing.T) {
	entries := []any{
		[]any{"b", Int(1)},
		[]any{json.Number("10"), Int(2)},
		[]any{"a", Int(3)},
		[]any{json.Number("9.5"), Int(4)},
		[]any{false, Int(5)},
		[]any{"é", Int(6)},
	}
	SortMapEntries(entries)
	var keys []string
	for _, e := range entries {
		keys = append(keys, Canonical(e.([]any)[0]))
	}
	if got, want := strings.Join(keys, " "), `false 9.5 10 "a" "b" "é"`; got != want {
		t.Errorf("sorted keys = %s, want %s", got, want)
	}
}

func TestNumber(t *testing.T) {
	tests := []struct {
		in   float64
		want any
	}{
		{1.5, json.Number("1.5")},
		{zero() / zero(), "NaN"},
		{1 / zero(), "Infinity"},
		{-1 / zero(), "-Infinity"},
	}
	for _, tc := range tests {
		if got := Number(tc.in); got != tc.want {
			t.Errorf("Number(%v) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func zero() float64 { return 0 }

func TestDecodeLines(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		cols    []string
		rows    []string // canonical rows, sorted
		wantErr string
	}{
		{"empty input", "", nil, []string{}, ""},
		{"blank lines only", "\n  \n", nil, []string{}, ""},
		{"key order of the first line", `{"b":1,"a":"x"}` + "\n" + `{"a":"y","b":2}` + "\n",
			[]string{"b", "a"}, []string{`[1,"x"]`, `[2,"y"]`}, ""},
		{"exact numbers and nested values", `{"id":9223372036854775807,"d":"1.50","l":[1,null],"s":{"x":true}}`,
			[]string{"id", "d", "l", "s"}, []string{`[9223372036854775807,"1.50",[1,null],{"x":true}]`}, ""},
		{"missing key", `{"a":1,"b":2}` + "\n" + `{"a":1}`, nil, nil, "line 2 has keys a"},
		{"extra key", `{"a":1}` + "\n" + `{"c":1}`, nil, nil, `line 2: key "c" is not a column`},
		{"duplicate key", `{"a":1,"a":2}`, nil, nil, `line 1: key "a" appears twice`},
		{"not an object", `[1,2]`, nil, nil, "line 1: want a JSON object"},
		{"trailing text", `{"a":1} {"a":2}`, nil, nil, "line 1: text after the object"},
		{"bad json names its line", "{\"a\":1}\n\n{\"a\":}", nil, nil, "line 3:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeLines([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalidRows) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want ErrInvalidRows containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got.Names(), ",") != strings.Join(tc.cols, ",") {
				t.Errorf("columns = %v, want %v", got.Names(), tc.cols)
			}
			if c := got.Canonical(); strings.Join(c, "\n") != strings.Join(tc.rows, "\n") {
				t.Errorf("rows = %v, want %v", c, tc.rows)
			}
		})
	}
}
