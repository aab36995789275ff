package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/internal/objstoretest"
)

// TestStorageRequestEconomy is the object storage benchmark of
// docs/benchmarks.md: each operation runs on local disk and on s3proxy
// (through the counting proxy), one right after the other, and the
// requests, bytes and wall-time ratio are printed as a Markdown table. It
// runs only with FLOE_STORAGE_BENCH=1 (FLOE_STORAGE_BENCH_ROWS sets the
// table size, default 1,000,000):
//
//	FLOE_STORAGE_BENCH=1 go test ./cmd/floe -run TestStorageRequestEconomy -v -timeout 60m
func TestStorageRequestEconomy(t *testing.T) {
	if os.Getenv("FLOE_STORAGE_BENCH") != "1" {
		t.Skip("a benchmark: set FLOE_STORAGE_BENCH=1 to run it")
	}
	rows := int64(1_000_000)
	if v := os.Getenv("FLOE_STORAGE_BENCH_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		rows = n
	}
	changes := rows / 10
	shared := sharedDelta(t)
	srv := objstoretest.StartS3(t)
	srv.CreateBucket(t, "bench")
	for _, tbl := range []string{"deltars-cdf-table-with-cdc-and-dvs", "deltars-checkpoint-cdf-table"} {
		srv.Upload(t, filepath.Join(shared, tbl), "bench", "delta/"+tbl)
	}
	px := objstoretest.NewProxy(t, srv.Endpoint)
	px.LogRequests(true)

	data := t.TempDir()
	writeBenchData(t, filepath.Join(data, "rows.parquet"), rows)
	writeBenchChanges(t, filepath.Join(data, "changes.parquet"), rows, changes)

	localWork, s3Work := t.TempDir(), t.TempDir()
	cfg := s3Config(filepath.Join(s3Work, "catalog.db"), "s3://bench/wh", px.URL, srv)
	if err := os.WriteFile(filepath.Join(s3Work, "floe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	local := []string{"--warehouse", "wh"}
	remote := []string{"--config", "floe.yaml", "--catalog", "lake"}
	run := func(work string, global []string, args string) time.Duration {
		t.Helper()
		a, err := splitArgs(strings.ReplaceAll(args, "{DATA}", data))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(floeBin, append(append([]string{"--quiet"}, global...), a...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("floe %s: %v\n%s", args, err, stderr.String())
		}
		return time.Since(start)
	}
	type result struct {
		op           string
		local, s3    time.Duration
		counts       objstoretest.Counts
		listed, full []string
	}
	var results []result
	// measure runs args on local disk, then on S3; delta is {DELTA} for each.
	measure := func(op, args string) {
		t.Helper()
		l := run(localWork, local, strings.ReplaceAll(args, "{DELTA}", shared))
		px.Counts()
		px.Logged()
		s := run(s3Work, remote, strings.ReplaceAll(args, "{DELTA}", "s3://bench/delta"))
		r := result{op: op, local: l, s3: s, counts: px.Counts()}
		for _, line := range px.Logged() {
			switch {
			case strings.HasPrefix(line, "LIST "):
				r.listed = append(r.listed, line)
			case strings.HasPrefix(line, "GET "):
				r.full = append(r.full, line)
			}
		}
		results = append(results, r)
		t.Logf("%s: local %v, s3 %v, %v", op, l.Round(time.Millisecond), s.Round(time.Millisecond), r.counts)
	}
	// measureRead repeats a read-only operation in rounds, alternating
	// which side runs first, and keeps the median of each side.
	measureRead := func(op, args string) {
		t.Helper()
		const rounds = 3
		var ls, ss []time.Duration
		var r result
		for i := range rounds {
			if i%2 == 1 {
				ls = append(ls, run(localWork, local, strings.ReplaceAll(args, "{DELTA}", shared)))
			}
			px.Counts()
			px.Logged()
			ss = append(ss, run(s3Work, remote, strings.ReplaceAll(args, "{DELTA}", "s3://bench/delta")))
			r = result{op: op + " (median of 3)", counts: px.Counts()}
			for _, line := range px.Logged() {
				switch {
				case strings.HasPrefix(line, "LIST "):
					r.listed = append(r.listed, line)
				case strings.HasPrefix(line, "GET "):
					r.full = append(r.full, line)
				}
			}
			if i%2 == 0 {
				ls = append(ls, run(localWork, local, strings.ReplaceAll(args, "{DELTA}", shared)))
			}
		}
		med := func(d []time.Duration) time.Duration {
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			return d[len(d)/2]
		}
		r.local, r.s3 = med(ls), med(ss)
		results = append(results, r)
		t.Logf("%s: local %v, s3 %v, %v", r.op, r.local.Round(time.Millisecond), r.s3.Round(time.Millisecond), r.counts)
	}
	setup := func(args string) {
		t.Helper()
		run(localWork, local, strings.ReplaceAll(args, "{DELTA}", shared))
		run(s3Work, remote, strings.ReplaceAll(args, "{DELTA}", "s3://bench/delta"))
	}

	setup("namespace create b")
	modes := []struct{ table, props string }{
		{"cow", ""},
		{"pos", "--property write.delete.mode=merge-on-read --property write.update.mode=merge-on-read --property write.merge.mode=merge-on-read"},
		{"dv", "--format-version 3 --property write.delete.mode=merge-on-read --property write.update.mode=merge-on-read --property write.merge.mode=merge-on-read"},
		{"eq", "--property write.merge.mode=merge-on-read"},
	}
	for _, m := range modes {
		setup(fmt.Sprintf(`table create b.%s --schema "%s" --identifier id %s`, m.table, bench.WideColumns, m.props))
	}
	measure(fmt.Sprintf("append %s rows (copy-on-write table)", humanCount(rows)), "table append b.cow {DATA}/rows.parquet")
	for _, m := range modes[1:] {
		setup("table append b." + m.table + " {DATA}/rows.parquet")
	}
	measureRead(fmt.Sprintf("scan %s rows, all columns", humanCount(rows)), "table scan b.cow --output scan.parquet")
	measureRead("scan, 2 of 5 columns, `id < 1000`", `table scan b.cow --where "id < 1000" --columns id,x --output sel.parquet`)
	setup("sync b.pos b.synced --key id")
	for _, m := range modes {
		extra := ""
		if m.table == "eq" {
			extra = " --delete-mode equality"
		}
		measure(fmt.Sprintf("apply %s changes (%s)", humanCount(changes), m.table), "apply b."+m.table+" --changes {DATA}/changes.parquet --key id"+extra)
	}
	measureRead("scan after apply (position deletes)", "table scan b.pos --output scan2.parquet")
	measureRead("changelog of the apply (position deletes)", "changelog b.pos --per-key latest --output ch.parquet")
	measure("incremental sync of the apply", "sync b.pos b.synced --key id")
	measure("Delta sync, 26 versions with DVs", "delta sync {DELTA}/deltars-cdf-table-with-cdc-and-dvs b.d1 --equality-columns id")
	measureRead("Delta changes, checkpointed log", "delta changes {DELTA}/deltars-checkpoint-cdf-table --start-version 4 --output dc.parquet")

	var md strings.Builder
	fmt.Fprintf(&md, "| operation | local | s3 | s3/local | requests | LIST | GET (whole) | GET (range) | HEAD | PUT | POST | DELETE | up | down |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		c := r.counts.Requests
		fmt.Fprintf(&md, "| %s | %.2f s | %.2f s | %.2fx | %d | %d | %d | %d | %d | %d | %d | %d | %s | %s |\n", r.op, r.local.Seconds(), r.s3.Seconds(),
			r.s3.Seconds()/r.local.Seconds(), r.counts.Total(), c["LIST"], c["GET"], c["GET-RANGE"], c["HEAD"], c["PUT"], c["POST"], c["DELETE"],
			mib(r.counts.BytesIn), mib(r.counts.BytesOut))
	}
	fmt.Println(md.String())
	for _, r := range results {
		if len(r.listed) > 0 || len(r.full) > 0 {
			fmt.Printf("%s:\n", r.op)
			sort.Strings(r.listed)
			for _, l := range r.listed {
				fmt.Printf("  %s\n", l)
			}
			if len(r.full) > 0 {
				fmt.Printf("  %d whole-object GETs, e.g. %s\n", len(r.full), r.full[0])
			}
		}
	}
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.FormatInt(n, 10)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// benchSchema is bench.WideColumns as Arrow.
var benchSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

func writeParquet(t *testing.T, path string, schema *arrow.Schema, recs []arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeBenchData(t *testing.T, path string, rows int64) {
	t.Helper()
	recs, err := bench.Generate(benchSchema, rows, 64<<10, 1)
	if err != nil {
		t.Fatal(err)
	}
	writeParquet(t, path, benchSchema, recs)
}

// writeBenchChanges writes n changes: half updates of existing ids (spread
// over the table), a quarter deletes, a quarter inserts of new ids.
func writeBenchChanges(t *testing.T, path string, rows, n int64) {
	t.Helper()
	fields := append(append([]arrow.Field{}, benchSchema.Fields()...), arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String})
	schema := arrow.NewSchema(fields, nil)
	var out []arrow.RecordBatch
	add := func(start, count int64, kind string, stride int64) {
		rec, err := bench.Batch(benchSchema, start, count, 7)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		ids := array.NewInt64Builder(memory.DefaultAllocator)
		kinds := array.NewStringBuilder(memory.DefaultAllocator)
		for i := range count {
			ids.Append(start + i*stride)
			kinds.Append(kind)
		}
		cols := []arrow.Array{ids.NewArray()}
		for c := 1; c < int(rec.NumCols()); c++ {
			col := rec.Column(c)
			col.Retain()
			cols = append(cols, col)
		}
		cols = append(cols, kinds.NewArray())
		out = append(out, array.NewRecordBatch(schema, cols, count))
	}
	stride := rows / (n * 3 / 4)
	if stride < 1 {
		stride = 1
	}
	add(0, n/2, "UPDATE_AFTER", stride)
	add(stride/2, n/4, "DELETE", stride*2)
	add(rows, n/4, "INSERT", 1)
	writeParquet(t, path, schema, out)
}
