package changelog

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

var alignedSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
}, nil)

// alignedRow is one row of alignedSchema; nil fields are NULL.
type alignedRow struct {
	k *int64
	f *float64
	s *string
	b *bool
}

// batches cuts rows into records of random sizes.
func alignedBatches(rng *rand.Rand, rs []alignedRow) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for len(rs) > 0 {
		n := min(len(rs), 1+rng.IntN(300))
		bld := array.NewRecordBuilder(memory.DefaultAllocator, alignedSchema)
		for _, r := range rs[:n] {
			kb := bld.Field(0).(*array.Int64Builder)
			if r.k == nil {
				kb.AppendNull()
			} else {
				kb.Append(*r.k)
			}
			fb := bld.Field(1).(*array.Float64Builder)
			if r.f == nil {
				fb.AppendNull()
			} else {
				fb.Append(*r.f)
			}
			sb := bld.Field(2).(*array.StringBuilder)
			if r.s == nil {
				sb.AppendNull()
			} else {
				sb.Append(*r.s)
			}
			bb := bld.Field(3).(*array.BooleanBuilder)
			if r.b == nil {
				bb.AppendNull()
			} else {
				bb.Append(*r.b)
			}
		}
		out = append(out, bld.NewRecordBatch())
		bld.Release()
		rs = rs[n:]
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// randomAlignedRow draws a row from a small domain, so that rows repeat:
// NULLs in every column, and the floats NaN (two bit patterns), -0 and 0,
// which the pairer's equality treats as equal.
func randomAlignedRow(rng *rand.Rand, wide bool) alignedRow {
	var r alignedRow
	dom := 6
	if wide {
		dom = 1 << 30
	}
	if rng.IntN(12) != 0 {
		r.k = ptr(int64(rng.IntN(dom)))
	}
	switch rng.IntN(8) {
	case 0:
	case 1:
		r.f = ptr(math.NaN())
	case 2:
		r.f = ptr(math.Float64frombits(0x7ff8000000000001)) // another NaN
	case 3:
		r.f = ptr(math.Copysign(0, -1))
	case 4:
		r.f = ptr(0.0)
	default:
		r.f = ptr(float64(rng.IntN(3)) / 2)
	}
	if rng.IntN(9) != 0 {
		r.s = ptr(fmt.Sprintf("s%d", rng.IntN(3)))
	}
	if rng.IntN(7) != 0 {
		r.b = ptr(rng.IntN(2) == 0)
	}
	return r
}

// rewriteOf makes the new file's rows from the old file's: mode aligned
// keeps the order and drops, changes or adds a few rows; shifted inserts a
// block of new rows first; reordered moves blocks around; duplicated
// repeats rows; shuffled is a random permutation.
func rewriteOf(rng *rand.Rand, old []alignedRow, mode string, wide bool) []alignedRow {
	var out []alignedRow
	switch mode {
	case "shifted":
		for range 1 + rng.IntN(40) {
			out = append(out, randomAlignedRow(rng, wide))
		}
		fallthrough
	case "aligned":
		for _, r := range old {
			switch rng.IntN(50) {
			case 0: // deleted
			case 1: // updated
				u := r
				u.s = ptr(fmt.Sprintf("u%d", rng.IntN(2)))
				out = append(out, u)
			case 2: // inserted beside
				out = append(out, r, randomAlignedRow(rng, wide))
			default:
				out = append(out, r)
			}
		}
	case "reordered":
		out = slices.Clone(old)
		for range 1 + rng.IntN(4) {
			if len(out) < 2 {
				break
			}
			i := rng.IntN(len(out))
			j := i + rng.IntN(len(out)-i)
			block := slices.Clone(out[i:j])
			out = slices.Delete(out, i, j)
			at := rng.IntN(len(out) + 1)
			out = slices.Insert(out, at, block...)
		}
	case "duplicated":
		for _, r := range old {
			out = append(out, r)
			if rng.IntN(10) == 0 {
				out = append(out, r)
			}
		}
	case "shuffled":
		out = slices.Clone(old)
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out
}

// pairAll runs a pairer over dels and ins and counts what it emits by
// (row, side).
func pairAll(t *testing.T, dels, ins []arrow.RecordBatch, budget int64, aligned, collide bool) (map[string][2]int, int64) {
	t.Helper()
	out := map[string][2]int{}
	cols := []int{0, 1, 2, 3}
	p := newPairer(context.Background(), cols, budget, func(side int, rec arrow.RecordBatch) error {
		for i := range int(rec.NumRows()) {
			key := string(rows.AppendKey(nil, rec, cols, i))
			c := out[key]
			c[side]++
			out[key] = c
		}
		rec.Release()
		return nil
	})
	p.aligned = aligned
	if collide {
		p.hash = collidingHash
	}
	if err := p.run(seqOf(dels), seqOf(ins)); err != nil {
		t.Fatal(err)
	}
	if p.held != 0 || p.sides[0].head.len()+p.sides[1].head.len() != 0 {
		t.Fatalf("after the run: %d bytes held, %d+%d index entries", p.held, p.sides[0].head.len(), p.sides[1].head.len())
	}
	return out, p.runRows
}

func rowCounts(recs []arrow.RecordBatch, side int, into map[string][2]int) {
	cols := []int{0, 1, 2, 3}
	for _, rec := range recs {
		for i := range int(rec.NumRows()) {
			key := string(rows.AppendKey(nil, rec, cols, i))
			c := into[key]
			c[side]++
			into[key] = c
		}
	}
}

// TestPairerAlignedAgrees checks the aligned path against the hash path
// alone (the pairing as it was) over random rewrites: aligned, shifted,
// reordered, duplicated and shuffled rows, NULLs, NaN, -0 and 0, batches
// cut differently on both sides, hashes that collide, tiny windows. With
// a window that never evicts both must emit exactly the same rows: per
// distinct row, the surplus of its deletes over its inserts or the
// reverse. With evictions, each must still cancel only identical pairs.
func TestPairerAlignedAgrees(t *testing.T) {
	modes := []string{"aligned", "shifted", "reordered", "duplicated", "shuffled"}
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 41))
		mode := modes[seed%uint64(len(modes))]
		wide := seed%2 == 0
		collide := seed%7 == 3
		budget := []int64{1 << 30, 1 << 30, 5000, 1}[seed%4]
		t.Run(fmt.Sprintf("seed=%d mode=%s wide=%t collide=%t budget=%d", seed, mode, wide, collide, budget), func(t *testing.T) {
			var old []alignedRow
			for range rng.IntN(2000) {
				old = append(old, randomAlignedRow(rng, wide))
			}
			dels := alignedBatches(rng, old)
			ins := alignedBatches(rng, rewriteOf(rng, old, mode, wide))
			defer func() {
				for _, r := range append(dels, ins...) {
					r.Release()
				}
			}()
			in := map[string][2]int{}
			rowCounts(dels, 0, in)
			rowCounts(ins, 1, in)
			fast, runRows := pairAll(t, dels, ins, budget, true, collide)
			slow, slowRuns := pairAll(t, dels, ins, budget, false, collide)
			if slowRuns != 0 {
				t.Fatalf("the hash path alone cancelled %d rows as aligned", slowRuns)
			}
			if (mode == "aligned" || mode == "duplicated" || mode == "shifted") && len(old) > 200 && runRows < int64(len(old))/2 {
				t.Fatalf("an %s rewrite of %d rows: only %d cancelled by the aligned path", mode, len(old), runRows)
			}
			for name, out := range map[string]map[string][2]int{"aligned": fast, "hash only": slow} {
				for key, i := range in {
					o := out[key]
					if o[0] > i[0] || o[1] > i[1] || i[0]-i[1] != o[0]-o[1] {
						t.Fatalf("%s: row %q: in %v, out %v: not an exact cancellation", name, key, i, o)
					}
				}
				for key := range out {
					if _, ok := in[key]; !ok {
						t.Fatalf("%s: emitted row %q that never came in", name, key)
					}
				}
			}
			if budget == 1<<30 {
				clean := func(m map[string][2]int) map[string][2]int {
					maps.DeleteFunc(m, func(_ string, c [2]int) bool { return c == [2]int{} })
					return m
				}
				if !maps.Equal(clean(fast), clean(slow)) {
					t.Fatalf("without evictions the aligned path emitted %v, the hash path %v", fast, slow)
				}
			}
		})
	}
}
