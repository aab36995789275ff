package main

import (
	"errors"
	"math"
	"strings"
	"testing"
)

const round1 = `goos: linux
BenchmarkScan/dv/floe-2         	       3	 400000000 ns/op	 300000000 cpu-ns/op	   4950000 rows/s	 1000 B/op	 10 allocs/op
BenchmarkScan/dv/iceberg-go-2   	       3	 500000000 ns/op	 200000000 cpu-ns/op	   3960000 rows/s
some log line BenchmarkScan/dv/floe
BenchmarkChangelog/cow/changelog-2	1	2000000000 ns/op	5.000 changes/op	2000000 rows/s
BenchmarkChangelog/cow/plain-2  	1	 800000000 ns/op	5000000 rows/s
PASS
`

const round2 = `BenchmarkScan/dv/floe-2         	       3	 600000000 ns/op
BenchmarkScan/dv/iceberg-go-2   	       3	 500000000 ns/op
BenchmarkChangelog/cow/changelog-2	1	1000000000 ns/op
`

const round3 = `BenchmarkScan/dv/floe-2         	       3	 500000000 ns/op
BenchmarkScan/dv/iceberg-go-2   	       3	 500000000 ns/op
BenchmarkChangelog/cow/plain-2  	1	 500000000 ns/op
`

func parse(t *testing.T, s string) Round {
	t.Helper()
	r, err := ParseRound(strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRound(t *testing.T) {
	r := parse(t, round1)
	if len(r) != 4 {
		t.Fatalf("parsed %d benchmarks, want 4: %v", len(r), r)
	}
	m := r["BenchmarkScan/dv/floe"]
	if m["ns/op"] != 4e8 || m["rows/s"] != 4.95e6 || m["B/op"] != 1000 || m["allocs/op"] != 10 {
		t.Errorf("metrics of BenchmarkScan/dv/floe: %v", m)
	}
	if got := r["BenchmarkChangelog/cow/changelog"]["changes/op"]; got != 5 {
		t.Errorf("changes/op = %v, want 5", got)
	}
	for _, bad := range []string{
		"BenchmarkX-2 3 12x ns/op\n",
		"BenchmarkX-2 3 12 ns/op 7\n",
		"BenchmarkX-2 3 12 rows/s\n",
	} {
		if _, err := ParseRound(strings.NewReader(bad)); !errors.Is(err, ErrFormat) {
			t.Errorf("%q: err = %v, want ErrFormat", bad, err)
		}
	}
}

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Stats
	}{
		{nil, Stats{}},
		{[]float64{3}, Stats{3, 3, 3, 1}},
		{[]float64{5, 1, 3}, Stats{3, 1, 5, 3}},
		{[]float64{4, 1, 2, 10}, Stats{3, 1, 10, 4}},
	} {
		if got := Summarize(tc.in); got != tc.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRatios(t *testing.T) {
	rounds := []Round{parse(t, round1), parse(t, round2), parse(t, round3)}
	pairs, err := parsePairs("floe/iceberg-go:1.2, changelog/plain:2")
	if err != nil {
		t.Fatal(err)
	}
	rs := Ratios(rounds, pairs)
	if len(rs) != 2 {
		t.Fatalf("%d ratios, want 2: %+v", len(rs), rs)
	}
	// Per round: 0.8, 1.2, 1.0.
	dv := rs[0]
	if dv.CPU.N != 1 || dv.CPU.Median != 1.5 {
		t.Errorf("dv CPU ratio: %+v, want 1.5 from round 1", dv.CPU)
	}
	if dv.Group != "BenchmarkScan/dv" || dv.Stats.N != 3 || math.Abs(dv.Stats.Median-1.0) > 1e-9 ||
		math.Abs(dv.Stats.Min-0.8) > 1e-9 || math.Abs(dv.Stats.Max-1.2) > 1e-9 || !dv.Met() {
		t.Errorf("dv ratio: %+v", dv)
	}
	// Only round 1 has both variants: 2.5, over the goal of 2.
	cow := rs[1]
	if cow.Stats.N != 1 || cow.Stats.Median != 2.5 || cow.Met() {
		t.Errorf("cow ratio: %+v (met %t)", cow, cow.Met())
	}
	var b strings.Builder
	if err := Report(&b, rounds, pairs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| BenchmarkScan/dv/floe | 3 | 500 ms | 400 ms-600 ms | 300 ms | | 4.95M | 1 KiB |",
		"| BenchmarkScan/dv: floe / iceberg-go | 3 | 1.00 | 0.80-1.20 | 1.00 | 1.50 | 1.50-1.50 | <= 1.20 | yes |",
		"| BenchmarkChangelog/cow: changelog / plain | 1 | 2.50 | 2.50-2.50 | 0.40 | - | - | <= 2.00 | no |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParsePairs(t *testing.T) {
	for _, bad := range []string{"floe", "floe/", "a/b:x", "a/b:-1"} {
		if _, err := parsePairs(bad); err == nil {
			t.Errorf("parsePairs(%q) succeeded", bad)
		}
	}
	ps, err := parsePairs("a/b,c/d:2")
	if err != nil || len(ps) != 2 || ps[0] != (Pair{"a", "b", 0}) || ps[1] != (Pair{"c", "d", 2}) {
		t.Errorf("parsePairs: %+v, %v", ps, err)
	}
}
