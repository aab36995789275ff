package scan

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestCompileFileFilter checks the compiled file filter of a plan (IN
// lists sorted once and binary-searched, conjunctions short-circuited)
// against the definition, on random files and random filters: a file may
// match an IN list when some value lies within its bounds (a missing
// bound rules nothing out; a string upper bound may be truncated, so a
// value is above it only when its prefix of the bound's length is), and
// a conjunction keeps a file only when each of its sides does (the
// statistics tell nothing of rows, so not the intersection).
func TestCompileFileFilter(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String})
	rng := rand.New(rand.NewPCG(7, 19))
	randString := func() string {
		b := make([]byte, 1+rng.IntN(3))
		for i := range b {
			b[i] = "abcd"[rng.IntN(4)]
		}
		return string(b)
	}
	bytesOf := func(v any) []byte {
		var l iceberg.Literal
		switch x := v.(type) {
		case int64:
			l = iceberg.NewLiteral(x)
		case string:
			l = iceberg.NewLiteral(x)
		}
		b, err := l.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for trial := range 2000 {
		// a file: bounds of id in [0, 100), of s over short strings; each
		// bound missing now and then
		lo, hi := rng.Int64N(100), rng.Int64N(100)
		lo, hi = min(lo, hi), max(lo, hi)
		slo, shi := randString(), randString()
		if slo > shi {
			slo, shi = shi, slo
		}
		shi = shi[:1+rng.IntN(len(shi))] // truncated, as writers do: still not below any value it bounds
		if shi < slo[:min(len(slo), len(shi))] {
			shi = slo[:min(len(slo), len(shi))]
		}
		lower, upper := map[int][]byte{}, map[int][]byte{}
		hasLo, hasHi := rng.IntN(8) > 0, rng.IntN(8) > 0
		if hasLo {
			lower[1], lower[2] = bytesOf(lo), bytesOf(slo)
		}
		if hasHi {
			upper[1], upper[2] = bytesOf(hi), bytesOf(shi)
		}
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, "f.parquet", iceberg.ParquetFile, nil, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		df := b.LowerBoundValues(lower).UpperBoundValues(upper).Build()

		var ids []int64
		var strs []string
		for range rng.IntN(40) {
			ids = append(ids, rng.Int64N(120)-10)
			strs = append(strs, randString())
		}
		idIn := func(x int64) bool { return (!hasLo || x >= lo) && (!hasHi || x <= hi) }
		sIn := func(x string) bool {
			return (!hasLo || x >= slo) && (!hasHi || x[:min(len(x), len(shi))] <= shi)
		}
		any := func(xs []int64) bool {
			for _, x := range xs {
				if idIn(x) {
					return true
				}
			}
			return false
		}
		anyS := func() bool {
			for _, x := range strs {
				if sIn(x) {
					return true
				}
			}
			return false
		}
		rlo, rhi := rng.Int64N(120)-10, rng.Int64N(120)-10
		rangeMeets := (!hasHi || rlo <= hi) && (!hasLo || rhi >= lo) // each side on its own, as statistics tell
		for _, c := range []struct {
			name string
			e    iceberg.BooleanExpression
			want bool
		}{
			{"id IN", iceberg.IsIn(iceberg.Reference("id"), ids...), any(ids)},
			{"s IN", iceberg.IsIn(iceberg.Reference("s"), strs...), anyS()},
			{"id IN and range", iceberg.NewAnd(iceberg.IsIn(iceberg.Reference("id"), ids...),
				iceberg.GreaterThanEqual(iceberg.Reference("id"), rlo), iceberg.LessThanEqual(iceberg.Reference("id"), rhi)),
				any(ids) && rangeMeets},
			{"id IN or s IN", iceberg.NewOr(iceberg.IsIn(iceberg.Reference("id"), ids...), iceberg.IsIn(iceberg.Reference("s"), strs...)),
				any(ids) || anyS()},
			{"NOT IN keeps", iceberg.NotIn(iceberg.Reference("id"), ids...), true},
		} {
			bound, err := iceberg.BindExpr(sc, c.e, true)
			if err != nil {
				t.Fatal(err)
			}
			if got := compileFileFilter(bound)(df); got != c.want {
				t.Fatalf("trial %d, %s: file id in [%d, %d] (bounds %v/%v), s in [%q, %q]; ids %v strs %s range [%d, %d]: may match %v, want %v",
					trial, c.name, lo, hi, hasLo, hasHi, slo, shi, ids, strings.Join(strs, ","), rlo, rhi, got, c.want)
			}
		}
	}
	if !compileFileFilter(nil)(nil) {
		t.Fatal("no filter rules a file out")
	}
}
