package pipeline

import (
	"testing"
	"time"
)

func TestLevel(t *testing.T) {
	d := func(s string) *time.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	for _, tc := range []struct {
		lag         *time.Duration
		warn, error time.Duration
		want        string
	}{
		{d("1h"), 0, 0, FreshNone},
		{nil, 0, 0, FreshNone},
		{nil, time.Minute, 0, FreshUnknown},
		{d("0s"), 30 * time.Minute, 2 * time.Hour, FreshOK},
		{d("29m59s"), 30 * time.Minute, 2 * time.Hour, FreshOK},
		{d("30m"), 30 * time.Minute, 2 * time.Hour, FreshWarn},
		{d("2h"), 30 * time.Minute, 2 * time.Hour, FreshError},
		{d("3h"), 0, 2 * time.Hour, FreshError},
		{d("1h"), 0, 2 * time.Hour, FreshOK},
		{d("1h"), 30 * time.Minute, 0, FreshWarn},
	} {
		if got := Level(tc.lag, tc.warn, tc.error); got != tc.want {
			t.Errorf("Level(%v, %s, %s) = %q, want %q", tc.lag, tc.warn, tc.error, got, tc.want)
		}
	}
}

// TestPendingOf: the pending figures are the count, the rows when every
// snapshot says, and the earliest stamp (not the first: clocks skew).
func TestPendingOf(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	p := pendingOf([]snap{{ID: 1, At: t0.Add(time.Minute), Rows: 3}, {ID: 2, At: t0, Rows: 4}, {ID: 3, At: t0.Add(2 * time.Minute), Rows: 1}})
	if p.Snapshots != 3 || p.Rows == nil || *p.Rows != 8 || !p.Since.Equal(t0) {
		t.Fatalf("%+v", p)
	}
	p = pendingOf([]snap{{ID: 1, At: t0, Rows: 3}, {ID: 2, At: t0, NoRows: true}})
	if p.Rows != nil || p.Snapshots != 2 {
		t.Fatalf("a snapshot without counts: %+v", p)
	}
	if p := pendingOf(nil); p.Snapshots != 0 || !p.Since.IsZero() || p.Rows == nil || *p.Rows != 0 {
		t.Fatalf("nothing pending: %+v", p)
	}
	if lag, skewed := lagAt(time.Time{}, t0); lag != 0 || skewed {
		t.Fatal("nothing pending: no lag")
	}
	if lag, skewed := lagAt(t0.Add(time.Hour), t0); lag != 0 || !skewed {
		t.Fatal("a stamp in the future: lag 0, skewed")
	}
	if lag, _ := lagAt(t0, t0.Add(90*time.Second)); lag != 90*time.Second {
		t.Fatal(lag)
	}
}
