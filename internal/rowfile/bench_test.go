package rowfile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The benchmark data: 1M rows of (long, string, decimal(10,2), timestamptz,
// double, date), in batches of 8192, and that data in every format.
const benchRows = 1 << 20

const benchSchema = `
id long not null
name string
price decimal(10,2)
ts timestamptz
score double
day date
`

var bench struct {
	once    sync.Once
	schema  *arrow.Schema
	batches []arrow.RecordBatch
	files   map[OutputFormat][]byte
}

func benchData(b *testing.B) {
	b.Helper()
	bench.once.Do(func() {
		bench.schema = mustSchema(b, benchSchema)
		r := rand.New(rand.NewPCG(7, 7))
		rb := array.NewRecordBuilder(memory.DefaultAllocator, bench.schema)
		defer rb.Release()
		names := []string{"alice", "bob", "carol", "dave", "eve, the \"quoted\"", "frank"}
		for row := 0; row < benchRows; row++ {
			rb.Field(0).(*array.Int64Builder).Append(int64(row))
			if row%10 == 0 {
				rb.Field(1).AppendNull()
			} else {
				rb.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", names[row%len(names)], row))
			}
			rb.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(r.Int64N(10_000_000)))
			rb.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + r.Int64N(1e14)))
			rb.Field(4).(*array.Float64Builder).Append(r.Float64() * 1000)
			rb.Field(5).(*array.Date32Builder).Append(arrow.Date32(19000 + r.IntN(1000)))
			if (row+1)%8192 == 0 {
				bench.batches = append(bench.batches, rb.NewRecordBatch())
			}
		}
		bench.files = map[OutputFormat][]byte{}
		for _, f := range []OutputFormat{OutputCSV, OutputJSONL, OutputParquet} {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, f, bench.schema)
			if err != nil {
				b.Fatal(err)
			}
			for _, rec := range bench.batches {
				if err := w.Write(rec); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			bench.files[f] = buf.Bytes()
		}
	})
}

// BenchmarkRead reads 1M rows of the benchmark schema from each format.
func BenchmarkRead(b *testing.B) {
	benchData(b)
	for _, f := range []struct {
		out OutputFormat
		in  Format
	}{{OutputCSV, FormatCSV}, {OutputJSONL, FormatJSONL}, {OutputParquet, FormatParquet}} {
		b.Run(f.in.String(), func(b *testing.B) {
			data := bench.files[f.out]
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r, err := NewReader(context.Background(), bytes.NewReader(data), "bench",
					ReadOptions{Target: bench.schema, Format: f.in})
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				for r.Next() {
					n += r.RecordBatch().NumRows()
				}
				if r.Err() != nil || n != benchRows {
					b.Fatalf("rows %d err %v", n, r.Err())
				}
				r.Close()
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkWrite writes 1M rows of the benchmark schema in each format.
func BenchmarkWrite(b *testing.B) {
	benchData(b)
	for _, f := range []OutputFormat{OutputCSV, OutputJSONL, OutputJSON, OutputParquet, OutputTable} {
		b.Run(f.String(), func(b *testing.B) {
			for b.Loop() {
				w, err := NewWriter(io.Discard, f, bench.schema)
				if err != nil {
					b.Fatal(err)
				}
				for _, rec := range bench.batches {
					if err := w.Write(rec); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
