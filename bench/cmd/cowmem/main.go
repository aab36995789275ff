// Command cowmem measures the peak memory of the changelog of a
// copy-on-write rewrite of one large data file: floe's goal is that a
// rewrite of a 10M-row file stays under 1 GiB of resident memory.
//
// It runs in two phases, each meant for its own process so that the peak
// of one is not charged to the other (bench/cowmem.sh runs both):
//
//	cowmem -warehouse DIR -phase build      # table with one file, CoW delete of 5 rows
//	cowmem -warehouse DIR -phase changelog  # stream the changelog of that delete
//
// Each phase prints its duration, the peak resident set size (VmHWM from
// /proc/self/status) and the Go heap at the sampled peak. With -heapprofile
// the changelog phase writes the heap profile taken when resident memory
// was highest, for `go tool pprof -sample_index=inuse_space`.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/changelog"
)

// deletedIDs are the ids the copy-on-write delete removes from n rows:
// five rows spread over the file.
func deletedIDs(n int64) []int64 { return []int64{11, n / 4, n/2 + 1, n * 7 / 9, n - 2} }

// nDeleted is the number of rows the delete removes.
const nDeleted = 5

func main() {
	warehouse := flag.String("warehouse", "", "warehouse folder of the embedded catalog (required)")
	phase := flag.String("phase", "", "build or changelog")
	nRows := flag.Int64("rows", 10_000_000, "rows of the data file (build)")
	budget := flag.Int64("budget", 0, "changelog memory budget in bytes (0 = the default)")
	heapProfile := flag.String("heapprofile", "", "write the heap profile at the resident-memory peak to this file (changelog)")
	flag.Parse()
	if *warehouse == "" || (*phase != "build" && *phase != "changelog") {
		fmt.Fprintln(os.Stderr, "usage: cowmem -warehouse DIR -phase build|changelog [-rows N] [-budget BYTES] [-heapprofile FILE]")
		os.Exit(2)
	}
	s := startSampler(*heapProfile)
	start := time.Now()
	var err error
	switch *phase {
	case "build":
		err = build(context.Background(), *warehouse, *nRows)
	case "changelog":
		err = readChangelog(context.Background(), *warehouse, *budget)
	}
	elapsed := time.Since(start)
	peakHeap, perr := s.stop()
	if err == nil {
		err = perr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cowmem %s: %v\n", *phase, err)
		os.Exit(1)
	}
	hwm, err := vmHWM()
	if err != nil {
		fmt.Fprintf(os.Stderr, "cowmem: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("phase %s: %.2f s, peak RSS (VmHWM) %.0f MiB, Go heap in use at the sampled peak %.0f MiB\n",
		*phase, elapsed.Seconds(), float64(hwm)/(1<<20), float64(peakHeap)/(1<<20))
}

func build(ctx context.Context, warehouse string, n int64) error {
	e, err := bench.Open(ctx, warehouse)
	if err != nil {
		return err
	}
	defer e.Close()
	// One data file: the target size is far above what n rows take.
	props := iceberg.Properties{"format-version": "2", "write.delete.mode": "copy-on-write",
		"write.target-file-size-bytes": strconv.FormatInt(8<<30, 10)}
	tbl, err := e.Create("cow", bench.NarrowColumns, "", props)
	if err != nil {
		return err
	}
	as, err := bench.ArrowSchema(ctx, tbl)
	if err != nil {
		return err
	}
	t0 := time.Now()
	tbl, err = e.Append("cow", func() iter.Seq2[arrow.RecordBatch, error] {
		return bench.Stream(as, n, 64*1024, 20240101)
	})
	if err != nil {
		return err
	}
	s := tbl.CurrentSnapshot()
	if got := s.Summary.Properties["added-data-files"]; got != "1" {
		return fmt.Errorf("the append wrote %s data files, want 1", got)
	}
	fmt.Printf("appended %d rows in one data file (%s bytes) in %.1f s\n", n, s.Summary.Properties["added-files-size"], time.Since(t0).Seconds())
	t0 = time.Now()
	deleted := deletedIDs(n)
	out, err := e.Delete("cow", func(id int64) bool { return slices.Contains(deleted, id) })
	if err != nil {
		return err
	}
	if out.RowsRemoved != int64(len(deleted)) || out.Mode.String() != "copy-on-write" {
		return fmt.Errorf("the delete removed %d rows (%s), want %d copy-on-write", out.RowsRemoved, out.Mode, len(deleted))
	}
	fmt.Printf("copy-on-write delete of %d rows: snapshot %d in %.1f s\n", len(deleted), out.SnapshotID, time.Since(t0).Seconds())
	return nil
}

func readChangelog(ctx context.Context, warehouse string, budget int64) error {
	e, err := bench.Open(ctx, warehouse)
	if err != nil {
		return err
	}
	defer e.Close()
	tbl, err := e.Load("cow")
	if err != nil {
		return err
	}
	end := tbl.CurrentSnapshot()
	if end == nil || end.ParentSnapshotID == nil {
		return errors.New("table bench.cow has no copy-on-write snapshot: run -phase build first")
	}
	sch, seq, err := changelog.Scan(ctx, tbl, changelog.Options{StartSnapshotID: end.ParentSnapshotID, EndSnapshotID: &end.SnapshotID, MemoryBudget: budget})
	if err != nil {
		return err
	}
	col := sch.FieldIndices(changelog.ChangeTypeColumn)[0]
	counts := map[string]int{}
	for rec, err := range seq {
		if err != nil {
			return err
		}
		kinds := rec.Column(col).(*array.String)
		for i := range kinds.Len() {
			counts[kinds.Value(i)]++
		}
		rec.Release()
	}
	if len(counts) != 1 || counts[changelog.Delete] != nDeleted {
		return fmt.Errorf("changelog rows by change type %v, want %d DELETE", counts, nDeleted)
	}
	fmt.Printf("changelog of snapshot %d: %d DELETE rows\n", end.SnapshotID, counts[changelog.Delete])
	return nil
}

// sampler watches resident memory and remembers the Go heap at its peak,
// writing a heap profile there when asked.
type sampler struct {
	done     chan struct{}
	wg       sync.WaitGroup
	peakRSS  int64
	peakHeap uint64
	err      error
}

func startSampler(profile string) *sampler {
	s := &sampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		var lastProfiled int64
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
			}
			rss, err := vmRSS()
			if err != nil {
				s.err = err
				return
			}
			if rss <= s.peakRSS {
				continue
			}
			s.peakRSS = rss
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s.peakHeap = ms.HeapInuse
			if profile != "" && rss > lastProfiled+32<<20 {
				lastProfiled = rss
				if err := writeHeapProfile(profile); err != nil {
					s.err = err
					return
				}
			}
		}
	}()
	return s
}

func (s *sampler) stop() (uint64, error) {
	close(s.done)
	s.wg.Wait()
	return s.peakHeap, s.err
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func vmHWM() (int64, error) { return statusKB("VmHWM:") }
func vmRSS() (int64, error) { return statusKB("VmRSS:") }

// statusKB reads a "Name: N kB" line of /proc/self/status, in bytes.
func statusKB(name string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("read peak memory: %w (cowmem needs Linux /proc)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status %s %q: %w", name, rest, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/self/status has no %s line", name)
}
