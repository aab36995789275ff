//go:build interop

package interop

import (
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/rowjson"
)

func TestFloeToRowJSON(t *testing.T) {
	tests := []struct {
		name, typ, in, want string
		wantErr             string
	}{
		{"timestamptz trimmed", "timestamptz", `"2024-01-02T03:04:05.1234Z"`, `"2024-01-02T03:04:05.123400Z"`, ""},
		{"timestamptz whole second", "timestamptz", `"1969-12-31T23:59:59Z"`, `"1969-12-31T23:59:59.000000Z"`, ""},
		{"timestamp without zone", "timestamp not null", `"2024-01-02T03:04:05.5"`, `"2024-01-02T03:04:05.500000"`, ""},
		{"timestamp already full", "timestamp", `"2024-01-02T03:04:05.123456"`, `"2024-01-02T03:04:05.123456"`, ""},
		{"timestamp_ntz as describe prints it", "timestamp_ntz", `"2024-01-02T03:04:05.5"`, `"2024-01-02T03:04:05.500000"`, ""},
		{"nanoseconds", "timestamptz_ns", `"2024-01-02T03:04:05.1Z"`, `"2024-01-02T03:04:05.100000000Z"`, ""},
		{"time", "time", `"03:04:05"`, `"03:04:05.000000"`, ""},
		{"null stays null", "timestamptz", `null`, `null`, ""},
		{"float widened", "float", `0.1`, `0.10000000149011612`, ""},
		{"float special", "float", `"NaN"`, `"NaN"`, ""},
		{"double untouched", "double", `0.1`, `0.1`, ""},
		{"decimal untouched", "decimal(10,2)", `"1.50"`, `"1.50"`, ""},
		{"string map as object", "map<string, int>", `{"b":2,"a":1}`, `[["a",1],["b",2]]`, ""},
		{"map with other keys", "map<int, timestamp>", `[{"key":2,"value":"2024-01-01T00:00:00"},{"key":1,"value":null}]`,
			`[[1,null],[2,"2024-01-01T00:00:00.000000"]]`, ""},
		{"empty map", "map<string, string>", `{}`, `[]`, ""},
		{"list of timestamps", "list<timestamptz not null>", `["2024-01-01T00:00:00Z",null]`, `["2024-01-01T00:00:00.000000Z",null]`, ""},
		{"struct fields", "struct<at: timestamptz, m: map<string, float>, n: long not null>", `{"at":"2024-01-01T00:00:00.1Z","m":{"x":0.5},"n":3}`,
			`{"at":"2024-01-01T00:00:00.100000Z","m":[["x",0.5]],"n":3}`, ""},
		{"bad timestamp", "timestamptz", `"yesterday"`, "", "not an ISO-8601 value"},
		{"too many digits", "timestamptz", `"2024-01-01T00:00:00.1234567Z"`, "", "at most 6 fractional digits"},
		{"not a list", "list<int>", `3`, "", "is not a list"},
		{"bad map entry", "map<int, int>", `[{"k":1}]`, "", "is not {\"key\", \"value\"}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := rowjson.DecodeLines([]byte(`{"c":` + tc.in + `,"other":"2024-01-01T00:00:00Z"}`))
			if err != nil {
				t.Fatal(err)
			}
			err = FloeToRowJSON(rows, map[string]string{"c": tc.typ})
			if tc.wantErr != "" {
				if err == nil || !errors.Is(err, rowjson.ErrInvalidRows) || !strings.Contains(err.Error(), tc.wantErr) ||
					!strings.Contains(err.Error(), "row 0 column c") {
					t.Fatalf("error = %v, want ErrInvalidRows naming row 0 column c and %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := rowjson.DecodeLines([]byte(`{"c":` + tc.want + `,"other":"2024-01-01T00:00:00Z"}`))
			if err != nil {
				t.Fatal(err)
			}
			if d := rowjson.Diff(want, rows); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestParseFloeTypeErrors(t *testing.T) {
	for _, s := range []string{"list<int", "map<int>", "list<int, int>", "array<int>", "struct<a int>", "map<int, list<int>"} {
		if _, err := parseFloeType(s); err == nil {
			t.Errorf("parseFloeType(%q) succeeded, want an error", s)
		}
	}
}
