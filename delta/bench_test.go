package delta_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

const (
	benchFiles       = 8
	benchRowsPerFile = 128 * 1024
)

// benchTable writes a CDF-enabled table of benchFiles appends of
// benchRowsPerFile rows each (id long, name string, amount double,
// ts timestamp, flag boolean, partitioned by a string column), one commit
// per file, and returns its root and data file paths.
func benchTable(b *testing.B) (string, []string) {
	b.Helper()
	dir := b.TempDir()
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		b.Fatal(err)
	}
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	data := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "ts", Type: ts, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	full := arrow.NewSchema(append(data.Fields(), arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	meta, err := deltatest.Metadata(full, []string{"region"}, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := w.Commit(deltatest.CommitInfo{Timestamp: time.Unix(1700000000, 0), Operation: "CREATE TABLE"},
		delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, meta); err != nil {
		b.Fatal(err)
	}
	var paths []string
	for f := 0; f < benchFiles; f++ {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, data)
		for i := 0; i < benchRowsPerFile; i++ {
			id := int64(f*benchRowsPerFile + i)
			bld.Field(0).(*array.Int64Builder).Append(id)
			bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer-%07d", id%500000))
			bld.Field(2).(*array.Float64Builder).Append(float64(id%10000) / 100)
			bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + id*1000))
			bld.Field(4).(*array.BooleanBuilder).Append(id%3 == 0)
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		region := fmt.Sprintf("r%d", f%4)
		rel := fmt.Sprintf("region=%s/part-%05d.parquet", region, f)
		add, err := w.WriteData(rel, rec)
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		add.PartitionValues = map[string]*string{"region": &region}
		if _, err := w.Commit(deltatest.CommitInfo{Timestamp: time.Unix(1700000000+int64(f+1)*60, 0), Operation: "WRITE"}, add); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, filepath.FromSlash(rel)))
	}
	return dir, paths
}

func reportRate(b *testing.B, rows int64) {
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// readPlain reads files with pqarrow, all columns, in batches of
// delta.DefaultBatchSize rows, and returns the row count: the baseline.
func readPlain(b *testing.B, paths []string) int64 {
	ctx := context.Background()
	var rows int64
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := f.Stat()
		pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, st.Size()))
		if err != nil {
			b.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: delta.DefaultBatchSize}, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		for rr.Next() {
			rows += rr.RecordBatch().NumRows()
		}
		rr.Release()
		pf.Close()
		f.Close()
	}
	return rows
}

// readChangeFeed reads the whole change data feed and returns the row count.
func readChangeFeed(b *testing.B, tbl *delta.Table) int64 {
	var rows int64
	_, seq, err := tbl.Changes(context.Background(), delta.ChangesOptions{Start: delta.AtVersion(0)})
	if err != nil {
		b.Fatal(err)
	}
	for batch, err := range seq {
		if err != nil {
			b.Fatal(err)
		}
		rows += batch.NumRows()
		batch.Release()
	}
	if rows != benchFiles*benchRowsPerFile {
		b.Fatalf("read %d rows, want %d", rows, benchFiles*benchRowsPerFile)
	}
	return rows
}

// BenchmarkPlainParquetRead reads the table's data files with pqarrow.
func BenchmarkPlainParquetRead(b *testing.B) {
	_, paths := benchTable(b)
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows = readPlain(b, paths)
	}
	reportRate(b, rows)
}

// BenchmarkChanges reads the change data feed of the whole table (every row
// an insert, with the partition and the three change data columns).
func BenchmarkChanges(b *testing.B) {
	dir, _ := benchTable(b)
	tbl, err := delta.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows = readChangeFeed(b, tbl)
	}
	reportRate(b, rows)
}

// BenchmarkChangesVsPlain alternates a plain Parquet read of the data files
// and a change data read of the same table in every iteration, so both see
// the same machine load, and reports both rates and their ratio
// (cdf/plain; the goal is at least 0.8).
func BenchmarkChangesVsPlain(b *testing.B) {
	dir, paths := benchTable(b)
	tbl, err := delta.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	var plain, cdf time.Duration
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// NB: alternate which read goes first, so neither always runs on
		// a cold cache or right after the other's garbage.
		for j := 0; j < 2; j++ {
			start := time.Now()
			if (i+j)%2 == 0 {
				rows = readPlain(b, paths)
				plain += time.Since(start)
			} else {
				if got := readChangeFeed(b, tbl); rows != 0 && got != rows {
					b.Fatalf("change feed has %d rows, the files %d", got, rows)
				}
				cdf += time.Since(start)
			}
		}
	}
	n := float64(rows) * float64(b.N)
	b.ReportMetric(n/plain.Seconds(), "plain-rows/s")
	b.ReportMetric(n/cdf.Seconds(), "cdf-rows/s")
	b.ReportMetric(plain.Seconds()/cdf.Seconds(), "cdf/plain")
}

// BenchmarkSnapshotScan reads the latest snapshot of the same table.
func BenchmarkSnapshotScan(b *testing.B) {
	dir, _ := benchTable(b)
	ctx := context.Background()
	tbl, err := delta.Open(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	var rows int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rows = 0
		s, err := tbl.LatestSnapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		_, seq, err := s.Scan(ctx, delta.ScanOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for batch, err := range seq {
			if err != nil {
				b.Fatal(err)
			}
			rows += batch.NumRows()
			batch.Release()
		}
	}
	reportRate(b, rows)
}
