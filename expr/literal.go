package expr

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

const (
	microsPerSecond = int64(1_000_000)
	microsPerDay    = 86_400 * microsPerSecond
)

// parseDecimalText parses [+-]digits[.digits][(e|E)[+-]digits] into an
// unscaled integer and a scale (negative when the exponent exceeds the
// fraction digits). Surrounding spaces are not accepted.
func parseDecimalText(s string) (*big.Int, int, bool) {
	if s == "" {
		return nil, 0, false
	}
	neg := false
	switch s[0] {
	case '+', '-':
		neg = s[0] == '-'
		s = s[1:]
	}
	mant, exp := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, exp = s[:i], s[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	if intPart == "" && frac == "" {
		return nil, 0, false
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if !isDigit(part[i]) {
				return nil, 0, false
			}
		}
	}
	scale := len(frac)
	if exp != "" {
		e, err := strconv.Atoi(exp)
		if err != nil || e > 1000 || e < -1000 {
			return nil, 0, false
		}
		scale -= e
	}
	v, ok := new(big.Int).SetString(intPart+frac, 10)
	if !ok {
		if intPart+frac != "" {
			return nil, 0, false
		}
		v = new(big.Int)
	}
	if neg {
		v.Neg(v)
	}
	return v, scale, true
}

// digits returns the number of decimal digits of |x| (0 for zero).
func digits(x *big.Int) int {
	if x.Sign() == 0 {
		return 0
	}
	return len(new(big.Int).Abs(x).Text(10))
}

var pow10Cache = func() []*big.Int {
	out := make([]*big.Int, 80)
	out[0] = big.NewInt(1)
	for i := 1; i < len(out); i++ {
		out[i] = new(big.Int).Mul(out[i-1], big.NewInt(10))
	}
	return out
}()

// pow10Big returns 10^n. The result must not be modified.
func pow10Big(n int) *big.Int {
	if n < len(pow10Cache) {
		return pow10Cache[n]
	}
	return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n)), nil)
}

var errBadDate = errors.New("invalid date")

// parseDate parses yyyy-[m]m-[d]d, optionally followed by a time part
// introduced by 'T' or ' ' that is ignored (as Spark does when casting a
// timestamp string to DATE). It returns days since 1970-01-01.
func parseDate(s string) (int64, error) {
	s = strings.TrimSpace(s)
	datePart := s
	if i := strings.IndexAny(s, "T "); i >= 0 {
		datePart = s[:i]
	}
	y, m, d, ok := splitDate(datePart)
	if !ok {
		return 0, fmt.Errorf("%w %q: expected yyyy-mm-dd", errBadDate, s)
	}
	days, ok := civilDays(y, m, d)
	if !ok {
		return 0, fmt.Errorf("%w %q: no such day", errBadDate, s)
	}
	return days, nil
}

func splitDate(s string) (y, m, d int, ok bool) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 || len(parts[0]) != 4 || len(parts[1]) < 1 || len(parts[1]) > 2 || len(parts[2]) < 1 || len(parts[2]) > 2 {
		return 0, 0, 0, false
	}
	var vals [3]int
	for i, p := range parts {
		for j := 0; j < len(p); j++ {
			if !isDigit(p[j]) {
				return 0, 0, 0, false
			}
		}
		vals[i], _ = strconv.Atoi(p)
	}
	return vals[0], vals[1], vals[2], true
}

func civilDays(y, m, d int) (int64, bool) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d || int(t.Month()) != m {
		return 0, false
	}
	return t.Unix() / 86400, true
}

// parseTimestamp parses yyyy-mm-dd[( |T)hh:mm[:ss[.f...]]][zone] into
// microseconds since the epoch. The zone is Z, UTC, or an offset +hh:mm,
// +hhmm, +hh (with - for west); without one the wall clock is taken as UTC.
// When allowZone is false (TIMESTAMP_NTZ) a zone is an error.
func parseTimestamp(s string, allowZone bool) (int64, error) {
	orig := s
	bad := func(why string) error {
		return fmt.Errorf("invalid timestamp %q: %s", orig, why)
	}
	s = strings.TrimSpace(s)
	if len(s) < 8 {
		return 0, bad("expected yyyy-mm-dd[ hh:mm:ss[.ffffff]][zone]")
	}
	end := strings.IndexAny(s, "T ")
	datePart, rest := s, ""
	if end >= 0 {
		datePart, rest = s[:end], strings.TrimLeft(s[end+1:], " ")
	}
	y, m, d, ok := splitDate(datePart)
	if !ok {
		return 0, bad("expected yyyy-mm-dd[ hh:mm:ss[.ffffff]][zone]")
	}
	days, ok := civilDays(y, m, d)
	if !ok {
		return 0, bad("no such day")
	}
	var hh, mm, ss, frac int64
	offset := int64(0)
	if rest != "" {
		// time part: digits and ':' and '.', then the zone
		i := 0
		for i < len(rest) && (isDigit(rest[i]) || rest[i] == ':' || rest[i] == '.') {
			i++
		}
		timePart, zone := rest[:i], strings.TrimSpace(rest[i:])
		if timePart != "" {
			fields := strings.Split(timePart, ":")
			if len(fields) < 2 || len(fields) > 3 {
				return 0, bad("expected hh:mm[:ss[.ffffff]]")
			}
			secs := "0"
			if len(fields) == 3 {
				secs = fields[2]
			}
			if fs := strings.SplitN(secs, ".", 2); len(fs) == 2 {
				secs = fs[0]
				f := fs[1]
				if f == "" || len(f) > 6 {
					return 0, bad("expected 1 to 6 fractional digits")
				}
				for j := 0; j < len(f); j++ {
					if !isDigit(f[j]) {
						return 0, bad("bad fraction")
					}
				}
				fv, _ := strconv.ParseInt(f+strings.Repeat("0", 6-len(f)), 10, 64)
				frac = fv
			}
			var err1, err2, err3 error
			hh, err1 = parseSmall(fields[0], 23)
			mm, err2 = parseSmall(fields[1], 59)
			ss, err3 = parseSmall(secs, 59)
			if err1 != nil || err2 != nil || err3 != nil {
				return 0, bad("hour, minute or second out of range")
			}
		}
		if zone != "" {
			if !allowZone {
				return 0, bad("TIMESTAMP_NTZ takes no time zone")
			}
			off, err := parseZone(zone)
			if err != nil {
				return 0, bad(err.Error())
			}
			offset = off
		}
	}
	us := days*microsPerDay + ((hh*60+mm)*60+ss)*microsPerSecond + frac - offset*microsPerSecond
	return us, nil
}

func parseSmall(s string, maxv int64) (int64, error) {
	if s == "" || len(s) > 2 {
		return 0, errors.New("bad field")
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > maxv {
		return 0, errors.New("out of range")
	}
	return v, nil
}

// parseZone returns the offset east of UTC in seconds.
func parseZone(z string) (int64, error) {
	switch strings.ToUpper(z) {
	case "Z", "UTC", "GMT":
		return 0, nil
	}
	if len(z) < 2 || (z[0] != '+' && z[0] != '-') {
		return 0, fmt.Errorf("unknown time zone %q (use Z, UTC or an offset such as +02:00)", z)
	}
	sign := int64(1)
	if z[0] == '-' {
		sign = -1
	}
	body := strings.ReplaceAll(z[1:], ":", "")
	var h, m int64
	var err error
	switch len(body) {
	case 2:
		h, err = parseSmall(body, 18)
	case 4:
		h, err = parseSmall(body[:2], 18)
		if err == nil {
			m, err = parseSmall(body[2:], 59)
		}
	default:
		err = errors.New("bad offset")
	}
	if err != nil {
		return 0, fmt.Errorf("bad time zone offset %q", z)
	}
	return sign * (h*3600 + m*60), nil
}

// formatDate renders days since the epoch as yyyy-mm-dd.
func formatDate(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

// formatTimestamp renders a timestamp as yyyy-mm-dd hh:mm:ss[.fraction]
// in UTC, dropping trailing zeros of the fraction as Spark does.
func formatTimestamp(v int64, unit arrow.TimeUnit) string {
	var t time.Time
	switch unit {
	case arrow.Second:
		t = time.Unix(v, 0)
	case arrow.Millisecond:
		t = time.UnixMilli(v)
	case arrow.Microsecond:
		t = time.UnixMicro(v)
	default:
		t = time.Unix(0, v)
	}
	t = t.UTC()
	s := t.Format("2006-01-02 15:04:05")
	if ns := t.Nanosecond(); ns != 0 {
		f := fmt.Sprintf("%09d", ns)
		s += "." + strings.TrimRight(f, "0")
	}
	return s
}
