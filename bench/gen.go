// Package bench holds floe's performance benchmarks and the helpers they
// share with the programs under bench/cmd: deterministic Arrow data, a
// scratch embedded catalog, and table set-ups (appends, copy-on-write and
// merge-on-read deletes).
//
// The benchmarks live in _test.go files, so `go test ./...` compiles them
// without running them; run them with `go test -bench` or with
// bench/run.sh, which interleaves the variants over several rounds and
// reports medians, spreads and ratios (see docs/benchmarks.md). Nothing in
// this package does work at init.
package bench

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Column lists of the benchmark tables, in the syntax of ddl.ParseSchema.
const (
	// WideColumns is the foundation benchmarks' schema: a key, a string,
	// a decimal, a timestamp with zone and a double.
	WideColumns = "id long not null, name string, amount decimal(10,2), ts timestamptz, x double"
	// NarrowColumns is the memory benchmark's schema.
	NarrowColumns = "id long not null, name string, x double"
)

// Days is the number of distinct days the generated ts column spans, so
// a table partitioned by day(ts) has this many partitions.
const Days = 16

// baseTime is the first instant of the generated ts column.
var baseTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Batch generates rows start..start+n-1 of schema. The values depend only
// on (seed, start, n), so a data set generated in the same batches is the
// same on every run. Column kinds: int64 columns hold the row number (a
// unique key), strings are 6 to 20 letters, decimals are amounts up to
// 1,000,000.00, timestamps fall within Days days from 2024-01-01 UTC,
// doubles are normally distributed. Another column type is an error.
func Batch(schema *arrow.Schema, start, n int64, seed uint64) (arrow.RecordBatch, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(start)))
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Reserve(int(n))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var buf [20]byte
	for c, f := range schema.Fields() {
		switch fb := b.Field(c).(type) {
		case *array.Int64Builder:
			for i := range n {
				fb.UnsafeAppend(start + i)
			}
		case *array.StringBuilder:
			fb.ReserveData(int(n) * 13)
			for range n {
				l := 6 + rng.IntN(15)
				for j := range l {
					buf[j] = letters[rng.IntN(len(letters))]
				}
				fb.BinaryBuilder.Append(buf[:l])
			}
		case *array.Decimal128Builder:
			for range n {
				fb.UnsafeAppend(decimal128.FromI64(rng.Int64N(100_000_000)))
			}
		case *array.TimestampBuilder:
			unit := f.Type.(*arrow.TimestampType).Unit
			span := int64(Days*24*time.Hour) / int64(unit.Multiplier())
			base := baseTime.UnixNano() / int64(unit.Multiplier())
			for range n {
				fb.UnsafeAppend(arrow.Timestamp(base + rng.Int64N(span)))
			}
		case *array.Float64Builder:
			for range n {
				fb.UnsafeAppend(rng.NormFloat64() * 100)
			}
		default:
			return nil, fmt.Errorf("bench: column %s has type %s, which the generator does not produce", f.Name, f.Type)
		}
	}
	return b.NewRecordBatch(), nil
}

// Stream yields total generated rows of schema in batches of batchRows
// (the last one may be shorter), generating each batch only when it is
// asked for, so memory stays at one batch. The caller releases each batch.
func Stream(schema *arrow.Schema, total int64, batchRows int, seed uint64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for start := int64(0); start < total; start += int64(batchRows) {
			rec, err := Batch(schema, start, min(int64(batchRows), total-start), seed)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// Generate returns total generated rows of schema as batches of
// batchRows, held in memory (see Stream for the values). The caller
// releases them.
func Generate(schema *arrow.Schema, total int64, batchRows int, seed uint64) ([]arrow.RecordBatch, error) {
	var out []arrow.RecordBatch
	for rec, err := range Stream(schema, total, batchRows, seed) {
		if err != nil {
			Release(out)
			return nil, err
		}
		out = append(out, rec)
	}
	return out, nil
}

// Release releases every batch of recs.
func Release(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// Replay returns a producer of recs for tableops.Append and
// table.WriteRecords, which release what they are given: each batch is
// retained before it is yielded, so recs stay usable.
func Replay(recs []arrow.RecordBatch) func() iter.Seq2[arrow.RecordBatch, error] {
	return func() iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) {
			for _, r := range recs {
				r.Retain()
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}
