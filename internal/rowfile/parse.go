package rowfile

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// This file parses the text forms of scalar values (CSV cells, JSON strings
// and numbers, Parquet strings). Parsers work on []byte without allocating
// and never round: a value that cannot be represented exactly is an error.

// trimSpace trims ASCII white space around a cell.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// number is a decimal number as written: value = (-1)^neg * digits * 10^exp,
// with digits holding no leading zeros (empty for zero).
type number struct {
	neg    bool
	digits []byte
	exp    int
}

// parseNumber parses [+-]digits[.digits][(e|E)[+-]digits], the union of JSON
// numbers and the usual CSV spellings ("+1", ".5", "5."). buf receives the
// digits and must not be shared with the input.
func parseNumber(b []byte, buf []byte) (number, bool) {
	var n number
	i := 0
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		n.neg = b[i] == '-'
		i++
	}
	digits := buf[:0]
	seen := false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		seen = true
		if len(digits) > 0 || b[i] != '0' {
			digits = append(digits, b[i])
		}
	}
	frac := 0
	if i < len(b) && b[i] == '.' {
		i++
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			seen = true
			frac++
			if len(digits) > 0 || b[i] != '0' {
				digits = append(digits, b[i])
			}
		}
	}
	if !seen {
		return n, false
	}
	exp := 0
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		start := i
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if exp < 100000 {
				exp = exp*10 + int(b[i]-'0')
			}
		}
		if i == start {
			return n, false
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(b) {
		return n, false
	}
	n.digits = digits
	n.exp = exp - frac
	if len(digits) == 0 {
		n.exp = 0
	}
	return n, true
}

// scaled returns the decimal digits of n * 10^shift (no leading zeros,
// empty for zero) when that is an integer; exact is false when non-zero
// digits would be cut off. huge reports a value too large for any column.
func (n number) scaled(shift int, buf []byte) (d []byte, exact, huge bool) {
	e := n.exp + shift
	d = n.digits
	if len(d) == 0 {
		return d, true, false
	}
	if e >= 0 {
		if len(d)+e > 80 {
			return nil, true, true
		}
		out := append(buf[:0], d...)
		for range e {
			out = append(out, '0')
		}
		return out, true, false
	}
	cut := len(d) + e // digits before the decimal point
	for i := max(cut, 0); i < len(d); i++ {
		if d[i] != '0' {
			return nil, false, false
		}
	}
	if cut <= 0 {
		return d[:0], true, false
	}
	return d[:cut], true, false
}

// parseInt parses an exact integer of the given bit size. Text like "1.0" or
// "1e3" is accepted because its value is an integer; "1.5" is not.
func parseInt(b []byte, bits int) (int64, string) {
	// Fast path: plain optional sign and digits.
	if v, ok := parsePlainInt(b, bits); ok {
		return v, ""
	}
	var nbuf, dbuf [64]byte
	n, ok := parseNumber(b, nbuf[:0])
	if !ok {
		return 0, "not a number"
	}
	d, exact, huge := n.scaled(0, dbuf[:0])
	switch {
	case huge:
		return 0, fmt.Sprintf("out of range for a %d-bit integer", bits)
	case !exact:
		return 0, "not an integer"
	}
	var u uint64
	for _, c := range d {
		if u > (math.MaxUint64-9)/10 {
			return 0, fmt.Sprintf("out of range for a %d-bit integer", bits)
		}
		u = u*10 + uint64(c-'0')
	}
	return intInRange(u, n.neg, bits)
}

func parsePlainInt(b []byte, bits int) (int64, bool) {
	i := 0
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i = 1
	}
	if i == len(b) || len(b)-i > 19 {
		return 0, false
	}
	var u uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	v, reason := intInRange(u, neg, bits)
	return v, reason == ""
}

func intInRange(u uint64, neg bool, bits int) (int64, string) {
	limit := uint64(1) << (bits - 1)
	if neg {
		if u > limit {
			return 0, fmt.Sprintf("out of range for a %d-bit integer", bits)
		}
		return int64(-u), ""
	}
	if u >= limit {
		return 0, fmt.Sprintf("out of range for a %d-bit integer", bits)
	}
	return int64(u), ""
}

var pow10u64 = func() [20]uint64 {
	var p [20]uint64
	p[0] = 1
	for i := 1; i < 20; i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// parseDecimal parses text into the unscaled value of decimal(prec, scale).
// It never rounds: more significant fractional digits than the scale, or
// more integer digits than prec-scale, are errors with a reason. Trailing
// zeros beyond the scale are accepted since the value is exact ("1.500" is
// 1.50 in decimal(p,2)).
func parseDecimal(b []byte, prec, scale int32) (decimal128.Num, string) {
	var nbuf, dbuf [64]byte
	n, ok := parseNumber(b, nbuf[:0])
	if !ok {
		return decimal128.Num{}, "not a decimal number"
	}
	d, exact, huge := n.scaled(int(scale), dbuf[:0])
	if !exact {
		return decimal128.Num{}, fmt.Sprintf("more than %d fractional digits (no rounding is done)", scale)
	}
	if huge || len(d) > int(prec) {
		return decimal128.Num{}, fmt.Sprintf("more than %d digits (precision %d)", prec, prec)
	}
	// Accumulate 18 digits at a time (each chunk fits in a uint64).
	var v decimal128.Num
	for len(d) > 0 {
		k := min(len(d), 18)
		var u uint64
		for _, c := range d[:k] {
			u = u*10 + uint64(c-'0')
		}
		if v == (decimal128.Num{}) {
			v = decimal128.FromU64(u)
		} else {
			v = v.Mul(decimal128.FromU64(pow10u64[k])).Add(decimal128.FromU64(u))
		}
		d = d[k:]
	}
	if n.neg {
		v = v.Negate()
	}
	return v, ""
}

// parseBool accepts true/false in any case and 1/0.
func parseBool(b []byte) (bool, bool) {
	switch len(b) {
	case 1:
		switch b[0] {
		case '1':
			return true, true
		case '0':
			return false, true
		}
	case 4:
		if lowerEq(b, "true") {
			return true, true
		}
	case 5:
		if lowerEq(b, "false") {
			return false, true
		}
	}
	return false, false
}

func lowerEq(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func daysInMonth(y, m int64) int64 {
	switch m {
	case 4, 6, 9, 11:
		return 30
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	}
	return 31
}

func digitsAt(b []byte, i, n int) (int64, bool) {
	if i+n > len(b) {
		return 0, false
	}
	var v int64
	for _, c := range b[i : i+n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// maxYearDigits bounds the digits of an expanded year: 9 digits reach
// far past the range of every date and timestamp type.
const maxYearDigits = 9

// parseDateAt parses YYYY-MM-DD at the start of b and returns the days since
// the epoch and the number of bytes used. Years outside 0000..9999 are
// ISO 8601's expanded form as floe writes them (and java.time does): a
// sign and four or more digits, "+10000-01-01", "-0001-12-31" (astronomical
// numbering: year 0 is 1 BC). A year of more than four digits without a
// sign is read as well.
func parseDateAt(b []byte) (int64, int, string) {
	const want = "expected a date as YYYY-MM-DD"
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '+' || b[0] == '-') {
		neg, i = b[0] == '-', 1
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j-i < 4 || j-i > maxYearDigits {
		return 0, 0, want
	}
	y, _ := digitsAt(b, i, j-i)
	if neg {
		y = -y
	}
	m, ok2 := digitsAt(b, j+1, 2)
	d, ok3 := digitsAt(b, j+4, 2)
	if !ok2 || !ok3 || b[j] != '-' || b[j+3] != '-' {
		return 0, 0, want
	}
	if m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m) {
		return 0, 0, "no such date"
	}
	return daysFromCivil(y, m, d), j + 6, ""
}

// parseDate parses an ISO-8601 calendar date YYYY-MM-DD into days since the
// epoch.
func parseDate(b []byte) (int32, string) {
	days, n, reason := parseDateAt(b)
	if reason != "" {
		return 0, reason
	}
	if n != len(b) {
		return 0, "expected a date as YYYY-MM-DD"
	}
	if days < math.MinInt32 || days > math.MaxInt32 {
		return 0, "out of range for a date"
	}
	return int32(days), ""
}

// unitsPerSecond returns the number of ticks per second for a time unit
// given as the number of fractional digits (0, 3, 6, 9).
func unitsPerSecond(digits int) int64 {
	return int64(pow10u64[digits])
}

// parseClockAt parses hh:mm[:ss[.fffffffff]] at the start of b into ticks of
// 10^-digits seconds since midnight, with the bytes used.
func parseClockAt(b []byte, digits int) (int64, int, string) {
	hh, ok1 := digitsAt(b, 0, 2)
	mm, ok2 := digitsAt(b, 3, 2)
	if !ok1 || !ok2 || b[2] != ':' {
		return 0, 0, "expected a time as hh:mm:ss[.ffffff]"
	}
	i := 5
	var ss int64
	if i < len(b) && b[i] == ':' {
		v, ok := digitsAt(b, 6, 2)
		if !ok {
			return 0, 0, "expected a time as hh:mm:ss[.ffffff]"
		}
		ss = v
		i = 8
	}
	if hh > 23 || mm > 59 || ss > 59 {
		return 0, 0, "time out of range"
	}
	ticks := ((hh*60+mm)*60 + ss) * unitsPerSecond(digits)
	if i < len(b) && (b[i] == '.' || b[i] == ',') && i == 8 {
		i++
		start := i
		var frac int64
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			k := i - start
			switch {
			case k < digits:
				frac = frac*10 + int64(b[i]-'0')
			case b[i] != '0':
				return 0, 0, fmt.Sprintf("more than %d fractional second digits (no rounding is done)", digits)
			}
		}
		n := i - start
		if n == 0 {
			return 0, 0, "expected digits after the decimal point"
		}
		if n > 9 {
			return 0, 0, "more than 9 fractional second digits"
		}
		for k := n; k < digits; k++ {
			frac *= 10
		}
		ticks += frac
	}
	return ticks, i, ""
}

// parseTime parses an ISO-8601 time of day without zone.
func parseTime(b []byte, digits int) (int64, string) {
	v, n, reason := parseClockAt(b, digits)
	if reason != "" {
		return 0, reason
	}
	if n != len(b) {
		return 0, "expected a time as hh:mm:ss[.ffffff] without zone"
	}
	return v, ""
}

// parseTimestamp parses an ISO-8601 date-time: a date, then optionally 'T'
// (or a space) and a time, then optionally a zone (Z, ±hh:mm, ±hhmm, ±hh).
// The result is in ticks of 10^-digits seconds since the epoch, converted to
// UTC when a zone was given; zoned reports whether one was.
func parseTimestamp(b []byte, digits int) (v int64, zoned bool, reason string) {
	days, i, reason := parseDateAt(b)
	if reason != "" {
		return 0, false, "expected a timestamp as YYYY-MM-DDThh:mm:ss[.ffffff][zone]"
	}
	var clock int64
	if i < len(b) && (b[i] == 'T' || b[i] == 't' || b[i] == ' ') {
		c, n, r := parseClockAt(b[i+1:], digits)
		if r != "" {
			return 0, false, r
		}
		clock = c
		i += 1 + n
	}
	var offset int64 // seconds east of UTC
	if i < len(b) {
		switch b[i] {
		case 'Z', 'z':
			zoned = true
			i++
		case '+', '-':
			zoned = true
			sign := int64(1)
			if b[i] == '-' {
				sign = -1
			}
			rest := b[i+1:]
			hh, ok := digitsAt(rest, 0, 2)
			if !ok {
				return 0, false, "bad zone offset"
			}
			var mm int64
			used := 2
			switch {
			case len(rest) >= 5 && rest[2] == ':':
				mm, ok = digitsAt(rest, 3, 2)
				used = 5
			case len(rest) >= 4:
				mm, ok = digitsAt(rest, 2, 2)
				used = 4
			}
			if !ok || hh > 18 || mm > 59 {
				return 0, false, "bad zone offset"
			}
			offset = sign * (hh*3600 + mm*60)
			i += 1 + used
		}
	}
	if i != len(b) {
		return 0, false, "expected a timestamp as YYYY-MM-DDThh:mm:ss[.ffffff][zone]"
	}
	ups := unitsPerSecond(digits)
	secs := days*86400 - offset
	if secs >= math.MaxInt64/ups-86400 || secs <= math.MinInt64/ups+86400 {
		// Near the ends of the int64 range: compute exactly.
		v := new(big.Int).Mul(big.NewInt(secs), big.NewInt(ups))
		v.Add(v, big.NewInt(clock))
		if !v.IsInt64() {
			return 0, false, "out of range"
		}
		return v.Int64(), zoned, ""
	}
	return secs*ups + clock, zoned, ""
}

func hexVal(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// parseUUID parses the canonical 8-4-4-4-12 form (any case) or 32 hex digits.
func parseUUID(b []byte) ([16]byte, bool) {
	var u [16]byte
	switch len(b) {
	case 36:
		if b[8] != '-' || b[13] != '-' || b[18] != '-' || b[23] != '-' {
			return u, false
		}
	case 32:
	default:
		return u, false
	}
	j := 0
	for i := 0; i < len(b); {
		if b[i] == '-' && len(b) == 36 {
			i++
			continue
		}
		hi, ok1 := hexVal(b[i])
		lo, ok2 := hexVal(b[i+1])
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return u, true
}

// decodeBase64 decodes standard base64, padded or not, appending to dst.
func decodeBase64(dst, src []byte) ([]byte, bool) {
	enc := base64.StdEncoding
	if len(src)%4 != 0 {
		enc = base64.RawStdEncoding
	}
	n := enc.DecodedLen(len(src))
	start := len(dst)
	dst = growBytes(dst, n)
	m, err := enc.Decode(dst[start:start+n], src)
	if err != nil {
		return dst[:start], false
	}
	return dst[:start+m], true
}

func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
