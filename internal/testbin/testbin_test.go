package testbin

import (
	"slices"
	"testing"
)

func TestSplitArgs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  bool
	}{
		{in: "", want: nil},
		{in: "  table  scan\tns.t\n", want: []string{"table", "scan", "ns.t"}},
		{in: `merge "MERGE INTO t USING 'f.jsonl' s"`, want: []string{"merge", "MERGE INTO t USING 'f.jsonl' s"}},
		{in: `--where 'data = "x"'`, want: []string{"--where", `data = "x"`}},
		{in: `--set ''`, want: []string{"--set", ""}},
		{in: "a \\\nb", want: []string{"a", "b"}},
		{in: `a"b c"d`, want: []string{"ab cd"}},
		{in: `"open`, err: true},
	} {
		got, err := SplitArgs(tc.in)
		if (err != nil) != tc.err {
			t.Fatalf("SplitArgs(%q): error %v, want error %v", tc.in, err, tc.err)
		}
		if !tc.err && !slices.Equal(got, tc.want) {
			t.Errorf("SplitArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
