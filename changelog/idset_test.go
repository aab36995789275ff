package changelog

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// TestIDSetMatchesRoaring64 checks idSet against roaring64 over random
// ranges and ids near 0, around the 2^32 boundaries of its parts and near
// the largest int64: every count of a range, membership, checked add,
// intersection and size agree.
func TestIDSetMatchesRoaring64(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	bases := []int64{0, 1<<32 - 40, 3<<32 - 5, math.MaxInt64 - 100}
	id := func() int64 { return bases[rng.IntN(len(bases))] + rng.Int64N(90) }
	for round := range 50 {
		s, o := newIDSet(), newIDSet()
		want, wantO := roaring64.New(), roaring64.New()
		for range 40 {
			a := id()
			b := a + rng.Int64N(min(60, math.MaxInt64-a)+1)
			switch rng.IntN(3) {
			case 0:
				s.addRange(a, b)
				want.AddRange(uint64(a), uint64(b)+1)
			case 1:
				if got, w := s.checkedAdd(a), want.CheckedAdd(uint64(a)); got != w {
					t.Fatalf("round %d: checkedAdd(%d) = %t, roaring64 %t", round, a, got, w)
				}
			default:
				o.addRange(a, b)
				wantO.AddRange(uint64(a), uint64(b)+1)
			}
			a = id()
			b = a + rng.Int64N(min(200, math.MaxInt64-a)+1)
			w := want.Rank(uint64(b))
			if a > 0 {
				w -= want.Rank(uint64(a - 1))
			}
			if got := s.countIn(a, b); got != w {
				t.Fatalf("round %d: countIn(%d, %d) = %d, roaring64 %d", round, a, b, got, w)
			}
			if got := s.contains(a); got != want.Contains(uint64(a)) {
				t.Fatalf("round %d: contains(%d) = %t", round, a, got)
			}
		}
		if got, w := s.andCardinality(o), want.AndCardinality(wantO); got != w {
			t.Fatalf("round %d: andCardinality %d, roaring64 %d", round, got, w)
		}
		if got, w := s.cardinality(), want.GetCardinality(); got != w {
			t.Fatalf("round %d: cardinality %d, roaring64 %d", round, got, w)
		}
	}
	// A range across a part boundary, added in pieces; counted over ranges
	// that span few parts and all of them.
	s := newIDSet()
	s.addRange(1<<32-3, 1<<32+2)
	s.checkedAdd(math.MaxInt64)
	for _, c := range []struct {
		a, b int64
		n    uint64
	}{
		{0, math.MaxInt64, 7}, {1<<32 - 2, 1<<32 + 1, 4}, {1 << 32, math.MaxInt64 - 1, 3}, {2, 1<<32 - 3, 1},
	} {
		if n := s.countIn(c.a, c.b); n != c.n || len(s.parts) != 3 {
			t.Fatalf("countIn(%d, %d) = %d in %d parts, want %d in 3", c.a, c.b, n, len(s.parts), c.n)
		}
	}
}
