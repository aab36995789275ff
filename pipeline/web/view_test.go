package web

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", -time.Second: "0s", 1400 * time.Millisecond: "1s", 59 * time.Second: "59s", time.Minute: "1m",
		90 * time.Second: "1m30s", time.Hour: "1h", 170 * time.Minute: "2h50m", 48 * time.Hour: "2d", 75 * time.Hour: "3d3h",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestNiceAxes(t *testing.T) {
	for v, want := range map[float64]float64{0.5: 1, 7: 10, 61: 120, 3000: 3600, 9000: 10800} {
		if got := niceDuration(v); got != want {
			t.Errorf("niceDuration(%v) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[float64]float64{0.3: 0.5, 3: 5, 11: 20, 99: 100} {
		if got := niceCeil(v); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", v, got, want)
		}
	}
}
