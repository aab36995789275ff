package expr

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestPatternRoundTrip: what format writes, parse reads back, for patterns
// that name every field down to the fraction they keep.
func TestPatternRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 16))
	for _, src := range []string{"yyyy-MM-dd HH:mm:ss", "dd/MM/yyyy HH:mm:ss.SSSSSS", "yyyyMMddHHmmss", "'T'yyyy'T' D HH-mm-ss",
		"MMM d, yyyy h:mm:ss a", "EEEE, MMMM dd yyyy HH:mm:ss.SSS", "yyyy-M-d H:m:s"} {
		p, err := compilePattern(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		for range 500 {
			// years 1000 to 9999, which yyyy writes in four digits
			const lo, hi = -30610224000_000000, 253402300799_000000
			us := lo + r.Int64N(hi-lo)
			want := us
			switch {
			case containsLetter(src, 'S'):
				n := 0
				for _, tk := range p.toks {
					if tk.letter == 'S' {
						n = tk.n
					}
				}
				div := int64(1)
				for k := n; k < 6; k++ {
					div *= 10
				}
				want = floorDiv(us, div) * div
			default:
				want = floorDiv(us, microsPerSecond) * microsPerSecond
			}
			s := p.format(utcMicros(us))
			got, err := p.parse(s)
			if err != nil || got != want {
				t.Fatalf("%s: %s (%d) read back as %d, %v; want %d", src, s, us, got, err, want)
			}
		}
	}
}

func containsLetter(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// FuzzDatetimePattern: compiling any pattern and reading any string with
// it either works or fails with ErrInvalidArgument, never panics; what a
// pattern writes, it reads without error when it has no 12-hour field
// without its AM/PM and no text that could be taken for a field.
func FuzzDatetimePattern(f *testing.F) {
	for _, s := range [][2]string{{"yyyy-MM-dd", "2024-01-05"}, {"dd/MM/yyyy HH:mm", "05/01/2024 10:11"}, {"MMM d, yyyy", "Jan 5, 2024"},
		{"yyyy-MM-dd''T''HH", "2024-01-05'T'10"}, {"h:mm a", "1:02 PM"}, {"D", "366"}, {"SSSSSSSSS", "123456789"}, {"'", ""}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pat, s string) {
		p, err := compilePattern(pat)
		if err != nil {
			return
		}
		_ = p.format(time.Date(2024, 2, 29, 13, 45, 30, 123456789, time.UTC))
		if _, err := p.parse(s); err != nil {
			if _, ok := err.(*argError); !ok {
				t.Fatalf("parse(%q, %q): %T %v", pat, s, err, err)
			}
		}
	})
}
