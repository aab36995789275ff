package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A datetime pattern in Spark's notation (to_date, to_timestamp,
// unix_timestamp, from_unixtime, date_format): the letters y M L d D H h m s
// S a E, text in single quotes (” for a quote), other characters as they
// are. Every time is in UTC, the session time zone of floe.
type dtPattern struct {
	src  string
	toks []patTok
}

type patTok struct {
	letter byte // 0 for literal text
	n      int  // repetitions of the letter
	lit    string
}

const patLetters = "yMLdDHhmsSaE"

func compilePattern(p string) (*dtPattern, error) {
	out := &dtPattern{src: p}
	lit := func(s string) {
		if k := len(out.toks); k > 0 && out.toks[k-1].letter == 0 {
			out.toks[k-1].lit += s
			return
		}
		out.toks = append(out.toks, patTok{lit: s})
	}
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			if i+1 < len(p) && p[i+1] == '\'' {
				lit("'")
				i += 2
				continue
			}
			end := strings.IndexByte(p[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("pattern %s has an unterminated quote", quoteString(p))
			}
			lit(p[i+1 : i+1+end])
			i += end + 2
		case (c|0x20) >= 'a' && (c|0x20) <= 'z':
			if strings.IndexByte(patLetters, c) < 0 {
				return nil, fmt.Errorf("pattern %s uses the letter %q, which floe does not support (supported: y M L d D H h m s S a E)", quoteString(p), c)
			}
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			out.toks = append(out.toks, patTok{letter: c, n: j - i})
			i = j
		default:
			lit(string(c))
			i++
		}
	}
	return out, nil
}

var monthNames = []string{"January", "February", "March", "April", "May", "June", "July",
	"August", "September", "October", "November", "December"}
var dayNames = []string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}

func pad(v, n int) string {
	s := strconv.Itoa(v)
	if v < 0 {
		return s
	}
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// format renders t (UTC) with the pattern.
func (p *dtPattern) format(t time.Time) string {
	var b strings.Builder
	for _, tk := range p.toks {
		n := tk.n
		switch tk.letter {
		case 0:
			b.WriteString(tk.lit)
		case 'y':
			if n == 2 {
				b.WriteString(pad(t.Year()%100, 2))
			} else {
				b.WriteString(pad(t.Year(), n))
			}
		case 'M', 'L':
			switch {
			case n >= 4:
				b.WriteString(monthNames[t.Month()-1])
			case n == 3:
				b.WriteString(monthNames[t.Month()-1][:3])
			default:
				b.WriteString(pad(int(t.Month()), n))
			}
		case 'd':
			b.WriteString(pad(t.Day(), n))
		case 'D':
			b.WriteString(pad(t.YearDay(), n))
		case 'H':
			b.WriteString(pad(t.Hour(), n))
		case 'h':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			b.WriteString(pad(h, n))
		case 'm':
			b.WriteString(pad(t.Minute(), n))
		case 's':
			b.WriteString(pad(t.Second(), n))
		case 'S':
			f := fmt.Sprintf("%09d", t.Nanosecond())
			for len(f) < n {
				f += "0"
			}
			b.WriteString(f[:n])
		case 'a':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'E':
			name := dayNames[t.Weekday()]
			if n < 4 {
				name = name[:3]
			}
			b.WriteString(name)
		}
	}
	return b.String()
}

// parse reads s with the pattern into microseconds since the epoch (UTC).
// Fields not in the pattern default to 1970-01-01 00:00:00.
func (p *dtPattern) parse(s string) (int64, error) {
	year, month, day, yday := 1970, 1, 1, 0
	hour, minute, sec, frac := 0, 0, 0, 0
	pm, half := false, false
	hour12 := -1
	i := 0
	fail := func(what string) (int64, error) {
		return 0, invalidArg("string %s does not match pattern %s (%s at offset %d)",
			quoteString(s), quoteString(p.src), what, i)
	}
	digits := func(lo, hi int) (int, bool) {
		j := i
		for j < len(s) && j-i < hi && isDigit(s[j]) {
			j++
		}
		if j-i < lo {
			return 0, false
		}
		v, _ := strconv.Atoi(s[i:j])
		i = j
		return v, true
	}
	word := func(names []string, short bool) (int, bool) {
		for k, nm := range names {
			if short {
				nm = nm[:3]
			}
			if len(s)-i >= len(nm) && strings.EqualFold(s[i:i+len(nm)], nm) {
				i += len(nm)
				return k, true
			}
		}
		return 0, false
	}
	for _, tk := range p.toks {
		n := tk.n
		lo, hi := n, n
		if n == 1 {
			lo, hi = 1, 2
		}
		var ok bool
		switch tk.letter {
		case 0:
			if !strings.HasPrefix(s[i:], tk.lit) {
				return fail(fmt.Sprintf("expected %s", quoteString(tk.lit)))
			}
			i += len(tk.lit)
			continue
		case 'y':
			switch n {
			case 1:
				year, ok = digits(1, 9)
			case 2:
				year, ok = digits(2, 2)
				year += 2000
			default:
				year, ok = digits(n, n)
			}
		case 'M', 'L':
			switch {
			case n >= 4:
				month, ok = word(monthNames, false)
				month++
			case n == 3:
				month, ok = word(monthNames, true)
				month++
			default:
				month, ok = digits(lo, hi)
			}
		case 'd':
			day, ok = digits(lo, hi)
		case 'D':
			if n == 1 {
				hi = 3
			}
			yday, ok = digits(lo, hi)
		case 'H':
			hour, ok = digits(lo, hi)
		case 'h':
			hour12, ok = digits(lo, hi)
		case 'm':
			minute, ok = digits(lo, hi)
		case 's':
			sec, ok = digits(lo, hi)
		case 'S':
			start := i
			var f int
			f, ok = digits(1, n)
			for k := i - start; ok && k < 9; k++ {
				f *= 10
			}
			frac = f
		case 'a':
			var k int
			k, ok = word([]string{"AM", "PM"}, false)
			pm, half = k == 1, true
		case 'E':
			if _, ok = word(dayNames, false); !ok {
				_, ok = word(dayNames, true)
			}
		}
		if !ok {
			return fail(fmt.Sprintf("bad field %s", strings.Repeat(string(tk.letter), n)))
		}
	}
	if i != len(s) {
		return fail("unexpected text")
	}
	if hour12 >= 0 {
		if hour12 < 1 || hour12 > 12 {
			return fail("hour out of range")
		}
		hour = hour12 % 12
		if pm {
			hour += 12
		}
	} else if half && pm && hour < 12 {
		hour += 12
	}
	if hour > 23 || minute > 59 || sec > 59 {
		return fail("time out of range")
	}
	days, ok := civilDays(year, month, day)
	if !ok {
		return fail("no such day")
	}
	if yday > 0 {
		if yday > 366 {
			return fail("day of year out of range")
		}
		days += int64(yday - 1)
		if t := time.Unix(days*86400, 0).UTC(); t.Year() != year {
			return fail("day of year out of range")
		}
	}
	us := days*microsPerDay + int64((hour*60+minute)*60+sec)*microsPerSecond + int64(frac/1000)
	return us, nil
}
