package changelog

import (
	"math/rand/v2"
	"testing"
)

// TestHashIndex runs random sets and deletes against a map, with keys
// drawn from a small set whose low bits collide (long probe runs that
// wrap around the table), and checks every key after each operation.
func TestHashIndex(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 99))
		keys := make([]uint64, 40)
		for i := range keys {
			// Few distinct low bits: many keys share a home slot.
			keys[i] = uint64(rng.IntN(4))<<60 | uint64(rng.IntN(1<<20))<<8 | uint64(rng.IntN(3)+13)
		}
		keys = append(keys, 0, 15, 16, 31)
		ix := newHashIndex()
		model := map[uint64]int32{}
		for op := range 3000 {
			k := keys[rng.IntN(len(keys))]
			if rng.IntN(3) == 0 {
				ix.del(k)
				delete(model, k)
			} else {
				v := int32(rng.IntN(1000))
				ix.set(k, v)
				model[k] = v
			}
			if ix.len() != len(model) {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, ix.len(), len(model))
			}
			for _, k := range keys {
				v, ok := ix.get(k)
				mv, mok := model[k]
				if ok != mok || v != mv {
					t.Fatalf("seed %d op %d: get(%x) = %d,%t, want %d,%t", seed, op, k, v, ok, mv, mok)
				}
			}
		}
	}
}
