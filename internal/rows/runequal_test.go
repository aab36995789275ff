package rows_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/rows"
)

// TestRunComparerAgrees checks RunComparer against KeysEqual over random
// records (NULLs, NaN, -0 and 0, a nested column, and records whose
// columns differ in integer width and string kind, so that the comparers
// made for one schema meet arrays of another), on slices (offsets) too:
// Run is the length of the prefix of pairwise equal rows, Equal is
// KeysEqual. It also checks that HashKeysRange gives HashKeys's hashes.
func TestRunComparerAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	full := []arrow.RecordBatch{keyRecord(rng, 150, false), keyRecord(rng, 90, true)}
	defer func() {
		for _, r := range full {
			r.Release()
		}
	}()
	// Slices start at an offset: the comparers must honour it.
	recs := append(slices.Clone(full), full[0].NewSlice(7, 140), full[1].NewSlice(3, 90))
	defer recs[2].Release()
	defer recs[3].Release()
	for _, cols := range [][]int{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {0, 1, 2, 3, 4, 5}, {2, 6, 1}} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			for _, schemaOf := range recs[:2] {
				c := rows.NewRunComparer(schemaOf.Schema(), cols)
				for _, a := range recs {
					for _, b := range recs {
						na, nb := int(a.NumRows()), int(b.NumRows())
						for range 400 {
							i, j := rng.IntN(na), rng.IntN(nb)
							if a == recs[0] && b == recs[2] && rng.IntN(2) == 0 {
								// Row j of the slice is row j+7 of the record: long runs.
								j = rng.IntN(nb)
								i = j + 7
								if rng.IntN(3) == 0 {
									i++ // one row off
								}
							}
							n := rng.IntN(min(na-i, nb-j) + 1)
							want := 0
							for want < n && rows.KeysEqual(a, i+want, b, j+want, cols) {
								want++
							}
							if got := c.Run(a, i, b, j, n); got != want {
								t.Fatalf("Run(%d, %d, %d) = %d, want %d", i, j, n, got, want)
							}
							if got, want := c.Equal(a, i, b, j), rows.KeysEqual(a, i, b, j, cols); got != want {
								t.Fatalf("Equal(%d, %d) = %t, KeysEqual %t", i, j, got, want)
							}
						}
					}
				}
			}
			for _, r := range recs {
				all := rows.HashKeys(r, cols, nil)
				n := int(r.NumRows())
				for range 50 {
					lo := rng.IntN(n + 1)
					hi := lo + rng.IntN(n-lo+1)
					if got := rows.HashKeysRange(r, cols, lo, hi, nil); !slices.Equal(got, all[lo:hi]) {
						t.Fatalf("HashKeysRange(%d, %d) = %x, HashKeys gives %x", lo, hi, got, all[lo:hi])
					}
				}
			}
		})
	}
}
