package merge

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestGapRanges(t *testing.T) {
	ints := func(xs ...int64) []any {
		out := make([]any, len(xs))
		for i, x := range xs {
			out[i] = x
		}
		return out
	}
	span := func(lo, hi int64) []any {
		var out []any
		for x := lo; x <= hi; x++ {
			out = append(out, x)
		}
		return out
	}
	for _, c := range []struct {
		name string
		vals []any
		n    int
		want string // the ranges, or "-" when not integer-like
	}{
		{"one value", ints(7), 4, "[[7 7]]"},
		{"adjacent values are one range", ints(3, 1, 2, 4), 4, "[[1 4]]"},
		{"two clusters", append(span(100, 120), span(1000, 1005)...), 4, "[[100 120] [1000 1005]]"},
		{"widest gaps are cut first", ints(0, 10, 11, 100, 1000), 3, "[[0 11] [100 100] [1000 1000]]"},
		{"at most n ranges, ties cut at the first gap", ints(0, 2, 4, 6, 8), 2, "[[0 0] [2 8]]"},
		{"one range when n is 1", ints(0, 50, 100), 1, "[[0 100]]"},
		{"duplicates", ints(5, 5, 9, 9), 4, "[[5 5] [9 9]]"},
		{"extremes do not overflow", ints(-1<<63, 1<<63-1), 2, "[[-9223372036854775808 -9223372036854775808] [9223372036854775807 9223372036854775807]]"},
		{"int32 stays int32", []any{int32(1), int32(9)}, 2, "[[1 1] [9 9]]"},
		{"dates", []any{iceberg.Date(1), iceberg.Date(2), iceberg.Date(30)}, 2, "[[1 2] [30 30]]"},
		{"strings are not cut", []any{"a", "b"}, 2, "-"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, ok := gapRanges(c.vals, c.n)
			got := "-"
			if ok {
				got = fmt.Sprint(rs)
				for _, r := range rs {
					if fmt.Sprintf("%T", r[0]) != fmt.Sprintf("%T", c.vals[0]) {
						t.Errorf("range bound %v has type %T, want %T", r[0], r[0], c.vals[0])
					}
				}
			}
			if got != c.want {
				t.Errorf("gapRanges(%v, %d) = %s, want %s", c.vals, c.n, got, c.want)
			}
		})
	}
}
