package expr

import (
	"math"
	"testing"
)

// TestStrictMath: log10 and exp give the results of Java's StrictMath
// (fdlibm), which Spark uses; the expected values are Spark's.
func TestStrictMath(t *testing.T) {
	for _, c := range []struct {
		f       func(float64) float64
		x, want float64
	}{
		{log10, 15, 1.1760912590556813},
		{log10, 25, 1.3979400086720377},
		{log10, 1000, 3},
		{log10, 0.001, -3},
		{exp, 1.5, 4.4816890703380645},
		{exp, -2.5, 0.0820849986238988},
		{exp, 0, 1},
		{exp, 1e-30, 1},
	} {
		if got := c.f(c.x); got != c.want {
			t.Errorf("f(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, x := range []float64{1e-300, 0.3, 2, 7, 123.456, 1e300} {
		if d := math.Abs(log10(x) - math.Log10(x)); d > 1e-15*math.Max(1, math.Abs(math.Log10(x))) {
			t.Errorf("log10(%v) = %v, far from %v", x, log10(x), math.Log10(x))
		}
	}
	for _, x := range []float64{-700, -20, -0.3, 0.3, 1, 20, 700} {
		if d := math.Abs(exp(x)-math.Exp(x)) / math.Exp(x); d > 1e-15 {
			t.Errorf("exp(%v) = %v, far from %v", x, exp(x), math.Exp(x))
		}
	}
	if !math.IsInf(exp(710), 1) || exp(-746) != 0 || !math.IsNaN(log10(-1)) || !math.IsInf(log10(0), -1) {
		t.Error("exp/log10 limits")
	}
}
