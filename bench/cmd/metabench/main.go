// Command metabench measures what floe's fixed costs and the size of a
// table's metadata cost a small change: `floe version`, and `floe apply`
// of 10 changes touching one data file of generated tables with 100 to
// 100,000 files, 5 to 500 manifests and 10 to 5,000 snapshots (see
// bench.MetaLayout), each run as its own floe process, end to end, like a
// user's. Rounds are interleaved (every table once per round, the order
// rotated), every table is reset to its generated state before each run,
// and every run's result is checked row by row against rows computed from
// the generator, outside the timed section.
//
//	metabench -phase build -warehouse DIR
//	metabench -phase run -warehouse DIR -floe ./floe -rounds 5
package main

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/cli"
	"github.com/floedata/floe/internal/scan"

	_ "modernc.org/sqlite"
)

// layouts are the generated tables, by label. The label's first part
// names the series the table belongs to.
var layouts = []struct {
	label string
	l     bench.MetaLayout
}{
	{"base: 100 files, 10 manifests, 10 snapshots", bench.MetaLayout{Partitions: 100, FilesPerPartition: 1, RowsPerFile: 10, Snapshots: 10, Manifests: 10}},
	{"10M rows: 100 files of 100,000 rows, 10 manifests, 10 snapshots", bench.MetaLayout{Partitions: 10, FilesPerPartition: 10, RowsPerFile: 100_000, Snapshots: 10, Manifests: 10}},
	{"goal: 100,000 files, 500 manifests, 5,000 snapshots", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 100, RowsPerFile: 10, Snapshots: 5000, Manifests: 500}},
	{"files: 100 (100 snapshots, 50 manifests)", bench.MetaLayout{Partitions: 100, FilesPerPartition: 1, RowsPerFile: 10, Snapshots: 100, Manifests: 50}},
	{"files: 10,000 (100 snapshots, 50 manifests)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 100, Manifests: 50}},
	{"files: 100,000 (100 snapshots, 50 manifests)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 100, RowsPerFile: 10, Snapshots: 100, Manifests: 50}},
	{"manifests: 5 (10,000 files, 500 snapshots)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 500, Manifests: 5}},
	{"manifests: 50 (10,000 files, 500 snapshots)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 500, Manifests: 50}},
	{"manifests: 500 (10,000 files, 500 snapshots)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 500, Manifests: 500}},
	{"snapshots: 50 (10,000 files, 50 manifests)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 50, Manifests: 50}},
	{"snapshots: 500 (10,000 files, 50 manifests)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 500, Manifests: 50}},
	{"snapshots: 5,000 (10,000 files, 50 manifests)", bench.MetaLayout{Partitions: 1000, FilesPerPartition: 10, RowsPerFile: 10, Snapshots: 5000, Manifests: 50}},
}

// pipelined are the tables that also get a pipeline job: a sync transform
// keeping a merge-on-read copy (destination <table>_copy), whose
// incremental build after the apply is timed as `floe run --once`.
var pipelined = []string{"base:", "10M rows", "goal:"}

func isPipelined(label string) bool {
	return slices.ContainsFunc(pipelined, func(p string) bool { return strings.HasPrefix(label, p) })
}

// pipelineFile writes the pipeline of table name into the warehouse.
func pipelineFile(warehouse, name string) (string, error) {
	path := filepath.Join(warehouse, name+".pipeline.yaml")
	y := fmt.Sprintf(`transforms:
  - name: copy
    type: sync
    source: %[1]s.%[2]s
    destination: %[1]s.%[2]s_copy
    key: [part, id]
    partition_by: part
    properties: {write.delete.mode: merge-on-read, write.update.mode: merge-on-read, write.merge.mode: merge-on-read}
`, bench.Namespace, name)
	return path, os.WriteFile(path, []byte(y), 0o644)
}

// props make the generated tables merge-on-read, the mode whose commits
// add only delete files: the cost measured is finding and committing the
// change, not rewriting files.
var props = iceberg.Properties{
	"write.delete.mode": "merge-on-read",
	"write.update.mode": "merge-on-read",
	"write.merge.mode":  "merge-on-read",
}

func main() {
	warehouse := flag.String("warehouse", "", "warehouse folder of the embedded catalog (required)")
	phase := flag.String("phase", "", "build or run")
	floeBin := flag.String("floe", "", "floe binary (run); several, comma-separated, run back to back in each round and compared with the first")
	rounds := flag.Int("rounds", 3, "interleaved rounds (run)")
	only := flag.String("only", "", "run only the tables whose label contains one of these comma-separated strings")
	cpuProfile := flag.String("cpuprofile", "", "profile: write the CPU profile of the in-process runs here")
	flag.Parse()
	if *warehouse == "" || (*phase != "build" && *phase != "run" && *phase != "profile") || (*phase == "run" && *floeBin == "") {
		fmt.Fprintln(os.Stderr, "usage: metabench -warehouse DIR -phase build|run|profile [-floe BIN -rounds N -only STR,... -cpuprofile FILE]")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch *phase {
	case "build":
		err = build(ctx, *warehouse)
	case "run":
		err = run(ctx, *warehouse, *floeBin, *rounds, *only, "")
	case "profile":
		err = run(ctx, *warehouse, "", *rounds, *only, *cpuProfile)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "metabench %s: %v\n", *phase, err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+format+"\n", args...) }

func build(ctx context.Context, warehouse string) error {
	env, err := bench.Open(ctx, warehouse)
	if err != nil {
		return err
	}
	defer env.Close()
	done := map[string]bool{}
	for _, x := range layouts {
		name := x.l.Name()
		if done[name] {
			continue
		}
		done[name] = true
		if _, err := env.Load(name); err == nil {
			logf("%s exists", name)
			continue
		}
		t0 := time.Now()
		if _, err := env.GenerateMeta(name, x.l, props, logf); err != nil {
			return err
		}
		logf("built %s in %.1f s", name, time.Since(t0).Seconds())
	}
	for _, x := range layouts {
		name := x.l.Name()
		if !isPipelined(x.label) {
			continue
		}
		if _, err := env.Load(name + "_copy"); err == nil {
			logf("%s_copy exists", name)
			continue
		}
		p, err := pipelineFile(warehouse, name)
		if err != nil {
			return err
		}
		t0 := time.Now()
		var stderr bytes.Buffer
		if code := cli.Run(ctx, []string{"--warehouse", warehouse, "--quiet", "run", p, "--once"}, strings.NewReader(""), io.Discard, &stderr); code != 0 {
			return fmt.Errorf("first build of %s_copy: %s", name, stderr.String())
		}
		logf("built %s_copy (a full build of the pipeline) in %.1f s", name, time.Since(t0).Seconds())
	}
	return nil
}

// sample is one timed process.
type sample struct {
	wall, cpu time.Duration
	rssKB     int64
}

// run times the commands as floe processes, or, when floeBin is "", runs
// them in this process (cli.Run) with a CPU profile of those runs written
// to cpuProfile: where the time of one command goes, without the process
// start.
func run(ctx context.Context, warehouse, floeBin string, rounds int, only, cpuProfile string) error {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(warehouse, catalog.DBFile)+"?_pragma=busy_timeout(30000)")
	if err != nil {
		return err
	}
	defer db.Close()
	type job struct {
		label string
		l     bench.MetaLayout
		// metadata location as generated, restored before every run
		meta    string
		changes string
		want    []row
		// pipeline: the copy's generated metadata location and the file
		pipeline, copyMeta string
	}
	var jobs []*job
	for _, x := range layouts {
		if only != "" && !slices.ContainsFunc(strings.Split(only, ","), func(s string) bool { return strings.Contains(x.label, s) }) {
			continue
		}
		j := &job{label: x.label, l: x.l}
		if err := db.QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?`,
			bench.Namespace, x.l.Name()).Scan(&j.meta); err != nil {
			return fmt.Errorf("table %s (build it first): %w", x.l.Name(), err)
		}
		j.changes = filepath.Join(warehouse, x.l.Name()+".changes.jsonl")
		want, err := writeChanges(j.changes, x.l)
		if err != nil {
			return err
		}
		j.want = want
		jobs = append(jobs, j)
		if isPipelined(x.label) && floeBin != "" {
			p := &job{label: "pipeline build, " + x.label, l: x.l, meta: j.meta, changes: j.changes, want: want}
			if p.pipeline, err = pipelineFile(warehouse, x.l.Name()); err != nil {
				return err
			}
			if err := db.QueryRowContext(ctx, `SELECT metadata_location FROM iceberg_tables WHERE table_namespace = ? AND table_name = ?`,
				bench.Namespace, x.l.Name()+"_copy").Scan(&p.copyMeta); err != nil {
				return fmt.Errorf("table %s_copy (build it first): %w", x.l.Name(), err)
			}
			jobs = append(jobs, p)
		}
	}
	reset := func(j *job) error {
		_, err := db.ExecContext(ctx, `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = NULL WHERE table_namespace = ? AND table_name = ?`,
			j.meta, bench.Namespace, j.l.Name())
		if err == nil && j.pipeline != "" {
			_, err = db.ExecContext(ctx, `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = NULL WHERE table_namespace = ? AND table_name = ?`,
				j.copyMeta, bench.Namespace, j.l.Name()+"_copy")
		}
		return err
	}
	timed := timedProcess
	if floeBin == "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
		timed = timedInProcess
	}
	bins := strings.Split(floeBin, ",")
	if floeBin != "" {
		for _, b := range bins {
			if err := coldStart(b); err != nil {
				return err
			}
		}
	}
	samples := map[string]map[string][]sample{} // by binary, then job
	for _, b := range bins {
		samples[b] = map[string][]sample{}
	}
	for r := range rounds {
		order := slices.Clone(jobs)
		k := r % len(order)
		order = append(order[k:], order[:k]...)
		border := slices.Clone(bins)
		if r%2 == 1 {
			slices.Reverse(order)
			slices.Reverse(border)
		}
		for _, bin := range border {
			s, err := timed(bin, "version")
			if err != nil {
				return err
			}
			samples[bin]["version"] = append(samples[bin]["version"], s)
		}
		for _, j := range order {
			for _, bin := range border {
				if err := reset(j); err != nil {
					return err
				}
				apply := []string{"--warehouse", warehouse, "--format", "json", "apply", bench.Namespace + "." + j.l.Name(),
					"--changes", j.changes, "--key", "part,id"}
				check := func() error { return checkTable(ctx, warehouse, j.l.Name(), j.l, j.want, true) }
				if j.pipeline != "" {
					// The source gets the changes (not timed); the build
					// carries them to the copy.
					if _, err := timed(bin, apply...); err != nil {
						return fmt.Errorf("%s: %w", j.label, err)
					}
					apply = []string{"--warehouse", warehouse, "--quiet", "run", j.pipeline, "--once"}
					check = func() error { return checkTable(ctx, warehouse, j.l.Name()+"_copy", j.l, j.want, false) }
				}
				s, err := timed(bin, apply...)
				if err != nil {
					return fmt.Errorf("%s: %w", j.label, err)
				}
				if err := check(); err != nil {
					return fmt.Errorf("%s: round %d: %w", j.label, r, err)
				}
				samples[bin][j.label] = append(samples[bin][j.label], s)
				logf("round %d %s %-55s wall %6.1f ms  cpu %6.1f ms  rss %4d MiB", r, filepath.Base(bin), j.label, ms(s.wall), ms(s.cpu), s.rssKB>>10)
			}
		}
		for _, j := range jobs {
			if err := reset(j); err != nil {
				return err
			}
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load average at the end: %s\n", strings.Join(strings.Fields(string(load))[:3], " "))
	ratios := func(a, b []sample) (wall, cpu float64) {
		var rw, rc []float64
		if len(a) == len(b) {
			for i := range a {
				rw = append(rw, float64(a[i].wall)/float64(b[i].wall))
				rc = append(rc, float64(a[i].cpu)/float64(b[i].cpu))
			}
		}
		return median(rw), median(rc)
	}
	for bi, bin := range bins {
		fmt.Printf("\n%s\n\n", bin)
		fmt.Printf("| command | rounds | wall median (min-max) | CPU median | peak RSS | wall / base | CPU / base |")
		if bi > 0 {
			fmt.Printf(" wall / %[1]s | CPU / %[1]s |", filepath.Base(bins[0]))
		}
		fmt.Printf("\n|---|---|---|---|---|---|---|%s\n", strings.Repeat("---|", 2*min(bi, 1)))
		base := samples[bin][layouts[0].label]
		labels := []string{"version"}
		for _, j := range jobs {
			labels = append(labels, j.label)
		}
		for _, label := range labels {
			s := samples[bin][label]
			if len(s) == 0 {
				continue
			}
			m := summarize(s)
			what := "apply, " + label
			switch {
			case label == "version":
				what = "floe version"
			case strings.HasPrefix(label, "pipeline"):
				what = label
			}
			rw, rc := ratios(s, base)
			fmt.Printf("| %s | %d | %.1f ms (%.1f-%.1f) | %.1f ms | %d MiB | %.2f | %.2f |", what, len(s), ms(m.wall), ms(m.minWall), ms(m.maxWall), ms(m.cpu), m.rssKB>>10, rw, rc)
			if bi > 0 {
				bw, bc := ratios(s, samples[bins[0]][label])
				fmt.Printf(" %.2f | %.2f |", bw, bc)
			}
			fmt.Println()
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

type summary struct {
	wall, minWall, maxWall, cpu time.Duration
	rssKB                       int64
}

func summarize(s []sample) summary {
	var w, c []float64
	var rss []int64
	for _, x := range s {
		w = append(w, float64(x.wall))
		c = append(c, float64(x.cpu))
		rss = append(rss, x.rssKB)
	}
	slices.Sort(rss)
	out := summary{wall: time.Duration(median(w)), cpu: time.Duration(median(c)), minWall: time.Duration(slices.Min(w)), maxWall: time.Duration(slices.Max(w))}
	out.rssKB = rss[len(rss)/2]
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// coldStart drops a binary's pages from the page cache (dd iflag=nocache)
// and runs it once, so that every binary compared starts with its pages
// read in by page faults. NB: a binary the linker has just written sits
// in the page cache in other units than one read back by faults, and its
// peak RSS (file pages mapped around each fault) came out 30 MB higher
// for the same code.
func coldStart(bin string) error {
	if out, err := exec.Command("dd", "if="+bin, "iflag=nocache", "count=0", "status=none").CombinedOutput(); err != nil {
		return fmt.Errorf("dd iflag=nocache %s: %w: %s", bin, err, out)
	}
	_, err := timedProcess(bin, "version")
	return err
}

// timedInProcess runs floe's command line in this process; the CPU time
// is this process's over the run.
func timedInProcess(_ string, args ...string) (sample, error) {
	var stderr, stdout bytes.Buffer
	cpu0 := cpuTime()
	t0 := time.Now()
	code := cli.Run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	s := sample{wall: time.Since(t0), cpu: cpuTime() - cpu0}
	if code != 0 {
		return sample{}, fmt.Errorf("floe %s: exit %d: %s", strings.Join(args, " "), code, stderr.String())
	}
	return s, checkOutput(args, stdout.Bytes())
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timedProcess runs floe under GNU time (/usr/bin/time) and returns its
// wall time, its CPU time and its peak RSS. NB: the peak RSS the kernel
// reports for a child of this process includes this process's memory at
// the fork (Go forks with CLONE_VM), so it comes from time, which waits
// for floe itself. The CPU time is user+system of time and floe together
// (time's is well under a millisecond), from the kernel's accounting in
// microseconds; time prints only hundredths.
func timedProcess(bin string, args ...string) (sample, error) {
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", "@@metabench %e %U %S %M", bin}, args...)...)
	var stderr, stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		return sample{}, fmt.Errorf("%s %s: %w: %s", bin, strings.Join(args, " "), err, stderr.String())
	}
	_, line, ok := strings.Cut(stderr.String(), "@@metabench ")
	var e, u, sy float64
	var rss int64
	if !ok {
		return sample{}, fmt.Errorf("/usr/bin/time printed no figures: %s", stderr.String())
	}
	if _, err := fmt.Sscanf(line, "%f %f %f %d", &e, &u, &sy, &rss); err != nil {
		return sample{}, fmt.Errorf("/usr/bin/time printed %q: %w", line, err)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	s := sample{wall: wall, cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), rssKB: rss}
	return s, checkOutput(args, stdout.Bytes())
}

// checkOutput checks what floe apply printed.
func checkOutput(args []string, stdout []byte) error {
	if !slices.Contains(args, "apply") {
		return nil
	}
	var out struct {
		Upserts, Deletes int64
		Committed        bool
	}
	if err := json.Unmarshal(stdout, &out); err != nil || !out.Committed || out.Upserts != 7 || out.Deletes != 3 {
		return fmt.Errorf("floe apply printed %q (%v): want 7 upserts and 3 deletes, committed", stdout, err)
	}
	return nil
}

// row is a row of a generated table.
type row struct {
	id   int64
	name string
	x    float64
}

// target is the partition and file the changes touch.
func target(l bench.MetaLayout) (part, g int) {
	part = l.Partitions / 2
	return part, part*l.FilesPerPartition + l.FilesPerPartition/2
}

// writeChanges writes 10 changes to one data file of the layout's table
// (4 updates, 3 deletes) and 3 inserts of new keys into the same
// partition, and returns the rows the partition must hold afterwards,
// computed from the generator.
func writeChanges(path string, l bench.MetaLayout) ([]row, error) {
	if l.RowsPerFile < 7 {
		return nil, fmt.Errorf("layout %s: want at least 7 rows per file", l.Name())
	}
	part, g := target(l)
	first := int64(g) * int64(l.RowsPerFile)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	upd := map[int64]row{}
	del := map[int64]bool{}
	for i := range int64(4) {
		id := first + i
		upd[id] = row{id: id, name: fmt.Sprintf("updated-%d", id), x: -float64(id)}
	}
	for i := range int64(3) {
		del[first+4+i] = true
	}
	for i := range int64(3) {
		id := l.Rows() + i
		upd[id] = row{id: id, name: fmt.Sprintf("inserted-%d", id), x: float64(i)}
	}
	ids := make([]int64, 0, len(upd)+len(del))
	for id := range upd {
		ids = append(ids, id)
	}
	for id := range del {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if del[id] {
			enc.Encode(map[string]any{"_change_type": "DELETE", "part": part, "id": id})
			continue
		}
		r := upd[id]
		ct := "UPDATE_AFTER"
		if id >= l.Rows() {
			ct = "INSERT"
		}
		enc.Encode(map[string]any{"_change_type": ct, "part": part, "id": id, "name": r.name, "x": r.x})
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	// The expectation: the generated rows of the partition, changed.
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "part", Type: arrow.PrimitiveTypes.Int64},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	var want []row
	for f := range l.FilesPerPartition {
		rec, err := l.MetaRows(schema, part*l.FilesPerPartition+f)
		if err != nil {
			return nil, err
		}
		want = append(want, rowsOf(rec)...)
		rec.Release()
	}
	out := want[:0]
	for _, r := range want {
		if del[r.id] {
			continue
		}
		if u, ok := upd[r.id]; ok {
			r = u
			delete(upd, r.id)
		}
		out = append(out, r)
	}
	for _, u := range upd {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	return out, nil
}

func rowsOf(rec arrow.RecordBatch) []row {
	idx := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
	ids := rec.Column(idx("id")).(*array.Int64)
	names := rec.Column(idx("name")).(*array.String)
	xs := rec.Column(idx("x")).(*array.Float64)
	out := make([]row, rec.NumRows())
	for i := range out {
		out[i] = row{id: ids.Value(i), name: names.Value(i), x: xs.Value(i)}
	}
	return out
}

// checkTable reads the changed partition of table name through floe and
// compares it with want, and (for the generated table itself, counts)
// the table's row count with the generated one.
func checkTable(ctx context.Context, warehouse, name string, l bench.MetaLayout, want []row, counts bool) error {
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: warehouse})
	if err != nil {
		return err
	}
	defer cat.Close()
	tbl, err := cat.Load(ctx, bench.Ident(name))
	if err != nil {
		return err
	}
	part, _ := target(l)
	_, seq, err := scan.Rows(ctx, tbl, scan.Options{Filter: iceberg.EqualTo(iceberg.Reference("part"), int64(part))})
	if err != nil {
		return err
	}
	var got []row
	for rec, err := range seq {
		if err != nil {
			return err
		}
		parts := rec.Column(rec.Schema().FieldIndices("part")[0]).(*array.Int64)
		for i, r := range rowsOf(rec) {
			if parts.Value(i) == int64(part) {
				got = append(got, r)
			}
		}
		rec.Release()
	}
	slices.SortFunc(got, func(a, b row) int { return cmp.Compare(a.id, b.id) })
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s: partition %d holds %d rows, want %d (or different values)", name, part, len(got), len(want))
	}
	if !counts {
		return nil
	}
	snap := tbl.CurrentSnapshot()
	// Merge-on-read: the 4 updated rows and the 3 inserted ones are new
	// rows; the 3 deleted rows and the old images of the updated ones are
	// position deletes.
	if snap == nil || snap.Summary == nil || snap.Summary.Properties["total-records"] != fmt.Sprint(l.Rows()+7) ||
		snap.Summary.Properties["total-position-deletes"] != "7" {
		return fmt.Errorf("snapshot summary %v: want total-records %d and total-position-deletes 7", snap.Summary, l.Rows()+7)
	}
	return nil
}
