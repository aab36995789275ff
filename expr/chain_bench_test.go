package expr

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

// cpuTime is the process's user+system CPU time in nanoseconds: unlike
// wall time it does not count waiting for a core on a shared machine.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkChain times parsing, binding, evaluating (on 1,024 rows) and
// converting to Iceberg chains of NOT, OR and + of 1k, 8k and 30k links:
// the time per link must stay flat (linear growth; issue 12 measured
// 0.76 s for 1,000 NOTs and 8.8 s for 8,000 before binding was fixed).
//
//	go test ./expr -run '^$' -bench BenchmarkChain -benchtime 3x
func BenchmarkChain(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	isc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64})
	bld := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 1024 {
		bld.Append(int64(i % 7))
	}
	col := bld.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1024)
	defer rec.Release()
	ctx := context.Background()
	shapes := []struct {
		name string
		src  func(n int) string
	}{
		{"not", func(n int) string { return strings.Repeat("NOT ", n) + "id = 1" }},
		{"or", func(n int) string { return "id = 0" + strings.Repeat(" OR id = 1", n) }},
		{"add", func(n int) string { return "id" + strings.Repeat(" + 1", n) + " > 0" }},
	}
	for _, s := range shapes {
		for _, n := range []int{1000, 8000, 30000} {
			src := s.src(n)
			b.Run(fmt.Sprintf("%s/%d", s.name, n), func(b *testing.B) {
				cpu0 := cpuTime()
				for b.Loop() {
					e, err := Parse(src)
					if err != nil {
						b.Fatal(err)
					}
					p, err := Compile(e, schema)
					if err != nil {
						b.Fatal(err)
					}
					m, err := p.Mask(ctx, rec)
					if err != nil {
						b.Fatal(err)
					}
					m.Release()
					if _, _, err := ToIceberg(e, isc); err != nil {
						b.Fatal(err)
					}
					_ = e.String()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/link")
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/float64(n), "cpu-ns/link")
			})
		}
	}
}
