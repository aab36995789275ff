// Command applybench measures merge.Apply (floe's apply_changelog) applying
// 1M changes to a 10M-row table in each delete mode, with its peak memory,
// against the time to write the same rows as a plain append.
//
// One process per measurement, so that the peak resident memory of one is
// not charged to another (bench/applybench.sh runs them all):
//
//	applybench -phase build -warehouse DIR -layout flat|daily
//	applybench -phase apply -warehouse DIR -layout L -keys clustered|uniform -mode cow|position|dv|equality|baseline
//
// The build phase creates, in the embedded catalog of DIR, the tables
// t_v2 and t_v3 (format v2 and v3) of -rows rows appended -file-rows rows
// at a time (one data file per append), and an empty table plain. Each
// apply phase must run on a fresh copy of that warehouse at the same path
// (the metadata holds absolute paths): it applies -changes change rows
// (half UPDATE_AFTER of existing keys, a quarter DELETE of existing keys, a
// quarter INSERT of new keys) with merge.Apply, or, for -mode baseline,
// appends the same rows to plain through tableops.Append.
//
// The apply phase prints one line in the format of `go test -bench`, for
// bench/cmd/benchratio:
//
//	BenchmarkApply/<layout>/<keys>/<mode> 1 <wall> ns/op <cpu> cpu-ns/op <peak> peak-rss-MiB <n> files-read <n> table-files <r> read-MiB <t> table-MiB
//
// cpu-ns/op is user+system CPU time of the process in the timed section
// (getrusage); peak-rss-MiB is VmHWM of /proc/self/status, reset just
// before the timed section, so it covers the apply with the change rows
// already in memory; read-MiB is what the process read through system
// calls in the timed section (rchar of /proc/self/io: data files, delete
// files, manifests, metadata); files-read is merge.Result.FilesScanned
// (data files whose key column was read; 0 in equality mode and for the
// baseline). Change rows are generated before the timed section.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	warehouse := flag.String("warehouse", "", "warehouse folder of the embedded catalog (required)")
	phase := flag.String("phase", "", "build or apply")
	layout := flag.String("layout", "flat", "flat (unpartitioned) or daily (partitioned by day(created))")
	keys := flag.String("keys", "clustered", "clustered or uniform: where the changed keys lie")
	mode := flag.String("mode", "", "cow, position, dv, equality or baseline (apply)")
	nRows := flag.Int64("rows", 10_000_000, "rows of the table (build; apply must be given the same)")
	fileRows := flag.Int64("file-rows", 1_000_000, "rows per data file (build; apply must be given the same)")
	nChanges := flag.Int64("changes", 1_000_000, "change rows (apply)")
	changesFile := flag.String("changes-file", "", "Arrow IPC file of the change rows (apply, changes); written when missing (default: changes-<keys>-<changes>.arrow beside the warehouse)")
	budget := flag.Int64("memory-budget", 0, "merge.WithMemoryBudget in bytes (0: floe's default)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed section to this file")
	memProfile := flag.String("memprofile", "", "write a heap profile (allocations) after the timed section to this file")
	heapProfile := flag.String("heapprofile", "", "write the heap profile taken when resident memory was highest in the timed section to this file")
	flag.Parse()
	w := Workload{Rows: *nRows, FileRows: *fileRows, Changes: *nChanges, Layout: *layout, Keys: *keys}
	if *warehouse == "" || (*phase != "build" && *phase != "apply" && *phase != "changes") {
		fmt.Fprintln(os.Stderr, "usage: applybench -warehouse DIR -phase build|changes|apply [-layout flat|daily] [-keys clustered|uniform] [-mode cow|position|dv|equality|baseline|merge-cow|merge-position|merge-dv] [-rows N] [-file-rows N] [-changes N] [-changes-file F] [-memory-budget BYTES]")
		os.Exit(2)
	}
	if *changesFile == "" {
		*changesFile = filepath.Join(filepath.Dir(filepath.Clean(*warehouse)), fmt.Sprintf("changes-%s-%d-%d.arrow", w.Keys, w.Rows, w.Changes))
	}
	if _, ok := layouts[w.Layout]; !ok {
		fmt.Fprintf(os.Stderr, "applybench: -layout %q: want flat or daily\n", w.Layout)
		os.Exit(2)
	}
	ctx := context.Background()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "# "+format+"\n", args...) }
	switch *phase {
	case "build":
		t0 := time.Now()
		if err := build(ctx, *warehouse, w, logf); err != nil {
			fmt.Fprintf(os.Stderr, "applybench build: %v\n", err)
			os.Exit(1)
		}
		hwm, _ := statusKB("VmHWM:")
		logf("build of %s: %.1f s, peak RSS %.0f MiB", w.Layout, time.Since(t0).Seconds(), float64(hwm)/(1<<20))
	case "changes":
		t0 := time.Now()
		p, err := prepare(ctx, *warehouse, w, "baseline", *changesFile, 0)
		if err != nil {
			fmt.Fprintf(os.Stderr, "applybench changes: %v\n", err)
			os.Exit(1)
		}
		p.close()
		logf("change rows in %s: %.1f s", *changesFile, time.Since(t0).Seconds())
	case "apply":
		line, err := measure(ctx, *warehouse, w, *mode, *changesFile, *budget, *cpuProfile, *memProfile, *heapProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "applybench apply %s/%s/%s: %v\n", w.Layout, w.Keys, *mode, err)
			os.Exit(1)
		}
		fmt.Println(line)
	}
}

// measure prepares the run, times it and formats its result line.
func measure(ctx context.Context, warehouse string, w Workload, mode, changes string, budget int64, cpuProfile, memProfile, heapProfile string) (string, error) {
	p, err := prepare(ctx, warehouse, w, mode, changes, budget)
	if err != nil {
		return "", err
	}
	defer p.close()
	runtime.GC()
	debug.FreeOSMemory()
	if err := resetPeak(); err != nil {
		return "", err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return "", err
		}
	}
	read0, err := ioKB("rchar:")
	if err != nil {
		return "", err
	}
	var stopSampler func() error
	if heapProfile != "" {
		stopSampler = sampleHeap(heapProfile)
	}
	cpu0 := cpuTime()
	t0 := time.Now()
	out, err := p.run(ctx)
	wall := time.Since(t0)
	cpu := cpuTime() - cpu0
	read1, rerr := ioKB("rchar:")
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if stopSampler != nil {
		if serr := stopSampler(); err == nil {
			err = serr
		}
	}
	if err != nil {
		return "", err
	}
	if rerr != nil {
		return "", rerr
	}
	hwm, err := statusKB("VmHWM:")
	if err != nil {
		return "", err
	}
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			return "", err
		}
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			f.Close()
			return "", err
		}
		if err := f.Close(); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("BenchmarkApply/%s/%s/%s 1 %d ns/op %d cpu-ns/op %.0f peak-rss-MiB %d files-read %d table-files %.1f read-MiB %.1f table-MiB %d rows-written %.1f spilled-MiB %.0f ns/change %.0f cpu-ns/change",
		w.Layout, w.Keys, mode, wall.Nanoseconds(), cpu.Nanoseconds(), float64(hwm)/(1<<20),
		out.filesScanned, max(out.tableFiles, 0), float64(read1-read0)/(1<<20), float64(max(out.tableBytes, 0))/(1<<20), out.rowsWritten,
		float64(out.spilled)/(1<<20), float64(wall.Nanoseconds())/float64(w.Changes), float64(cpu.Nanoseconds())/float64(w.Changes)), nil
}

// sampleHeap watches resident memory every 20 ms and writes the heap
// profile to path whenever it is 16 MiB above the last profiled peak. The
// returned function stops it.
func sampleHeap(path string) func() error {
	done := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		var last int64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				errc <- nil
				return
			case <-t.C:
			}
			rss, err := statusKB("VmRSS:")
			if err != nil {
				errc <- err
				return
			}
			if rss < last+16<<20 {
				continue
			}
			last = rss
			f, err := os.Create(path)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				errc <- err
				return
			}
		}
	}()
	return func() error {
		close(done)
		return <-errc
	}
}

// cpuTime is the user+system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeak resets the process's peak resident set size (VmHWM) to its
// current size, so that VmHWM covers what follows only (Linux 4.0+).
func resetPeak() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("reset the peak RSS: %w (applybench needs Linux /proc)", err)
	}
	return nil
}

// statusKB reads a "Name: N kB" line of /proc/self/status, in bytes.
func statusKB(name string) (int64, error) {
	v, err := procField("/proc/self/status", name)
	return v << 10, err
}

// ioKB reads a "name: N" line of /proc/self/io (bytes).
func ioKB(name string) (int64, error) { return procField("/proc/self/io", name) }

func procField(path, name string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("%w (applybench needs Linux /proc)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s %s %q: %w", path, name, rest, err)
			}
			return v, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no %s line", path, name)
}
