package rows_test

import (
	"context"
	"fmt"
	"math"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

// TestPartitionerSpills: with a tiny budget the partitioner spills to disk,
// and every row comes back exactly once, with equal keys in one partition.
func TestPartitionerSpills(t *testing.T) {
	for _, budget := range []int64{1 << 10, 1 << 30} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			schema := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
			p := rows.NewPartitioner(schema, []int{0}, budget, t.TempDir())
			defer p.Close()
			want := map[string]int{}
			for batch := 0; batch < 20; batch++ {
				b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
				for i := 0; i < 500; i++ {
					k := int64((batch*500 + i) % 777)
					b.Field(0).(*array.Int64Builder).Append(k)
					if i%7 == 0 {
						b.Field(1).AppendNull()
					} else {
						b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("v", i))
					}
				}
				rec := b.NewRecordBatch()
				b.Release()
				for i := 0; i < int(rec.NumRows()); i++ {
					want[rows.FormatRow(rec, i)]++
				}
				if err := p.Add(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
			}
			if budget < 1<<20 && !p.Spilled() {
				t.Fatal("a 1 KiB budget must spill")
			}
			if budget > 1<<20 && p.Spilled() {
				t.Fatal("a large budget must not spill")
			}
			got := map[string]int{}
			keyPart := map[string]int{}
			part := 0
			for recs, err := range p.Partitions() {
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					for i := 0; i < int(r.NumRows()); i++ {
						got[rows.FormatRow(r, i)]++
						k := r.Column(0).ValueStr(i)
						if q, ok := keyPart[k]; ok && q != part {
							t.Fatalf("key %s in partitions %d and %d", k, q, part)
						}
						keyPart[k] = part
					}
					r.Release()
				}
				part++
			}
			if len(got) != len(want) {
				t.Fatalf("%d distinct rows back, want %d", len(got), len(want))
			}
			var diff []string
			for k, n := range want {
				if got[k] != n {
					diff = append(diff, k)
				}
			}
			sort.Strings(diff)
			if len(diff) > 0 {
				t.Fatalf("rows differ: %v", diff[:min(5, len(diff))])
			}
		})
	}
}

func TestAppendKeyEquality(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "b", Type: arrow.PrimitiveTypes.Float64, Nullable: true}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int32Builder).AppendValues([]int32{1, 1, 0, 0}, []bool{true, true, false, false})
	b.Field(1).(*array.Float64Builder).AppendValues([]float64{0, math.Copysign(0, -1), 2, 3}, []bool{true, true, true, true})
	rec := b.NewRecordBatch()
	defer rec.Release()
	k := func(i int) string { return string(rows.AppendKey(nil, rec, []int{0, 1}, i)) }
	if k(0) != k(1) {
		t.Error("0 and -0 must encode alike")
	}
	if k(2) == k(3) {
		t.Error("different values must differ")
	}
	if string(rows.AppendKey(nil, rec, []int{0}, 2)) != string(rows.AppendKey(nil, rec, []int{0}, 3)) {
		t.Error("NULL must equal NULL")
	}
}
