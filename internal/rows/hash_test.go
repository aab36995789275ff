package rows_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

// keyRecord builds random rows over a small domain, so that keys repeat,
// with NULLs, NaN, -0 and 0 among the doubles, and a nested column that
// takes the encoding fallback.
func keyRecord(rng *rand.Rand, n int, narrow bool) arrow.RecordBatch {
	intType := arrow.DataType(arrow.PrimitiveTypes.Int64)
	strType := arrow.DataType(arrow.BinaryTypes.String)
	if narrow {
		intType, strType = arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.LargeString
	}
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: intType, Nullable: true},
		{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "s", Type: strType, Nullable: true},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
		{Name: "t", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sch)
	defer b.Release()
	floats := []float64{0, math.Copysign(0, -1), math.NaN(), 1.5, -1}
	for range n {
		null := func() bool { return rng.IntN(6) == 0 }
		v := int64(rng.IntN(3)) - 1
		switch fb := b.Field(0).(type) {
		case *array.Int64Builder:
			if null() {
				fb.AppendNull()
			} else {
				fb.Append(v)
			}
		case *array.Int32Builder:
			if null() {
				fb.AppendNull()
			} else {
				fb.Append(int32(v))
			}
		}
		if null() {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.Float64Builder).Append(floats[rng.IntN(len(floats))])
		}
		s := fmt.Sprintf("s%d", rng.IntN(2))
		switch fb := b.Field(2).(type) {
		case *array.StringBuilder:
			if null() {
				fb.AppendNull()
			} else {
				fb.Append(s)
			}
		case *array.LargeStringBuilder:
			if null() {
				fb.AppendNull()
			} else {
				fb.Append(s)
			}
		}
		if null() {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(rng.IntN(2))))
		}
		if null() {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(rng.IntN(2)))
		}
		if null() {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.BooleanBuilder).Append(rng.IntN(2) == 0)
		}
		lb := b.Field(6).(*array.ListBuilder)
		if null() {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for range rng.IntN(2) {
				lb.ValueBuilder().(*array.Int64Builder).Append(int64(rng.IntN(2)))
			}
		}
	}
	return b.NewRecordBatch()
}

// TestHashKeysAndKeysEqual checks, for every pair of rows of random
// records (also across records whose columns differ in integer width and
// string kind), that KeysEqual agrees with comparing AppendKey encodings
// and that equal keys hash alike.
func TestHashKeysAndKeysEqual(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	wide := keyRecord(rng, 120, false)
	defer wide.Release()
	narrow := keyRecord(rng, 80, true)
	defer narrow.Release()
	for _, cols := range [][]int{{0}, {1}, {2}, {3, 4, 5}, {0, 1, 2, 3, 4, 5}, {6}, {2, 6, 1}} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			recs := []arrow.RecordBatch{wide, narrow}
			hashes := [][]uint64{rows.HashKeys(wide, cols, nil), rows.HashKeys(narrow, cols, make([]uint64, 3))}
			equalPairs, distinct := 0, map[string]uint64{}
			for a, ra := range recs {
				for i := 0; i < int(ra.NumRows()); i++ {
					ka := string(rows.AppendKey(nil, ra, cols, i))
					distinct[ka] = hashes[a][i]
					for b, rb := range recs {
						for j := 0; j < int(rb.NumRows()); j++ {
							kb := string(rows.AppendKey(nil, rb, cols, j))
							eq := rows.KeysEqual(ra, i, rb, j, cols)
							if eq != (ka == kb) {
								t.Fatalf("rows %d/%d and %d/%d: KeysEqual %t, encodings equal %t", a, i, b, j, eq, ka == kb)
							}
							if eq {
								equalPairs++
								if hashes[a][i] != hashes[b][j] {
									t.Fatalf("rows %d/%d and %d/%d are equal but hash %x and %x", a, i, b, j, hashes[a][i], hashes[b][j])
								}
							}
						}
					}
				}
			}
			seen := map[uint64]bool{}
			for _, h := range distinct {
				if seen[h] {
					t.Fatalf("two of %d distinct keys share a hash", len(distinct))
				}
				seen[h] = true
			}
			if len(distinct) < 2 || equalPairs <= int(wide.NumRows()+narrow.NumRows()) {
				t.Fatalf("degenerate data: %d distinct keys, %d equal pairs", len(distinct), equalPairs)
			}
		})
	}
}

// TestHashKeysSpread checks that the low bits, which choose partitions,
// spread distinct integer keys evenly.
func TestHashKeysSpread(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 64_000 {
		b.Append(int64(i))
	}
	arr := b.NewArray()
	b.Release()
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec := array.NewRecordBatch(sch, []arrow.Array{arr}, int64(arr.Len()))
	arr.Release()
	defer rec.Release()
	var buckets [64]int
	for _, h := range rows.HashKeys(rec, []int{0}, nil) {
		buckets[h%64]++
	}
	for i, n := range buckets {
		if n < 800 || n > 1200 {
			t.Fatalf("bucket %d holds %d of 64000 keys, want about 1000: %v", i, n, buckets)
		}
	}
}

func TestHashInt(t *testing.T) {
	vals := []int64{0, 1, -1, 42, 1 << 40, -1 << 62}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(vals, nil)
	a := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{a}, int64(len(vals)))
	a.Release()
	defer rec.Release()
	for i, h := range rows.HashKeys(rec, []int{0}, nil) {
		if got := rows.HashInt(vals[i]); got != h {
			t.Errorf("HashInt(%d) = %x, HashKeys %x", vals[i], got, h)
		}
	}
}
