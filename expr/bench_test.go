package expr

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

const benchRows = 1 << 20

// benchBatch builds 1M rows: id int64, data string (one of 10 values), price
// as double and as decimal(10,2), with 5% NULLs in every column.
func benchBatch(b *testing.B) arrow.RecordBatch {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "data", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dprice", Type: decType(10, 2), Nullable: true},
	}, nil)
	ib := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	fb := array.NewFloat64Builder(mem)
	db := array.NewDecimal128Builder(mem, decType(10, 2))
	words := []string{"x", "y", "z", "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"}
	for i := 0; i < benchRows; i++ {
		null := r.IntN(20) == 0
		if null {
			ib.AppendNull()
			sb.AppendNull()
			fb.AppendNull()
			db.AppendNull()
			continue
		}
		ib.Append(int64(r.IntN(10)))
		sb.Append(words[r.IntN(len(words))])
		cents := int64(r.IntN(2000))
		fb.Append(float64(cents) / 100)
		db.Append(decimal128.FromI64(cents))
	}
	cols := []arrow.Array{ib.NewArray(), sb.NewArray(), fb.NewArray(), db.NewArray()}
	rec := array.NewRecordBatch(schema, cols, benchRows)
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func BenchmarkEval(b *testing.B) {
	rec := benchBatch(b)
	defer rec.Release()
	ctx := context.Background()
	for _, src := range []string{
		"id > 5 AND data = 'x'",
		"price * 2 > 10",
		"dprice * 2 > 10",
		"id IN (1, 3, 5) OR data LIKE 'a%'",
		"CASE WHEN id > 5 THEN price ELSE -price END",
		"COALESCE(data, 'none') || '!'",
	} {
		e, err := Parse(src)
		if err != nil {
			b.Fatal(err)
		}
		prog, err := Compile(e, rec.Schema())
		if err != nil {
			b.Fatal(err)
		}
		run := func(name string, f func() (interface{ Release() }, error)) {
			b.Run(fmt.Sprintf("%s/%s", name, src), func(b *testing.B) {
				for b.Loop() {
					out, err := f()
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
				}
				b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
		run("eval", func() (interface{ Release() }, error) { return prog.Eval(ctx, rec) })
		if prog.Type().ID() == arrow.BOOL {
			run("filter", func() (interface{ Release() }, error) { return prog.Filter(ctx, rec) })
		}
	}
}
