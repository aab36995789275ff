package deltasync

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

// benchRows is the size of the generated table: version 1 holds benchRows
// rows; version 2 updates a quarter of them, deletes a quarter and inserts
// a quarter more, which the Change Data Feed records as benchRows change
// rows (an update is a pre-image and a post-image).
var benchRows = envInt("FLOE_BENCH_DELTA_ROWS", 1_000_000)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

// benchRecord builds rows for ids (name and amount derived from id and
// gen); with kinds set, a _change_type column too.
func benchRecord(ids []int64, gen int, kinds []string) arrow.RecordBatch {
	fields := benchSchema.Fields()
	if kinds != nil {
		fields = append(fields, arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("name-%d-%d", id, gen))
		b.Field(2).(*array.Float64Builder).Append(float64(id%1000) + float64(gen)/10)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(base + id*1000))
		if kinds != nil {
			b.Field(4).(*array.StringBuilder).Append(kinds[i])
		}
	}
	return b.NewRecordBatch()
}

// benchTable writes the generated Delta table with n rows at version 1.
func benchTable(b testing.TB, rows int) string {
	b.Helper()
	dir := b.TempDir()
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		b.Fatal(err)
	}
	md, err := deltatest.Metadata(benchSchema, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		b.Fatal(err)
	}
	clock := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	ci := func(op string) deltatest.CommitInfo {
		clock = clock.Add(time.Minute)
		return deltatest.CommitInfo{Timestamp: clock, Operation: op}
	}
	if _, err := w.Commit(ci("CREATE TABLE"), delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md); err != nil {
		b.Fatal(err)
	}
	const files = 4
	n := int64(rows)
	per := n / files
	var adds []delta.AddFile
	acts := []any{ci("WRITE")}
	for f := int64(0); f < files; f++ {
		ids := make([]int64, 0, per)
		for id := f * per; id < (f+1)*per; id++ {
			ids = append(ids, id)
		}
		rec := benchRecord(ids, 0, nil)
		a, err := w.WriteData(fmt.Sprintf("part-%d-v1.parquet", f), rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		adds = append(adds, a)
		acts = append(acts, a)
	}
	if _, err := w.Commit(acts...); err != nil {
		b.Fatal(err)
	}
	// Version 2: in each file, ids ≡ 0 mod 4 are updated, ≡ 1 deleted,
	// and as many new ids are inserted (n and up).
	acts = []any{ci("MERGE")}
	var pre, post, dels, ins []int64
	next := n
	for f := int64(0); f < files; f++ {
		var keep []int64
		var keepGen []int
		for id := f * per; id < (f+1)*per; id++ {
			switch id % 4 {
			case 0:
				pre, post = append(pre, id), append(post, id)
				keep, keepGen = append(keep, id), append(keepGen, 1)
			case 1:
				dels = append(dels, id)
			default:
				keep, keepGen = append(keep, id), append(keepGen, 0)
			}
		}
		for i := int64(0); i < per/4; i++ {
			ins = append(ins, next)
			keep, keepGen = append(keep, next), append(keepGen, 1)
			next++
		}
		// New data file: unchanged rows keep gen 0, updated and new rows gen 1.
		var gen0, gen1 []int64
		for i, id := range keep {
			if keepGen[i] == 0 {
				gen0 = append(gen0, id)
			} else {
				gen1 = append(gen1, id)
			}
		}
		for j, g := range [][]int64{gen0, gen1} {
			rec := benchRecord(g, j, nil)
			a, err := w.WriteData(fmt.Sprintf("part-%d-v2-%d.parquet", f, j), rec)
			rec.Release()
			if err != nil {
				b.Fatal(err)
			}
			acts = append(acts, a)
		}
		r := remove(adds[f])
		acts = append(acts, r)
	}
	cdc := func(name string, ids []int64, gen int, kind string) {
		kinds := make([]string, len(ids))
		for i := range kinds {
			kinds[i] = kind
		}
		rec := benchRecord(ids, gen, kinds)
		c, err := w.WriteChangeData("_change_data/"+name, rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		acts = append(acts, c)
	}
	cdc("pre.parquet", pre, 0, "update_preimage")
	cdc("post.parquet", post, 1, "update_postimage")
	cdc("del.parquet", dels, 0, "delete")
	cdc("ins.parquet", ins, 1, "insert")
	if _, err := w.Commit(acts...); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkSync measures one run applying version 2 (benchRows change
// rows) to an Iceberg table holding version 1, in each mode. The
// migration of version 1 is not timed.
//
//	go test ./delta/deltasync/ -run '^$' -bench BenchmarkSync -benchtime 3x
func BenchmarkSync(b *testing.B) {
	dir := benchTable(b, benchRows)
	ctx := context.Background()
	src, err := delta.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			var cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				cat := openCatalog(b)
				ident := table.Identifier{"bench", fmt.Sprintf("t%d", i)}
				if _, err := Sync(ctx, cat, src, ident, Options{EqualityColumns: []string{"id"}, Mode: m.mode, DeleteMode: m.del, FormatVersion: m.version,
					Start: delta.AtVersion(1), End: delta.AtVersion(1)}); err != nil {
					b.Fatal(err)
				}
				cpu0 := cpuTime()
				b.StartTimer()
				res, err := Sync(ctx, cat, src, ident, Options{DeleteMode: m.del})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				cpu += cpuTime() - cpu0
				bt := res.Batches[0]
				if bt.ChangeRows != int64(benchRows) || bt.Upserts != int64(benchRows)/2 || bt.Deletes != int64(benchRows)/4 {
					b.Fatalf("unexpected batch %+v", bt)
				}
				cat.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "changes/s")
			// CPU time (user + system, all goroutines) is what the sync
			// costs whatever else the machine runs.
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// TestBenchTable checks the benchmark's table and sync on a small scale:
// the Iceberg table equals the Delta snapshot in every mode.
func TestBenchTable(t *testing.T) {
	src, err := delta.Open(context.Background(), benchTable(t, 4000))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range syncModes {
		t.Run(m.name, func(t *testing.T) {
			cat := openCatalog(t)
			ident := table.Identifier{"bench", "t"}
			syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Mode: m.mode, DeleteMode: m.del, FormatVersion: m.version, Start: delta.AtVersion(1)}, 1)
			res := syncTo(t, cat, ident, src, Options{DeleteMode: m.del}, 2)
			if b := res.Batches[0]; b.ChangeRows != 4000 || b.Upserts != 2000 || b.Deletes != 1000 {
				t.Fatalf("%+v", b)
			}
		})
	}
}

// cpuTime returns the process's user plus system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMigrate measures a first run: creating the Iceberg table and
// copying the benchRows rows of version 1 into it.
//
//	go test ./delta/deltasync/ -run '^$' -bench BenchmarkMigrate -benchtime 3x
func BenchmarkMigrate(b *testing.B) {
	dir := benchTable(b, benchRows)
	ctx := context.Background()
	src, err := delta.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cat := openCatalog(b)
		cpu0 := cpuTime()
		b.StartTimer()
		res, err := Sync(ctx, cat, src, table.Identifier{"bench", "t"}, Options{EqualityColumns: []string{"id"}, End: delta.AtVersion(1)})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - cpu0
		if res.MigratedRows != int64(benchRows) {
			b.Fatalf("migrated %d rows", res.MigratedRows)
		}
		cat.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
