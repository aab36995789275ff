package changelog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/rows"
)

var pairSchema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: ChangeTypeColumn, Type: arrow.BinaryTypes.String},
}, nil)

// randomSide makes batches of random rows from a small domain (so that
// rows repeat, NULLs included) of one change type.
func randomSide(rng *rand.Rand, kind string, nBatches int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for range nBatches {
		var data [][]any
		for range 1 + rng.IntN(20) {
			var k any = int64(rng.IntN(12))
			if rng.IntN(10) == 0 {
				k = nil
			}
			var s any = fmt.Sprintf("v%d", rng.IntN(3))
			if rng.IntN(8) == 0 {
				s = nil
			}
			data = append(data, []any{k, s, kind})
		}
		out = append(out, arrowtest.Record(pairSchema, data))
	}
	return out
}

func seqOf(recs []arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}

// counts counts rows by (data values, change type).
func counts(recs []arrow.RecordBatch) map[string][2]int {
	out := map[string][2]int{}
	for _, rec := range recs {
		kinds := rec.Column(2).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			key := string(rows.AppendKey(nil, rec, []int{0, 1}, i))
			c := out[key]
			if kinds.Value(i) == Delete {
				c[0]++
			} else {
				c[1]++
			}
			out[key] = c
		}
	}
	return out
}

// TestPairer checks, over random streams, window budgets and hashes that
// collide, that the pairer only ever cancels a delete with an identical
// insert: per distinct row, it emits at most what came in, and deletes
// minus inserts is unchanged. Without evictions, no distinct row is left
// with both deletes and inserts.
func TestPairer(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 7))
		dels := randomSide(rng, Delete, rng.IntN(6))
		ins := randomSide(rng, Insert, rng.IntN(6))
		budgets := []int64{1, 200, 2000, 1 << 30}
		budget := budgets[seed%4]
		collide := seed%3 == 0
		t.Run(fmt.Sprintf("seed=%d budget=%d collide=%t", seed, budget, collide), func(t *testing.T) {
			var got []arrow.RecordBatch
			p := newPairer(context.Background(), []int{0, 1}, budget, func(_ int, rec arrow.RecordBatch) error {
				got = append(got, rec)
				return nil
			})
			if collide {
				p.hash = collidingHash
			}
			if err := p.run(seqOf(dels), seqOf(ins)); err != nil {
				t.Fatal(err)
			}
			in := counts(append(append([]arrow.RecordBatch{}, dels...), ins...))
			out := counts(got)
			for key, o := range out {
				i := in[key]
				if o[0] > i[0] || o[1] > i[1] {
					t.Fatalf("row %q: emitted %v, only %v came in", key, o, i)
				}
			}
			for key, i := range in {
				o := out[key]
				if i[0]-i[1] != o[0]-o[1] {
					t.Fatalf("row %q: in %v, out %v: not an exact cancellation", key, i, o)
				}
				if budget == 1<<30 && o[0] > 0 && o[1] > 0 {
					t.Fatalf("row %q: %v left uncancelled without any eviction", key, o)
				}
			}
			if p.held != 0 || p.sides[0].head.len()+p.sides[1].head.len() != 0 {
				t.Fatalf("after the run: %d bytes held, %d+%d index entries", p.held, p.sides[0].head.len(), p.sides[1].head.len())
			}
			for _, r := range got {
				r.Release()
			}
		})
		for _, r := range append(dels, ins...) {
			r.Release()
		}
	}
}

// TestPairerErrors checks that an error of either stream or of emit ends
// the run with that error.
func TestPairerErrors(t *testing.T) {
	boom := errors.New("boom")
	rng := rand.New(rand.NewPCG(1, 2))
	dels := randomSide(rng, Delete, 3)
	ins := randomSide(rng, Insert, 3)
	defer func() {
		for _, r := range append(dels, ins...) {
			r.Release()
		}
	}()
	failing := func(recs []arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range seqOf(recs[:1]) {
				if !yield(rec, err) {
					return
				}
			}
			yield(nil, boom)
		}
	}
	ok := func(int, arrow.RecordBatch) error { return nil }
	for name, run := range map[string]func() error{
		"deletes fail": func() error {
			return newPairer(context.Background(), []int{0, 1}, 1<<30, ok).run(failing(dels), seqOf(ins))
		},
		"inserts fail": func() error {
			return newPairer(context.Background(), []int{0, 1}, 1<<30, ok).run(seqOf(dels), failing(ins))
		},
		"emit fails": func() error {
			return newPairer(context.Background(), []int{0, 1}, 1, func(_ int, rec arrow.RecordBatch) error {
				rec.Release()
				return boom
			}).run(seqOf(dels), seqOf(ins))
		},
	} {
		if err := run(); !errors.Is(err, boom) {
			t.Errorf("%s: err = %v, want boom", name, err)
		}
	}
}

// TestPairerAlignedRewrite models a copy-on-write rewrite: the inserts are
// the deletes minus a few rows, in the same order but cut into batches
// differently. Only the removed rows come out, and the window holds only
// the batches with removed rows and the couple being matched, however
// long the files are.
func TestPairerAlignedRewrite(t *testing.T) {
	const n = 5000
	removed := map[int]bool{3: true, 1200: true, 1201: true, 4999: true}
	batch := func(kind string, from, to int, skip map[int]bool) arrow.RecordBatch {
		var data [][]any
		for i := from; i < to; i++ {
			if !skip[i] {
				data = append(data, []any{int64(i), fmt.Sprintf("row %d", i), kind})
			}
		}
		return arrowtest.Record(pairSchema, data)
	}
	var dels, ins []arrow.RecordBatch
	for i := 0; i < n; i += 300 {
		dels = append(dels, batch(Delete, i, min(i+300, n), nil))
	}
	for i := 0; i < n; i += 170 {
		ins = append(ins, batch(Insert, i, min(i+170, n), removed))
	}
	defer func() {
		for _, r := range append(dels, ins...) {
			r.Release()
		}
	}()
	var got []arrow.RecordBatch
	p := newPairer(context.Background(), []int{0, 1}, 1<<30, func(_ int, rec arrow.RecordBatch) error {
		got = append(got, rec)
		return nil
	})
	longest := 0
	watch := func(seq iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range seq {
				held := 0
				for _, side := range p.sides {
					for _, b := range side.queue {
						if b.rec != nil {
							held++
						} else if b.hashes != nil || b.alive != nil {
							t.Fatal("a fully matched batch keeps its hashes")
						}
					}
				}
				longest = max(longest, held)
				if !yield(rec, err) {
					return
				}
			}
		}
	}
	if err := p.run(watch(seqOf(dels)), watch(seqOf(ins))); err != nil {
		t.Fatal(err)
	}
	want := []string{"(1200,'row 1200','DELETE')", "(1201,'row 1201','DELETE')", "(3,'row 3','DELETE')", "(4999,'row 4999','DELETE')"}
	if g := arrowtest.Strings(got...); fmt.Sprint(g) != fmt.Sprint(want) {
		t.Errorf("emitted %v, want %v", g, want)
	}
	if longest > 5 {
		t.Errorf("the window held %d batches on an aligned rewrite", longest)
	}
	for _, r := range got {
		r.Release()
	}
}

// collidingHash gives every row the same hash, so that every lookup meets
// every unmatched row and only the value comparison tells them apart.
func collidingHash(_ arrow.RecordBatch, _ []int, lo, hi int, out []uint64) []uint64 {
	out = out[:hi-lo]
	clear(out)
	return out
}
