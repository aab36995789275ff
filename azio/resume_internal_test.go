package azio

import "testing"

func TestParseRange(t *testing.T) {
	for _, tc := range []struct {
		in         string
		start, end int64
		ok         bool
	}{
		{in: "", start: 0, end: -1, ok: true},
		{in: "bytes=0-", start: 0, end: -1, ok: true},
		{in: "bytes=100-", start: 100, end: -1, ok: true},
		{in: "bytes=50000-149999", start: 50000, end: 149999, ok: true},
		{in: "bytes=-500"},    // a suffix range: the SDK does not write one
		{in: "bytes=10-5"},    // end before start
		{in: "items=0-10"},    // not bytes
		{in: "bytes=0-1,5-6"}, // several ranges
		{in: "bytes=x-"},
	} {
		start, end, ok := parseRange(tc.in)
		if ok != tc.ok || ok && (start != tc.start || end != tc.end) {
			t.Errorf("parseRange(%q) = %d, %d, %v; want %d, %d, %v", tc.in, start, end, ok, tc.start, tc.end, tc.ok)
		}
	}
}
