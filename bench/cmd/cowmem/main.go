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
// With -files N the rows are appended in N data files, and with -update
// the copy-on-write change is an update of 1% of the rows (x = x + 1
// where id % 100 = 7) read with identifier column id, as the peers'
// changelog scenario (bench/peers.sh) does with the floe CLI:
//
//	cowmem -warehouse DIR -phase build -rows 1000000 -files 10 -columns wide -update
//	cowmem -warehouse DIR -phase changelog -update
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
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/tableops"
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
	nFiles := flag.Int64("files", 1, "data files the rows are appended in, one append each (build)")
	columns := flag.String("columns", "narrow", "narrow ("+bench.NarrowColumns+") or wide ("+bench.WideColumns+") (build)")
	update := flag.Bool("update", false, "the change is a copy-on-write update of 1% of the rows, read with identifier column id (build and changelog)")
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
		err = build(context.Background(), *warehouse, *nRows, *nFiles, *columns, *update)
	case "changelog":
		err = readChangelog(context.Background(), *warehouse, *budget, *update)
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

// updated reports whether the 1% update (-update) changes row id.
func updated(id int64) bool { return id%100 == 7 }

// nUpdated is the number of rows of 0..n-1 the 1% update changes.
func nUpdated(n int64) int {
	c := 0
	for id := int64(7); id < n; id += 100 {
		c++
	}
	return c
}

func build(ctx context.Context, warehouse string, n, files int64, columns string, update bool) error {
	cols := map[string]string{"narrow": bench.NarrowColumns, "wide": bench.WideColumns}[columns]
	if cols == "" || files < 1 || files > n {
		return fmt.Errorf("-columns %q (want narrow or wide), -files %d (want 1..rows)", columns, files)
	}
	e, err := bench.Open(ctx, warehouse)
	if err != nil {
		return err
	}
	defer e.Close()
	// One data file per append: the target size is far above what n rows take.
	props := iceberg.Properties{"format-version": "2", "write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write",
		"write.target-file-size-bytes": strconv.FormatInt(8<<30, 10)}
	tbl, err := e.Create("cow", cols, "", props)
	if err != nil {
		return err
	}
	as, err := bench.ArrowSchema(ctx, tbl)
	if err != nil {
		return err
	}
	t0 := time.Now()
	for f := range files {
		lo, hi := n*f/files, n*(f+1)/files
		tbl, err = e.Append("cow", func() iter.Seq2[arrow.RecordBatch, error] { return span(as, lo, hi, 64*1024) })
		if err != nil {
			return err
		}
		s := tbl.CurrentSnapshot()
		if got := s.Summary.Properties["added-data-files"]; got != "1" {
			return fmt.Errorf("append %d wrote %s data files, want 1", f, got)
		}
	}
	fmt.Printf("appended %d rows in %d data files in %.1f s\n", n, files, time.Since(t0).Seconds())
	t0 = time.Now()
	if update {
		out, err := tableops.Update(ctx, e.Target("cow"), bench.IDPredicate(updated), bumpX)
		if err != nil {
			return err
		}
		if out.RowsRemoved != int64(nUpdated(n)) || out.Mode.String() != "copy-on-write" {
			return fmt.Errorf("the update rewrote %d rows (%s), want %d copy-on-write", out.RowsRemoved, out.Mode, nUpdated(n))
		}
		fmt.Printf("copy-on-write update of %d rows: snapshot %d in %.1f s\n", out.RowsRemoved, out.SnapshotID, time.Since(t0).Seconds())
		return nil
	}
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

// span yields the generated rows lo..hi-1 of schema in batches of batchRows.
func span(as *arrow.Schema, lo, hi int64, batchRows int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for start := lo; start < hi; start += batchRows {
			rec, err := bench.Batch(as, start, min(batchRows, hi-start), 20240101)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// bumpX returns the touched rows of rec with x = x + 1.
func bumpX(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
	idx := rec.Schema().FieldIndices("x")
	if len(idx) != 1 {
		return nil, fmt.Errorf("bench.cow has no column x: %s", rec.Schema())
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, rec.Schema())
	defer b.Release()
	for i, t := range touched {
		if !t {
			continue
		}
		for c := range int(rec.NumCols()) {
			if c == idx[0] {
				xs := rec.Column(c).(*array.Float64)
				b.Field(c).(*array.Float64Builder).Append(xs.Value(i) + 1)
				continue
			}
			if err := b.Field(c).AppendValueFromString(rec.Column(c).ValueStr(i)); err != nil {
				return nil, fmt.Errorf("copy column %s row %d: %w", rec.Schema().Field(c).Name, i, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func readChangelog(ctx context.Context, warehouse string, budget int64, update bool) error {
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
	opts := changelog.Options{StartSnapshotID: end.ParentSnapshotID, EndSnapshotID: &end.SnapshotID, MemoryBudget: budget}
	if update {
		opts.IdentifierColumns = []string{"id"}
	}
	sch, seq, err := changelog.Scan(ctx, tbl, opts)
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
	if update {
		total, err := strconv.ParseInt(end.Summary.Properties["total-records"], 10, 64)
		if err != nil {
			return fmt.Errorf("snapshot %d: total-records %q: %w", end.SnapshotID, end.Summary.Properties["total-records"], err)
		}
		want := nUpdated(total)
		if len(counts) != 2 || counts[changelog.UpdateBefore] != want || counts[changelog.UpdateAfter] != want {
			return fmt.Errorf("changelog rows by change type %v, want %d UPDATE_BEFORE and UPDATE_AFTER", counts, want)
		}
		fmt.Printf("changelog of snapshot %d: %d UPDATE_BEFORE and UPDATE_AFTER rows\n", end.SnapshotID, want)
		return nil
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
