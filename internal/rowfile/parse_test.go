package rowfile

import (
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

func TestParseInt(t *testing.T) {
	for _, tc := range []struct {
		in     string
		bits   int
		want   int64
		reason string
	}{
		{"0", 64, 0, ""},
		{"-0", 64, 0, ""},
		{"+12", 64, 12, ""},
		{"007", 32, 7, ""},
		{"9223372036854775807", 64, math.MaxInt64, ""},
		{"-9223372036854775808", 64, math.MinInt64, ""},
		{"9223372036854775808", 64, 0, "out of range for a 64-bit integer"},
		{"99999999999999999999", 64, 0, "out of range for a 64-bit integer"},
		{"2147483647", 32, math.MaxInt32, ""},
		{"2147483648", 32, 0, "out of range for a 32-bit integer"},
		{"-2147483648", 32, math.MinInt32, ""},
		{"1.0", 64, 1, ""},
		{"1e3", 64, 1000, ""},
		{"1.5e1", 64, 15, ""},
		{"15e-1", 64, 0, "not an integer"},
		{"1.5", 64, 0, "not an integer"},
		{"1e400", 64, 0, "out of range for a 64-bit integer"},
		{"", 64, 0, "not a number"},
		{"-", 64, 0, "not a number"},
		{"1_000", 64, 0, "not a number"},
		{"0x10", 64, 0, "not a number"},
		{"12a", 64, 0, "not a number"},
		{"127", 8, 127, ""},
		{"128", 8, 0, "out of range for a 8-bit integer"},
	} {
		got, reason := parseInt([]byte(tc.in), tc.bits)
		if got != tc.want || reason != tc.reason {
			t.Errorf("parseInt(%q, %d) = %d, %q; want %d, %q", tc.in, tc.bits, got, reason, tc.want, tc.reason)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for _, tc := range []struct {
		in          string
		prec, scale int32
		want        string // unscaled value
		reason      string
	}{
		{"12.3", 10, 2, "1230", ""},
		{"-12.30", 10, 2, "-1230", ""},
		{"0.05", 10, 2, "5", ""},
		{".5", 10, 2, "50", ""},
		{"5.", 10, 2, "500", ""},
		{"1.500", 10, 2, "150", ""},
		{"1.005", 10, 2, "", "more than 2 fractional digits (no rounding is done)"},
		{"1e2", 10, 2, "10000", ""},
		{"1.25e-1", 10, 3, "125", ""},
		{"12345678.99", 10, 2, "1234567899", ""},
		{"123456789.00", 10, 2, "", "more than 10 digits (precision 10)"},
		{"12345678901234567890123456789012345678", 38, 0, "12345678901234567890123456789012345678", ""},
		{"-9999999999999999999999999999.9999999999", 38, 10, "-99999999999999999999999999999999999999", ""},
		{"123456789012345678901234567890123456789", 38, 0, "", "more than 38 digits (precision 38)"},
		{"1e100", 38, 0, "", "more than 38 digits (precision 38)"},
		{"abc", 10, 2, "", "not a decimal number"},
		{"NaN", 10, 2, "", "not a decimal number"},
		{"1,5", 10, 2, "", "not a decimal number"},
		{"0", 5, 5, "0", ""},
	} {
		got, reason := parseDecimal([]byte(tc.in), tc.prec, tc.scale)
		if reason != tc.reason || (reason == "" && got.BigInt().String() != tc.want) {
			t.Errorf("parseDecimal(%q, %d, %d) = %s, %q; want %s, %q", tc.in, tc.prec, tc.scale, got.BigInt(), reason, tc.want, tc.reason)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	ref := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	for _, tc := range []struct {
		in     string
		want   int64
		zoned  bool
		reason string
	}{
		{"2024-01-02T03:04:05Z", ref("2024-01-02T03:04:05Z"), true, ""},
		{"2024-01-02T03:04:05.123456Z", ref("2024-01-02T03:04:05.123456Z"), true, ""},
		{"2024-01-02T03:04:05.1234560Z", ref("2024-01-02T03:04:05.123456Z"), true, ""},
		{"2024-01-02T03:04:05.1234567Z", 0, false, "more than 6 fractional second digits (no rounding is done)"},
		{"2024-01-02 03:04:05", ref("2024-01-02T03:04:05Z"), false, ""},
		{"2024-01-02T03:04", ref("2024-01-02T03:04:00Z"), false, ""},
		{"2024-01-02", ref("2024-01-02T00:00:00Z"), false, ""},
		{"2024-01-02T03:04:05+01:00", ref("2024-01-02T02:04:05Z"), true, ""},
		{"2024-01-02T03:04:05-0530", ref("2024-01-02T08:34:05Z"), true, ""},
		{"2024-01-02T03:04:05+01", ref("2024-01-02T02:04:05Z"), true, ""},
		{"1969-12-31T23:59:59.999999Z", -1, true, ""},
		{"0001-01-01T00:00:00Z", ref("0001-01-01T00:00:00Z"), true, ""},
		{"2024-13-01T00:00:00", 0, false, "expected a timestamp as YYYY-MM-DDThh:mm:ss[.ffffff][zone]"},
		{"2024-01-02T24:00:00", 0, false, "time out of range"},
		{"2024-01-02T03:04:05 UTC", 0, false, "expected a timestamp as YYYY-MM-DDThh:mm:ss[.ffffff][zone]"},
		{"2024-01-02T03:04:05+25:00", 0, false, "bad zone offset"},
		{"2024/01/02", 0, false, "expected a timestamp as YYYY-MM-DDThh:mm:ss[.ffffff][zone]"},
		{"1700000000", 0, false, "expected a timestamp as YYYY-MM-DDThh:mm:ss[.ffffff][zone]"},
	} {
		got, zoned, reason := parseTimestamp([]byte(tc.in), 6)
		if got != tc.want || zoned != tc.zoned || reason != tc.reason {
			t.Errorf("parseTimestamp(%q) = %d, %v, %q; want %d, %v, %q", tc.in, got, zoned, reason, tc.want, tc.zoned, tc.reason)
		}
	}
	// Nanoseconds, at the edge of the int64 range.
	if v, _, r := parseTimestamp([]byte("2262-04-11T23:47:16.854775807Z"), 9); r != "" || v != math.MaxInt64 {
		t.Errorf("max ns: %d %q", v, r)
	}
	if v, _, r := parseTimestamp([]byte("1677-09-21T00:12:43.145224192"), 9); r != "" || v != math.MinInt64 {
		t.Errorf("min ns: %d %q", v, r)
	}
	if _, _, r := parseTimestamp([]byte("1677-09-21T00:12:43.145224191"), 9); r != "out of range" {
		t.Errorf("below ns range: %q", r)
	}
	if _, _, r := parseTimestamp([]byte("2262-04-11T23:47:16.854775808Z"), 9); r != "out of range" {
		t.Errorf("beyond ns range: %q", r)
	}
	if _, _, r := parseTimestamp([]byte("2263-01-01T00:00:00Z"), 9); r != "out of range" {
		t.Errorf("beyond ns range: %q", r)
	}
}

func TestParseDateTimeUUIDBool(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   int32
		reason string
	}{
		{"1970-01-01", 0, ""}, {"2024-02-29", 19782, ""}, {"1969-12-31", -1, ""},
		{"2023-02-29", 0, "no such date"}, {"2024-04-31", 0, "no such date"},
		{"2024-1-2", 0, "expected a date as YYYY-MM-DD"}, {"2024-01-02T00:00:00", 0, "expected a date as YYYY-MM-DD"},
	} {
		got, reason := parseDate([]byte(tc.in))
		if got != tc.want || reason != tc.reason {
			t.Errorf("parseDate(%q) = %d, %q", tc.in, got, reason)
		}
	}
	for _, tc := range []struct {
		in     string
		want   int64
		reason string
	}{
		{"00:00:00", 0, ""}, {"03:04:05.123456", 11045123456, ""}, {"23:59:59.999999", 86399999999, ""},
		{"12:30", 45000000000, ""}, {"24:00:00", 0, "time out of range"},
		{"03:04:05Z", 0, "expected a time as hh:mm:ss[.ffffff] without zone"},
		{"03:04:05.1234567", 0, "more than 6 fractional second digits (no rounding is done)"},
	} {
		got, reason := parseTime([]byte(tc.in), 6)
		if got != tc.want || reason != tc.reason {
			t.Errorf("parseTime(%q) = %d, %q", tc.in, got, reason)
		}
	}
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"0f7e6b2c-3b7a-4b8e-9c39-6d3b1c2e1f00", true}, {"0F7E6B2C-3B7A-4B8E-9C39-6D3B1C2E1F00", true},
		{"0f7e6b2c3b7a4b8e9c396d3b1c2e1f00", true}, {"0f7e6b2c-3b7a-4b8e-9c39-6d3b1c2e1f0", false},
		{"0f7e6b2c-3b7a-4b8e-9c39-6d3b1c2e1f0g", false}, {"0f7e6b2c+3b7a-4b8e-9c39-6d3b1c2e1f00", false},
	} {
		u, ok := parseUUID([]byte(tc.in))
		if ok != tc.ok || (ok && string(appendUUID(nil, u[:])) != "0f7e6b2c-3b7a-4b8e-9c39-6d3b1c2e1f00") {
			t.Errorf("parseUUID(%q) = %x, %v", tc.in, u, ok)
		}
	}
	for in, want := range map[string]int{"true": 1, "TRUE": 1, "False": 0, "1": 1, "0": 0, "yes": -1, "t": -1, "": -1} {
		v, ok := parseBool([]byte(in))
		got := -1
		if ok {
			got = map[bool]int{true: 1, false: 0}[v]
		}
		if got != want {
			t.Errorf("parseBool(%q) = %d", in, got)
		}
	}
}

func TestCivilDays(t *testing.T) {
	start := time.Date(-400, 1, 1, 0, 0, 0, 0, time.UTC)
	for d := 0; d < 365*2500; d += 17 {
		tm := start.AddDate(0, 0, d)
		days := tm.Unix() / 86400
		if got := daysFromCivil(int64(tm.Year()), int64(tm.Month()), int64(tm.Day())); got != days {
			t.Fatalf("daysFromCivil(%s) = %d, want %d", tm, got, days)
		}
		y, m, dd := civilFromDays(days)
		if y != int64(tm.Year()) || m != int64(tm.Month()) || dd != int64(tm.Day()) {
			t.Fatalf("civilFromDays(%d) = %d-%d-%d, want %s", days, y, m, dd, tm)
		}
	}
}

func TestFormatValues(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		bits int
		want string
	}{
		{0, 64, "0"}, {math.Copysign(0, -1), 64, "-0"}, {1.5, 64, "1.5"}, {0.1, 64, "0.1"},
		{1e21, 64, "1e+21"}, {1e20, 64, "100000000000000000000"}, {1e-7, 64, "1e-7"}, {1e-6, 64, "0.000001"},
		{math.NaN(), 64, "NaN"}, {math.Inf(1), 64, "Infinity"}, {math.Inf(-1), 64, "-Infinity"},
		{float64(float32(0.1)), 32, "0.1"}, {math.MaxFloat64, 64, "1.7976931348623157e+308"},
	} {
		if got := string(appendFloat(nil, tc.v, tc.bits)); got != tc.want {
			t.Errorf("appendFloat(%v) = %s, want %s", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		unscaled int64
		scale    int32
		want     string
	}{
		{1230, 2, "12.30"}, {-5, 2, "-0.05"}, {0, 2, "0.00"}, {7, 0, "7"}, {-123456, 3, "-123.456"}, {5, -2, "500"},
	} {
		if got := string(appendDecimal(nil, decimal128.FromI64(tc.unscaled), tc.scale)); got != tc.want {
			t.Errorf("appendDecimal(%d, %d) = %s, want %s", tc.unscaled, tc.scale, got, tc.want)
		}
	}
	big := decimal128.FromI64(-1).Mul(decimal128.GetMaxValue(38))
	if got := string(appendDecimal(nil, big, 10)); got != "-9999999999999999999999999999.9999999999" {
		t.Errorf("38 digits: %s", got)
	}
	for _, tc := range []struct {
		ticks  int64
		digits int
		zoned  bool
		want   string
	}{
		{0, 6, true, "1970-01-01T00:00:00Z"},
		{-1, 6, true, "1969-12-31T23:59:59.999999Z"},
		{1704164645123456, 6, false, "2024-01-02T03:04:05.123456"},
		{1704164645120000, 6, true, "2024-01-02T03:04:05.12Z"},
		{math.MaxInt64, 9, true, "2262-04-11T23:47:16.854775807Z"},
		{math.MinInt64, 9, false, "1677-09-21T00:12:43.145224192"},
	} {
		if got := string(appendTimestamp(nil, tc.ticks, tc.digits, tc.zoned)); got != tc.want {
			t.Errorf("appendTimestamp(%d) = %s, want %s", tc.ticks, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"}, {"a\nb\tc", `a\nb\tc`}, {"\x01", `\x01`}, {"0123456789", "0123456789"},
		{"0123456789A", "012345678…"}, {"漢字漢字漢字", "漢字漢字…"}, {"\xff", "\uFFFD"},
	} {
		if got := displayCell([]byte(tc.in), 10); got != tc.want {
			t.Errorf("displayCell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := string(appendJSONString(nil, "a\"\\\n\x01\xffé")); got != `"a\"\\\n\u0001\ufffdé"` {
		t.Errorf("appendJSONString = %s", got)
	}
}
