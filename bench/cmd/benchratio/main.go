// Command benchratio summarises rounds of `go test -bench` output as
// Markdown: for each benchmark the median time per operation with its
// spread (min-max over rounds), its median CPU time and rates, and for
// each pair of variants the per-round ratios of wall time and of CPU time
// (median and spread), the wall-time ratio checked against a goal.
//
//	benchratio -pairs 'floe/iceberg-go:1.2,changelog/plain:2' round-1.txt round-2.txt ...
//
// Each file is one round; a pair's ratio is taken within a round (the two
// variants ran one after the other in one process), so machine load that
// changes between rounds cancels out. A pair "a/b:g" compares every
// benchmark whose last name element is a with its sibling ending in b;
// g is the largest acceptable time ratio a/b.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	pairs := flag.String("pairs", "", "comparisons: num/den:maxratio, comma-separated")
	flag.Parse()
	ps, err := parsePairs(*pairs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(2)
	}
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: benchratio [-pairs a/b:goal,...] ROUND_FILE...")
		os.Exit(2)
	}
	var rounds []Round
	for _, path := range flag.Args() {
		f, err := os.Open(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchratio:", err)
			os.Exit(1)
		}
		r, err := ParseRound(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchratio: %s: %v\n", path, err)
			os.Exit(1)
		}
		rounds = append(rounds, r)
	}
	if err := Report(os.Stdout, rounds, ps); err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(1)
	}
}
