package changelog

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/rows"
)

// scatteredRewrite makes the two sides of a copy-on-write update of every
// 100th of n rows, in batches of batch rows: the old rows, and the new
// ones with the updated rows changed; with moved, row 3 (not updated) is
// also taken out of the first batch of the new side and put at its end.
func scatteredRewrite(n, batch int, moved bool) (dels, ins []arrow.RecordBatch) {
	var old, upd [][]any
	for i := range n {
		old = append(old, []any{int64(i), fmt.Sprintf("v%d", i), Delete})
		if moved && i == 3 {
			continue
		}
		s := fmt.Sprintf("v%d", i)
		if i%100 == 7 {
			s += "+"
		}
		upd = append(upd, []any{int64(i), s, Insert})
	}
	if moved {
		upd = append(upd, []any{int64(3), "v3", Insert})
	}
	cut := func(data [][]any) []arrow.RecordBatch {
		var out []arrow.RecordBatch
		for lo := 0; lo < len(data); lo += batch {
			out = append(out, arrowtest.Record(pairSchema, data[lo:min(lo+batch, len(data))]))
		}
		return out
	}
	return cut(old), cut(upd)
}

// TestPairerCompactsSparseBatches pins that a batch done with few
// unmatched rows is kept as those rows only: after a scattered update
// the window holds the updated rows and the batches being matched, not
// whole queued batches, so a budget of four batches (of ten per side)
// never evicts, and a row moved from the first batch to the end of the
// file still finds its partner (its index entry follows it into the
// compacted batch; evicted, it would come out as a DELETE and an
// INSERT). The emitted rows are exactly the updated ones, also with
// hashes that collide.
func TestPairerCompactsSparseBatches(t *testing.T) {
	const n, batch = 5000, 500
	for _, tc := range []struct {
		aligned, collide, moved bool
	}{{true, false, false}, {true, false, true}, {true, true, true}} {
		t.Run(fmt.Sprintf("aligned=%t collide=%t moved=%t", tc.aligned, tc.collide, tc.moved), func(t *testing.T) {
			dels, ins := scatteredRewrite(n, batch, tc.moved)
			defer func() {
				for _, r := range append(dels, ins...) {
					r.Release()
				}
			}()
			one := rows.RecordSize(dels[0])
			budget := 4 * one
			var got [2][]string
			p := newPairer(context.Background(), []int{0, 1}, budget, func(side int, rec arrow.RecordBatch) error {
				for i := range int(rec.NumRows()) {
					got[side] = append(got[side], rec.Column(1).ValueStr(i))
				}
				rec.Release()
				return nil
			})
			p.aligned = tc.aligned
			if tc.collide {
				p.hash = collidingHash
			}
			if err := p.run(seqOf(dels), seqOf(ins)); err != nil {
				t.Fatal(err)
			}
			var want [2][]string
			for i := 7; i < n; i += 100 {
				want[0] = append(want[0], fmt.Sprintf("v%d", i))
				want[1] = append(want[1], fmt.Sprintf("v%d+", i))
			}
			for s := range got {
				if fmt.Sprint(got[s]) != fmt.Sprint(want[s]) {
					t.Fatalf("side %d emitted %d rows %v, want the %d updated rows %v", s, len(got[s]), got[s], len(want[s]), want[s])
				}
			}
			// Compacted, the n/100 updated rows of each side take a few
			// kB beside the other side's batch being matched; whole
			// batches would hold at least two.
			if p.peak <= 0 || p.peak >= one*3/2 {
				t.Fatalf("the window held up to %d bytes (a batch %d): batches were not compacted", p.peak, one)
			}
			if p.held != 0 || p.sides[0].head.len()+p.sides[1].head.len() != 0 {
				t.Fatalf("after the run: %d bytes held, %d+%d index entries", p.held, p.sides[0].head.len(), p.sides[1].head.len())
			}
		})
	}
}
