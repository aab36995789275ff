package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Round is one run of a benchmark binary: benchmark name (without the
// -GOMAXPROCS suffix) to its metrics by unit ("ns/op", "rows/s", ...).
type Round map[string]map[string]float64

var procSuffix = regexp.MustCompile(`-\d+$`)

// ParseRound reads `go test -bench` output. Lines that are not results
// (headers, PASS, log output) are skipped. A benchmark that appears twice
// keeps its last result.
func ParseRound(r io.Reader) (Round, error) {
	out := Round{}
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue // a log line that starts with a benchmark name
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("%w: line %d: %q: values and units do not pair up", ErrFormat, line, sc.Text())
		}
		name := procSuffix.ReplaceAllString(f[0], "")
		m := map[string]float64{}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: value %q of %s: %v", ErrFormat, line, f[i], f[i+1], err)
			}
			m[f[i+1]] = v
		}
		if _, ok := m["ns/op"]; !ok {
			return nil, fmt.Errorf("%w: line %d: %q has no ns/op", ErrFormat, line, sc.Text())
		}
		out[name] = m
	}
	return out, sc.Err()
}

// Pair compares variant Num with variant Den of each benchmark; Goal is
// the largest acceptable time ratio Num/Den (0: none).
type Pair struct {
	Num, Den string
	Goal     float64
}

// parsePairs reads "a/b:goal,c/d".
func parsePairs(s string) ([]Pair, error) {
	var out []Pair
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		nd, goal, hasGoal := strings.Cut(p, ":")
		num, den, ok := strings.Cut(nd, "/")
		if !ok || num == "" || den == "" {
			return nil, fmt.Errorf("pair %q: want num/den[:maxratio]", p)
		}
		pr := Pair{Num: num, Den: den}
		if hasGoal {
			g, err := strconv.ParseFloat(goal, 64)
			if err != nil || g <= 0 {
				return nil, fmt.Errorf("pair %q: goal %q is not a positive number", p, goal)
			}
			pr.Goal = g
		}
		out = append(out, pr)
	}
	return out, nil
}

// Stats are the median, minimum and maximum of a sample.
type Stats struct {
	Median, Min, Max float64
	N                int
}

// Summarize returns the stats of xs (zero for an empty sample). The
// median of an even sample is the mean of the middle two.
func Summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stats{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Ratio is a pair's per-round ratios for one benchmark: of wall time
// (ns/op) and, where the benchmarks report it, of CPU time (cpu-ns/op).
type Ratio struct {
	Group string // benchmark name without the variant
	Pair  Pair
	Stats Stats // wall time
	CPU   Stats // CPU time; N = 0 when not reported
}

// Met reports whether the median ratio meets the goal.
func (r Ratio) Met() bool { return r.Pair.Goal == 0 || r.Stats.Median <= r.Pair.Goal }

// Ratios computes, for each pair and each benchmark group holding both of
// its variants, the time ratio num/den within each round where both ran.
func Ratios(rounds []Round, pairs []Pair) []Ratio {
	var out []Ratio
	for _, p := range pairs {
		groups := map[string]bool{}
		var order []string
		for _, r := range rounds {
			for name := range r {
				if g, ok := strings.CutSuffix(name, "/"+p.Num); ok && !groups[g] {
					groups[g] = true
					order = append(order, g)
				}
			}
		}
		slices.Sort(order)
		for _, g := range order {
			var xs, cs []float64
			for _, r := range rounds {
				a, okA := r[g+"/"+p.Num]
				b, okB := r[g+"/"+p.Den]
				if !okA || !okB {
					continue
				}
				if b["ns/op"] > 0 {
					xs = append(xs, a["ns/op"]/b["ns/op"])
				}
				if b["cpu-ns/op"] > 0 && a["cpu-ns/op"] > 0 {
					cs = append(cs, a["cpu-ns/op"]/b["cpu-ns/op"])
				}
			}
			if len(xs) > 0 {
				out = append(out, Ratio{Group: g, Pair: p, Stats: Summarize(xs), CPU: Summarize(cs)})
			}
		}
	}
	return out
}

// Report writes the Markdown summary of rounds: one table of benchmarks
// and one of ratios.
func Report(w io.Writer, rounds []Round, pairs []Pair) error {
	names := map[string]bool{}
	var order []string
	units := map[string]bool{}
	for _, r := range rounds {
		for name, m := range r {
			if !names[name] {
				names[name] = true
				order = append(order, name)
			}
			for u := range m {
				if u != "ns/op" && u != "B/op" && u != "allocs/op" && u != "cpu-ns/op" {
					units[u] = true
				}
			}
		}
	}
	if len(order) == 0 {
		return errors.New("no benchmark results in the input")
	}
	slices.Sort(order)
	extra := make([]string, 0, len(units))
	for u := range units {
		extra = append(extra, u)
	}
	slices.Sort(extra)
	b := &strings.Builder{}
	fmt.Fprintf(b, "| benchmark | rounds | median time/op | spread (min-max) | median CPU/op |")
	for _, u := range extra {
		fmt.Fprintf(b, " median %s |", u)
	}
	fmt.Fprintf(b, " median B/op |\n|---|---|---|---|---|")
	for range extra {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, name := range order {
		var ns, bop, cpu []float64
		vals := map[string][]float64{}
		for _, r := range rounds {
			m, ok := r[name]
			if !ok {
				continue
			}
			ns = append(ns, m["ns/op"])
			if v, ok := m["cpu-ns/op"]; ok {
				cpu = append(cpu, v)
			}
			if v, ok := m["B/op"]; ok {
				bop = append(bop, v)
			}
			for _, u := range extra {
				if v, ok := m[u]; ok {
					vals[u] = append(vals[u], v)
				}
			}
		}
		s := Summarize(ns)
		fmt.Fprintf(b, "| %s | %d | %s | %s-%s |", name, s.N, dur(s.Median), dur(s.Min), dur(s.Max))
		if len(cpu) > 0 {
			fmt.Fprintf(b, " %s |", dur(Summarize(cpu).Median))
		} else {
			b.WriteString(" |")
		}
		for _, u := range extra {
			if len(vals[u]) == 0 {
				b.WriteString(" |")
				continue
			}
			fmt.Fprintf(b, " %s |", num(Summarize(vals[u]).Median))
		}
		if len(bop) > 0 {
			fmt.Fprintf(b, " %s |\n", bytes(Summarize(bop).Median))
		} else {
			b.WriteString(" |\n")
		}
	}
	if rs := Ratios(rounds, pairs); len(rs) > 0 {
		b.WriteString("\n| comparison | rounds | median time ratio | spread (min-max) | rate ratio (1/median) | median CPU-time ratio | CPU spread | goal (time ratio) | met |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range rs {
			goal, met := "-", "-"
			if r.Pair.Goal > 0 {
				goal = fmt.Sprintf("<= %.2f", r.Pair.Goal)
				met = "no"
				if r.Met() {
					met = "yes"
				}
			}
			cpu, cpuSpread := "-", "-"
			if r.CPU.N > 0 {
				cpu = fmt.Sprintf("%.2f", r.CPU.Median)
				cpuSpread = fmt.Sprintf("%.2f-%.2f", r.CPU.Min, r.CPU.Max)
			}
			fmt.Fprintf(b, "| %s: %s / %s | %d | %.2f | %.2f-%.2f | %.2f | %s | %s | %s | %s |\n",
				r.Group, r.Pair.Num, r.Pair.Den, r.Stats.N, r.Stats.Median, r.Stats.Min, r.Stats.Max, 1/r.Stats.Median, cpu, cpuSpread, goal, met)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func dur(ns float64) string {
	switch {
	case ns >= 1e9:
		return fmt.Sprintf("%.2f s", ns/1e9)
	case ns >= 1e6:
		return fmt.Sprintf("%.0f ms", ns/1e6)
	default:
		return fmt.Sprintf("%.0f µs", ns/1e3)
	}
}

func num(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}

func bytes(v float64) string {
	switch {
	case v >= 1<<30:
		return fmt.Sprintf("%.2f GiB", v/(1<<30))
	case v >= 1<<20:
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	default:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	}
}
