package rowjson

import (
	"math"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestExpandedYears: years outside 0000..9999 print in ISO 8601's expanded
// form with a sign, as floe's writers (and java.time) print them.
func TestExpandedYears(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	day := func(y int) int32 { // days since the epoch of January 1st of y
		days := int32(0)
		for yy := 1970; yy < y; yy++ {
			days += 365
			if yy%4 == 0 && (yy%100 != 0 || yy%400 == 0) {
				days++
			}
		}
		for yy := y; yy < 1970; yy++ {
			days -= 365
			if yy%4 == 0 && (yy%100 != 0 || yy%400 == 0) {
				days--
			}
		}
		return days
	}
	for _, tc := range []struct {
		days int32
		want string
	}{
		{day(10000), "+10000-01-01"},
		{day(9999), "9999-01-01"},
		{day(0), "0000-01-01"},
		{day(0) - 1, "-0001-12-31"},
		{math.MaxInt32, "+5881580-07-11"},
		{math.MinInt32, "-5877641-06-23"},
	} {
		b := array.NewDate32Builder(mem)
		b.Append(arrow.Date32(tc.days))
		a := b.NewArray()
		b.Release()
		got, err := Value(a, 0)
		a.Release()
		if err != nil || got != tc.want {
			t.Errorf("date %d: got %v %v, want %s", tc.days, got, err, tc.want)
		}
	}
	if got := FormatTimestamp(math.MaxInt64, arrow.Microsecond, true); got != "+294247-01-10T04:00:54.775807Z" {
		t.Errorf("max µs timestamp: %s", got)
	}
	if got := FormatTimestamp(math.MinInt64, arrow.Microsecond, false); got != "-290308-12-21T19:59:05.224192" {
		t.Errorf("min µs timestamp: %s", got)
	}
}
