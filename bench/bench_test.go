package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/scan"
)

// Sizes of the benchmark data sets. The data is generated with fixed
// seeds, so every run reads and writes the same rows.
const (
	benchRows = 2_000_000
	batchRows = 64 * 1024
	seed      = 20240101
)

// variants returns the names of a benchmark's variants in the order to
// run them: as given, or reversed when FLOE_BENCH_REVERSE=1, so that
// bench/run.sh can alternate which variant runs first in a round.
func variants(names ...string) []string {
	if os.Getenv("FLOE_BENCH_REVERSE") == "1" {
		names = slices.Clone(names)
		slices.Reverse(names)
	}
	return names
}

func newEnv(b *testing.B) *Env {
	b.Helper()
	e, err := Open(context.Background(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e
}

// reportRate reports rows per second over the timed part of the run.
func reportRate(b *testing.B, rowsPerOp int64) {
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(rowsPerOp)*float64(b.N)/s, "rows/s")
	}
}

// cpuMeter adds up the CPU time (user and system, all threads) the
// process spends in timed sections. On a shared machine it varies less
// than wall time, since waiting for a core is not counted; garbage
// collection and iceberg-go's reader goroutines are.
type cpuMeter struct {
	total, at time.Duration
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (m *cpuMeter) start() { m.at = cpuNow() }
func (m *cpuMeter) stop()  { m.total += cpuNow() - m.at }

// report reports CPU time per operation as cpu-ns/op.
func (m *cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(m.total.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// settle collects garbage left by set-up or by the previous variant, so
// that it is not charged to the timed run.
func settle() {
	runtime.GC()
	runtime.GC()
}

// wideData creates a probe table to learn the Arrow schema floe writes and
// generates benchRows rows of it.
func wideData(b *testing.B, e *Env) (*arrow.Schema, []arrow.RecordBatch) {
	b.Helper()
	tbl, err := e.Create("probe", WideColumns, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	as, err := ArrowSchema(e.Ctx, tbl)
	if err != nil {
		b.Fatal(err)
	}
	recs, err := Generate(as, benchRows, batchRows, seed)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { Release(recs) })
	return as, recs
}

type layout struct {
	name, partition string
}

var layouts = []layout{{"unpartitioned", ""}, {"partitioned", "day(ts)"}}

// BenchmarkAppend appends the same 2M generated rows into a new table of
// the embedded catalog, through floe (tableops.Append: write.Prepare and
// a RowDelta commit, with retries) and through iceberg-go directly
// (Table.Append with a RecordReader). Creating the table is not timed.
func BenchmarkAppend(b *testing.B) {
	e := newEnv(b)
	as, recs := wideData(b, e)
	n := 0
	for _, l := range layouts {
		b.Run(l.name, func(b *testing.B) {
			for _, v := range variants("floe", "iceberg-go") {
				b.Run(v, func(b *testing.B) {
					var cpu cpuMeter
					for range b.N {
						b.StopTimer()
						n++
						name := fmt.Sprintf("append_%d", n)
						if _, err := e.Create(name, WideColumns, l.partition, nil); err != nil {
							b.Fatal(err)
						}
						settle()
						b.StartTimer()
						cpu.start()
						var tbl *table.Table
						var err error
						switch v {
						case "floe":
							tbl, err = e.Append(name, Replay(recs))
						case "iceberg-go":
							tbl, err = e.Cat.Iceberg().LoadTable(e.Ctx, Ident(name))
							if err == nil {
								rdr, rerr := array.NewRecordReader(as, recs)
								if rerr != nil {
									b.Fatal(rerr)
								}
								tbl, err = tbl.Append(e.Ctx, rdr, nil)
								rdr.Release()
							}
						}
						cpu.stop()
						b.StopTimer()
						if err != nil {
							b.Fatal(err)
						}
						checkAdded(b, tbl, benchRows)
						dropTable(b, e, tbl)
						b.StartTimer()
					}
					reportRate(b, benchRows)
					cpu.report(b)
				})
			}
		})
	}
}

// checkAdded fails unless the table's current snapshot added want rows.
func checkAdded(b *testing.B, tbl *table.Table, want int64) {
	b.Helper()
	s := tbl.CurrentSnapshot()
	if s == nil || s.Summary == nil {
		b.Fatalf("table %v has no current snapshot with a summary after the append", tbl.Identifier())
	}
	if got := s.Summary.Properties["added-records"]; got != fmt.Sprint(want) {
		b.Fatalf("table %v: snapshot %d added %s records, want %d", tbl.Identifier(), s.SnapshotID, got, want)
	}
}

// dropTable removes a table and its files, so that repeated appends do
// not fill the disk.
func dropTable(b *testing.B, e *Env, tbl *table.Table) {
	b.Helper()
	if err := e.Cat.Iceberg().DropTable(e.Ctx, tbl.Identifier()); err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(strings.TrimPrefix(tbl.Location(), "file://")); err != nil {
		b.Fatal(err)
	}
}

// scanCase is a table state to scan: 2M rows, possibly with 1% of them
// deleted by a merge-on-read delete.
type scanCase struct {
	name, partition, formatVersion string
	deletes                        bool
}

var scanCases = []scanCase{
	{"unpartitioned", "", "2", false},
	{"partitioned", "day(ts)", "2", false},
	{"posdeletes", "", "2", true},
	{"dv", "", "3", true},
}

// everyHundredth selects 1% of the generated rows.
func everyHundredth(id int64) bool { return id%100 == 0 }

// BenchmarkScan reads every live row of a 2M-row table through floe
// (scan.Rows) and through iceberg-go (Table.Scan().ToArrowRecords):
// unpartitioned (one data file), partitioned by day(ts) (Days files), and
// unpartitioned with 1% of the rows deleted by position deletes (v2) or a
// deletion vector (v3).
func BenchmarkScan(b *testing.B) {
	for _, c := range scanCases {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			_, recs := wideData(b, e)
			props := iceberg.Properties{"format-version": c.formatVersion, "write.delete.mode": "merge-on-read"}
			if _, err := e.Create("t", WideColumns, c.partition, props); err != nil {
				b.Fatal(err)
			}
			tbl, err := e.Append("t", Replay(recs))
			if err != nil {
				b.Fatal(err)
			}
			Release(recs)
			want := int64(benchRows)
			if c.deletes {
				out, err := e.Delete("t", everyHundredth)
				if err != nil {
					b.Fatal(err)
				}
				tbl = out.Table
				want -= out.RowsRemoved
				if out.RowsRemoved != benchRows/100 {
					b.Fatalf("the delete removed %d rows, want %d", out.RowsRemoved, benchRows/100)
				}
				if s := tbl.CurrentSnapshot(); s.Summary.Properties["total-delete-files"] == "0" {
					b.Fatalf("merge-on-read delete left no delete file: %v", s.Summary.Properties)
				}
			}
			for _, v := range variants("floe", "iceberg-go") {
				b.Run(v, func(b *testing.B) {
					settle()
					var cpu cpuMeter
					b.ResetTimer()
					cpu.start()
					for range b.N {
						var got int64
						var err error
						switch v {
						case "floe":
							got, err = countFloe(e.Ctx, tbl)
						case "iceberg-go":
							got, err = countIceberg(e.Ctx, tbl)
						}
						if err != nil {
							b.Fatal(err)
						}
						if got != want {
							b.Fatalf("%s read %d rows, want %d", v, got, want)
						}
					}
					cpu.stop()
					reportRate(b, want)
					cpu.report(b)
				})
			}
		})
	}
}

func countFloe(ctx context.Context, tbl *table.Table) (int64, error) {
	_, seq, err := scan.Rows(ctx, tbl, scan.Options{})
	if err != nil {
		return 0, err
	}
	return count(seq)
}

func countIceberg(ctx context.Context, tbl *table.Table) (int64, error) {
	_, seq, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return 0, err
	}
	return count(seq)
}

func count(seq func(func(arrow.RecordBatch, error) bool)) (int64, error) {
	var n int64
	for rec, err := range seq {
		if err != nil {
			return n, err
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n, nil
}

// changelogCase is a snapshot range and the changes it must produce.
type changelogCase struct {
	name string
	// setup builds the table and returns the range's bounds (start
	// exclusive, nil = from the first snapshot) and the expected number
	// of rows of each change type.
	setup func(b *testing.B, e *Env) (start *int64, end int64, want map[string]int64)
}

// cowDeleted are the ids the copy-on-write case deletes: a handful of
// rows spread over the file.
var cowDeleted = []int64{7, 123_456, 999_999, 1_500_000, 1_999_998}

var changelogCases = []changelogCase{
	{"append", func(b *testing.B, e *Env) (*int64, int64, map[string]int64) {
		// Four appends of 500k rows: an append-only range of 2M changes.
		_, recs := wideData(b, e)
		if _, err := e.Create("t", WideColumns, "", nil); err != nil {
			b.Fatal(err)
		}
		var tbl *table.Table
		per := len(recs) / 4
		for i := range 4 {
			part := recs[i*per:]
			if i < 3 {
				part = recs[i*per : (i+1)*per]
			}
			var err error
			if tbl, err = e.Append("t", Replay(part)); err != nil {
				b.Fatal(err)
			}
		}
		return nil, tbl.CurrentSnapshot().SnapshotID, map[string]int64{changelog.Insert: benchRows}
	}},
	{"cow", func(b *testing.B, e *Env) (*int64, int64, map[string]int64) {
		// One 2M-row file; a copy-on-write delete of 5 rows rewrites it,
		// so the snapshot's raw changes are 2M deletes and 2M-5 inserts,
		// all but 5 of them carry-overs.
		start := appendOnce(b, e, "2", "copy-on-write")
		out, err := e.Delete("t", func(id int64) bool { return slices.Contains(cowDeleted, id) })
		if err != nil {
			b.Fatal(err)
		}
		if out.Mode.String() != "copy-on-write" || out.RowsRemoved != int64(len(cowDeleted)) {
			b.Fatalf("delete: mode %s, %d rows removed; want copy-on-write, %d", out.Mode, out.RowsRemoved, len(cowDeleted))
		}
		return &start, out.SnapshotID, map[string]int64{changelog.Delete: int64(len(cowDeleted))}
	}},
	{"cow-v3", func(b *testing.B, e *Env) (*int64, int64, map[string]int64) {
		// The same on a v3 table: the rewrite keeps the row lineage of
		// the rows it copies, so the changelog finds the 5 deleted rows
		// from _row_id and _last_updated_sequence_number.
		start := appendOnce(b, e, "3", "copy-on-write")
		out, err := e.Delete("t", func(id int64) bool { return slices.Contains(cowDeleted, id) })
		if err != nil {
			b.Fatal(err)
		}
		if out.Mode.String() != "copy-on-write" || out.RowsRemoved != int64(len(cowDeleted)) {
			b.Fatalf("delete: mode %s, %d rows removed; want copy-on-write, %d", out.Mode, out.RowsRemoved, len(cowDeleted))
		}
		return &start, out.SnapshotID, map[string]int64{changelog.Delete: int64(len(cowDeleted))}
	}},
	{"mor-v2", morSetup("2")},
	{"mor-v3", morSetup("3")},
}

// appendOnce creates table t with the given format version and delete
// mode, appends the 2M generated rows in one snapshot and returns it.
func appendOnce(b *testing.B, e *Env, formatVersion, deleteMode string) int64 {
	b.Helper()
	_, recs := wideData(b, e)
	props := iceberg.Properties{"format-version": formatVersion, "write.delete.mode": deleteMode}
	if _, err := e.Create("t", WideColumns, "", props); err != nil {
		b.Fatal(err)
	}
	tbl, err := e.Append("t", Replay(recs))
	if err != nil {
		b.Fatal(err)
	}
	Release(recs)
	return tbl.CurrentSnapshot().SnapshotID
}

// morSetup deletes 1% of a 2M-row file merge-on-read: position deletes on
// v2, a deletion vector on v3.
func morSetup(formatVersion string) func(b *testing.B, e *Env) (*int64, int64, map[string]int64) {
	return func(b *testing.B, e *Env) (*int64, int64, map[string]int64) {
		start := appendOnce(b, e, formatVersion, "merge-on-read")
		out, err := e.Delete("t", everyHundredth)
		if err != nil {
			b.Fatal(err)
		}
		if out.Mode.String() != "merge-on-read" || out.RowsRemoved != benchRows/100 {
			b.Fatalf("delete: mode %s, %d rows removed; want merge-on-read, %d", out.Mode, out.RowsRemoved, benchRows/100)
		}
		return &start, out.SnapshotID, map[string]int64{changelog.Delete: benchRows / 100}
	}
}

// BenchmarkChangelog computes the row-level changelog of a snapshot range
// (changelog.Scan, default options: carry-over removal, no update images)
// and, as the baseline, reads the same files plainly with scan.Reader,
// one after the other as the changelog does: the data files the range
// added and removed, with the delete files that apply to them. rows/s
// counts the rows stored in those data files for both variants, so the
// ratio of rates is the ratio of times.
func BenchmarkChangelog(b *testing.B) {
	for _, c := range changelogCases {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			start, end, want := c.setup(b, e)
			tbl, err := e.Load("t")
			if err != nil {
				b.Fatal(err)
			}
			tasks, err := rangeTasks(e.Ctx, tbl, start, end)
			if err != nil {
				b.Fatal(err)
			}
			var input int64
			for _, t := range tasks {
				input += t.File.Count()
			}
			var wantChanges int64
			for _, n := range want {
				wantChanges += n
			}
			opts := changelog.Options{StartSnapshotID: start, EndSnapshotID: &end, TempDir: b.TempDir()}
			for _, v := range variants("changelog", "plain") {
				b.Run(v, func(b *testing.B) {
					settle()
					var cpu cpuMeter
					b.ResetTimer()
					cpu.start()
					for range b.N {
						switch v {
						case "changelog":
							got, err := countChanges(e.Ctx, tbl, opts)
							if err != nil {
								b.Fatal(err)
							}
							if !mapsEqual(got, want) {
								b.Fatalf("changelog rows by change type: %v, want %v", got, want)
							}
						case "plain":
							n, err := readPlain(e.Ctx, tbl, tasks)
							if err != nil {
								b.Fatal(err)
							}
							if n == 0 {
								b.Fatal("the plain read found no rows")
							}
						}
					}
					cpu.stop()
					reportRate(b, input)
					cpu.report(b)
					if v == "changelog" {
						b.ReportMetric(float64(wantChanges), "changes/op")
					}
				})
			}
		})
	}
}

// rangeTasks lists the data files a changelog of (start, end] reads, with
// the delete files that apply to them: the files of end that are not in
// start, and the files of start that are not in end; for a merge-on-read
// delete (same files, new delete files) the files of end whose deletes
// changed.
func rangeTasks(ctx context.Context, tbl *table.Table, start *int64, end int64) ([]scan.Task, error) {
	meta := tbl.Metadata()
	after, err := scan.Plan(ctx, tbl, meta.SnapshotByID(end), nil)
	if err != nil {
		return nil, err
	}
	if start == nil {
		return after, nil
	}
	before, err := scan.Plan(ctx, tbl, meta.SnapshotByID(*start), nil)
	if err != nil {
		return nil, err
	}
	was := map[string]scan.Task{}
	for _, t := range before {
		was[t.File.FilePath()] = t
	}
	is := map[string]bool{}
	var out []scan.Task
	for _, t := range after {
		is[t.File.FilePath()] = true
		old, ok := was[t.File.FilePath()]
		if !ok || old.Deletes.Key() != t.Deletes.Key() {
			out = append(out, t)
		}
	}
	for _, t := range before {
		if !is[t.File.FilePath()] {
			out = append(out, t)
		}
	}
	return out, nil
}

// readPlain reads every live row of the tasks' files, one file at a time.
func readPlain(ctx context.Context, tbl *table.Table, tasks []scan.Task) (int64, error) {
	r, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, t := range tasks {
		_, seq, err := r.Live(ctx, t.File, t.Deletes, nil)
		if err != nil {
			return n, err
		}
		for bt, err := range seq {
			if err != nil {
				return n, err
			}
			n += bt.Rec.NumRows()
			bt.Release()
		}
	}
	return n, nil
}

// countChanges runs the changelog and counts its rows by change type.
func countChanges(ctx context.Context, tbl *table.Table, o changelog.Options) (map[string]int64, error) {
	sch, seq, err := changelog.Scan(ctx, tbl, o)
	if err != nil {
		return nil, err
	}
	col := sch.FieldIndices(changelog.ChangeTypeColumn)[0]
	got := map[string]int64{}
	for rec, err := range seq {
		if err != nil {
			return nil, err
		}
		kinds := rec.Column(col).(*array.String)
		for i := range kinds.Len() {
			got[kinds.Value(i)]++
		}
		rec.Release()
	}
	return got, nil
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
