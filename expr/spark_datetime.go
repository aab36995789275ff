package expr

import (
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// truncMicros truncates a timestamp (microseconds, UTC) to unit as Spark's
// date_trunc does; ok is false for an unknown unit.
func truncMicros(us int64, unit string) (int64, bool) {
	t := utcMicros(us)
	day := func(y int, m time.Month, d int) int64 {
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).UnixMicro()
	}
	switch strings.ToUpper(unit) {
	case "YEAR", "YYYY", "YY":
		return day(t.Year(), 1, 1), true
	case "QUARTER":
		return day(t.Year(), (t.Month()-1)/3*3+1, 1), true
	case "MONTH", "MM", "MON":
		return day(t.Year(), t.Month(), 1), true
	case "WEEK":
		back := (int(t.Weekday()) + 6) % 7 // days since Monday
		return day(t.Year(), t.Month(), t.Day()-back), true
	case "DAY", "DD":
		return floorDiv(us, microsPerDay) * microsPerDay, true
	case "HOUR":
		return floorDiv(us, 3600*microsPerSecond) * 3600 * microsPerSecond, true
	case "MINUTE":
		return floorDiv(us, 60*microsPerSecond) * 60 * microsPerSecond, true
	case "SECOND":
		return floorDiv(us, microsPerSecond) * microsPerSecond, true
	case "MILLISECOND":
		return floorDiv(us, 1000) * 1000, true
	case "MICROSECOND":
		return us, true
	}
	return 0, false
}

// truncDays truncates a date to unit as Spark's trunc does (YEAR, QUARTER,
// MONTH, WEEK only).
func truncDays(d int64, unit string) (int64, bool) {
	switch strings.ToUpper(unit) {
	case "YEAR", "YYYY", "YY", "QUARTER", "MONTH", "MM", "MON", "WEEK":
		us, _ := truncMicros(d*microsPerDay, unit)
		return floorDiv(us, microsPerDay), true
	}
	return 0, false
}

// addMonths is Spark's add_months: the day is kept, or becomes the last day
// of a shorter month.
func addMonths(d, n int64) (int64, bool) {
	t := utcDays(d)
	total := int64(t.Year())*12 + int64(t.Month()-1) + n
	y, m := floorDiv(total, 12), total-floorDiv(total, 12)*12+1
	if y < -290000 || y > 290000 {
		return 0, false
	}
	last := time.Date(int(y), time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	return daysOf(time.Date(int(y), time.Month(m), min(t.Day(), last), 0, 0, 0, 0, time.UTC)), true
}

const defaultTimestampPattern = "yyyy-MM-dd HH:mm:ss"

// patternArg binds an optional constant pattern argument.
func patternArg(e *Call, args []node, i int, def string) (*dtPattern, bool, error) {
	src := def
	if i < len(args) {
		s, ok, err := constStrArg(e, args, i, "the pattern")
		if err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, nil
		}
		src = s
	}
	p, err := compilePattern(src)
	if err != nil {
		return nil, false, &BindError{Pos: e.Args[min(i, len(e.Args)-1)].Pos(), Kind: ErrInvalidArgument, Msg: strings.ToLower(e.Name) + ": " + err.Error()}
	}
	return p, true, nil
}

// parseWith binds to_date/to_timestamp/unix_timestamp's string argument:
// parsed with the pattern when there is one, cast otherwise. conv gives the
// result from microseconds.
func (b *binder) parseWith(e *Call, args []node, dt arrow.DataType, defPattern string, conv func(us int64) any) (node, error) {
	x := args[0]
	if len(args) == 1 && defPattern == "" && dt.ID() == arrow.DATE32 {
		return b.dateArg(e, args, 0) // CAST(x AS DATE)
	}
	if (len(args) == 1 && defPattern == "") || familyOf(x.dataType()) != famString {
		switch familyOf(x.dataType()) {
		case famString, famDate, famTimestamp, famNull:
		default:
			return nil, argTypeErr(e, 0, "a string, date or timestamp", x)
		}
		ts, err := b.tsArg(e, args, 0)
		if err != nil {
			return nil, err
		}
		if len(args) > 1 {
			if _, _, err := patternArg(e, args, 1, ""); err != nil {
				return nil, err
			}
		}
		return pureFn(e, dt, []node{ts}, func(v []any) any { return conv(v[0].(int64)) }), nil
	}
	p, ok, err := patternArg(e, args, 1, defPattern)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &constNode{dt: dt}, nil
	}
	s, err := b.strArg(e, args, 0)
	if err != nil {
		return nil, err
	}
	return fn(e, dt, []node{s}, func(v []any) (any, error) {
		us, err := p.parse(v[0].(string))
		if err != nil {
			return nil, err
		}
		return conv(us), nil
	}), nil
}

func datetimeBuiltins() []*builtin {
	days := func(v any) time.Time { return utcDays(v.(int64)) }
	micros := func(v any) time.Time { return utcMicros(v.(int64)) }
	dateField := func(name string, aliases []string, doc string, f func(t time.Time) int) *builtin {
		return def(name, aliases, 1, 1, strings.ToLower(name)+"(d DATE) -> INT", doc,
			simplePure(i32Type, func(v []any) any { return int64(f(days(v[0]))) }, aDate))
	}
	timeField := func(name, doc string, f func(t time.Time) int) *builtin {
		return def(name, nil, 1, 1, strings.ToLower(name)+"(ts TIMESTAMP) -> INT", doc,
			simplePure(i32Type, func(v []any) any { return int64(f(micros(v[0]))) }, aTs))
	}
	addDays := func(sign int64) func([]any) (any, error) {
		return func(v []any) (any, error) {
			r := v[0].(int64) + sign*v[1].(int64)
			if !fitsInt32(r) {
				return nil, invalidArg("the date is out of range")
			}
			return r, nil
		}
	}
	return []*builtin{
		def("CURRENT_DATE", []string{"CURDATE"}, 0, 0, "current_date() -> DATE", "Today in UTC, the same for the whole statement (also without parentheses).",
			func(b *binder, e *Call, args []node) (node, error) {
				return &constNode{dt: dateType, val: floorDiv(b.nowMicros(), microsPerDay)}, nil
			}),
		def("CURRENT_TIMESTAMP", []string{"NOW"}, 0, 0, "current_timestamp() -> TIMESTAMP", "The current instant, the same for the whole statement (also without parentheses).",
			func(b *binder, e *Call, args []node) (node, error) {
				return &constNode{dt: tsType, val: b.nowMicros()}, nil
			}),
		def("DATE_ADD", nil, 2, 2, "date_add(start DATE, days INT) -> DATE", "The date days after start.",
			simple(dateType, addDays(1), aDate, aInt)),
		def("DATE_SUB", nil, 2, 2, "date_sub(start DATE, days INT) -> DATE", "The date days before start.",
			simple(dateType, addDays(-1), aDate, aInt)),
		def("DATEDIFF", nil, 2, 2, "datediff(end DATE, start DATE) -> INT", "The number of days from start to end.",
			simplePure(i32Type, func(v []any) any { return v[0].(int64) - v[1].(int64) }, aDate)),
		def("ADD_MONTHS", nil, 2, 2, "add_months(start DATE, months INT) -> DATE", "The date months after start; the day is cut to the end of a shorter month.",
			simple(dateType, func(v []any) (any, error) {
				r, ok := addMonths(v[0].(int64), v[1].(int64))
				if !ok || !fitsInt32(r) {
					return nil, invalidArg("the date is out of range")
				}
				return r, nil
			}, aDate, aInt)),
		def("LAST_DAY", nil, 1, 1, "last_day(d DATE) -> DATE", "The last day of d's month.",
			simplePure(dateType, func(v []any) any {
				t := days(v[0])
				return daysOf(time.Date(t.Year(), t.Month()+1, 0, 0, 0, 0, 0, time.UTC))
			}, aDate)),
		def("MAKE_DATE", nil, 3, 3, "make_date(year INT, month INT, day INT) -> DATE", "The date of the given fields; a day that does not exist is an error.",
			simple(dateType, func(v []any) (any, error) {
				y, m, d := v[0].(int64), v[1].(int64), v[2].(int64)
				if y < 1 || y > 9999 {
					return nil, invalidArg("year %d is out of range 1 to 9999", y)
				}
				r, ok := civilDays(int(y), int(m), int(d))
				if !ok || m < 1 || m > 12 || d < 1 || d > 31 {
					return nil, invalidArg("%04d-%02d-%02d is not a date", y, m, d)
				}
				return r, nil
			}, aInt)),
		def("TO_DATE", nil, 1, 2, "to_date(s STRING[, pattern STRING]) -> DATE",
			"s read with the datetime pattern (as CAST(s AS DATE) without one); a string that does not fit is an error.",
			func(b *binder, e *Call, args []node) (node, error) {
				return b.parseWith(e, args, dateType, "", func(us int64) any { return floorDiv(us, microsPerDay) })
			}),
		def("TO_TIMESTAMP", nil, 1, 2, "to_timestamp(s STRING[, pattern STRING]) -> TIMESTAMP",
			"s read with the datetime pattern, in UTC (as CAST(s AS TIMESTAMP) without one).",
			func(b *binder, e *Call, args []node) (node, error) {
				return b.parseWith(e, args, tsType, "", func(us int64) any { return us })
			}),
		def("UNIX_TIMESTAMP", nil, 0, 2, "unix_timestamp([x STRING | DATE | TIMESTAMP[, pattern STRING]]) -> BIGINT",
			"Seconds since 1970-01-01 UTC of x (a string read with pattern, 'yyyy-MM-dd HH:mm:ss' by default), or of now.",
			func(b *binder, e *Call, args []node) (node, error) {
				if len(args) == 0 {
					return &constNode{dt: i64Type, val: b.nowMicros() / microsPerSecond}, nil
				}
				// NB: Spark divides, truncating toward zero (-0.5 s is 0)
				return b.parseWith(e, args, i64Type, defaultTimestampPattern, func(us int64) any { return us / microsPerSecond })
			}),
		def("FROM_UNIXTIME", nil, 1, 2, "from_unixtime(seconds BIGINT[, pattern STRING]) -> STRING",
			"The UTC time seconds after 1970-01-01 written with pattern ('yyyy-MM-dd HH:mm:ss' by default).",
			func(b *binder, e *Call, args []node) (node, error) {
				s, err := b.intArg(e, args, 0)
				if err != nil {
					return nil, err
				}
				p, ok, err := patternArg(e, args, 1, defaultTimestampPattern)
				if err != nil || !ok {
					return &constNode{dt: strType}, err
				}
				return fn(e, strType, []node{s}, func(v []any) (any, error) {
					sec := v[0].(int64)
					if sec > 253402300799 || sec < -62135596800 {
						return nil, invalidArg("%d seconds is out of the range of years 1 to 9999", sec)
					}
					return p.format(time.Unix(sec, 0).UTC()), nil
				}), nil
			}),
		def("DATE_FORMAT", nil, 2, 2, "date_format(ts TIMESTAMP, pattern STRING) -> STRING", "ts (UTC) written with the datetime pattern.",
			func(b *binder, e *Call, args []node) (node, error) {
				ts, err := b.tsArg(e, args, 0)
				if err != nil {
					return nil, err
				}
				p, ok, err := patternArg(e, args, 1, "")
				if err != nil || !ok {
					return &constNode{dt: strType}, err
				}
				return pureFn(e, strType, []node{ts}, func(v []any) any { return p.format(micros(v[0])) }), nil
			}),
		dateField("YEAR", nil, "The year of d (timestamps: of their UTC date).", func(t time.Time) int { return t.Year() }),
		dateField("QUARTER", nil, "The quarter of d, 1 to 4.", func(t time.Time) int { return (int(t.Month())-1)/3 + 1 }),
		dateField("MONTH", nil, "The month of d, 1 to 12.", func(t time.Time) int { return int(t.Month()) }),
		dateField("DAY", []string{"DAYOFMONTH"}, "The day of the month of d, 1 to 31.", func(t time.Time) int { return t.Day() }),
		dateField("DAYOFWEEK", nil, "The day of the week of d, 1 (Sunday) to 7 (Saturday).", func(t time.Time) int { return int(t.Weekday()) + 1 }),
		dateField("DAYOFYEAR", nil, "The day of the year of d, 1 to 366.", func(t time.Time) int { return t.YearDay() }),
		dateField("WEEKOFYEAR", nil, "The ISO 8601 week of d, 1 to 53.", func(t time.Time) int { _, w := t.ISOWeek(); return w }),
		timeField("HOUR", "The hour of ts in UTC, 0 to 23.", func(t time.Time) int { return t.Hour() }),
		timeField("MINUTE", "The minute of ts, 0 to 59.", func(t time.Time) int { return t.Minute() }),
		timeField("SECOND", "The second of ts, 0 to 59 (the fraction dropped).", func(t time.Time) int { return t.Second() }),
		def("DATE_TRUNC", nil, 2, 2, "date_trunc(unit STRING, ts TIMESTAMP) -> TIMESTAMP",
			"ts cut to the start of its unit: YEAR, QUARTER, MONTH, WEEK (Monday), DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND.",
			func(b *binder, e *Call, args []node) (node, error) {
				ts, err := b.tsArg(e, args, 1)
				if err != nil {
					return nil, err
				}
				u, err := b.strArg(e, args, 0)
				if err != nil {
					return nil, err
				}
				if c, ok := u.(*constNode); ok && c.val != nil {
					if _, ok := truncMicros(0, c.val.(string)); !ok {
						return nil, bindErr(e.Args[0].Pos(), ErrInvalidArgument, "date_trunc: unknown unit %s; expected YEAR, QUARTER, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND or MICROSECOND", quoteString(c.val.(string)))
					}
				}
				return pureFn(e, ts.dataType(), []node{u, ts}, func(v []any) any {
					r, ok := truncMicros(v[1].(int64), v[0].(string))
					if !ok {
						return nil
					}
					return r
				}), nil
			}),
		def("TRUNC", nil, 2, 2, "trunc(d DATE, unit STRING) -> DATE",
			"d cut to the first day of its unit: YEAR, QUARTER, MONTH or WEEK (Monday).",
			func(b *binder, e *Call, args []node) (node, error) {
				d, err := b.dateArg(e, args, 0)
				if err != nil {
					return nil, err
				}
				u, err := b.strArg(e, args, 1)
				if err != nil {
					return nil, err
				}
				if c, ok := u.(*constNode); ok && c.val != nil {
					if _, ok := truncDays(0, c.val.(string)); !ok {
						return nil, bindErr(e.Args[1].Pos(), ErrInvalidArgument, "trunc: unknown unit %s; expected YEAR, QUARTER, MONTH or WEEK", quoteString(c.val.(string)))
					}
				}
				return pureFn(e, dateType, []node{d, u}, func(v []any) any {
					r, ok := truncDays(v[0].(int64), v[1].(string))
					if !ok {
						return nil
					}
					return r
				}), nil
			}),
	}
}

// dateArith binds date + days, days + date and date - days as Spark does
// (date_add and date_sub); ok is false for other operands.
func (b *binder) dateArith(e *Binary, l, r node) (node, bool, error) {
	fl, fr := familyOf(l.dataType()), familyOf(r.dataType())
	var d, n node
	var nExpr Expr
	switch {
	case fl == famDate && fr == famInt && (e.Op == OpAdd || e.Op == OpSub):
		d, n, nExpr = l, r, e.R
	case fl == famInt && fr == famDate && e.Op == OpAdd:
		d, n, nExpr = r, l, e.L
	default:
		return nil, false, nil
	}
	n, err := b.castTo(n, i64Type, nExpr)
	if err != nil {
		return nil, true, err
	}
	sign, name := int64(1), "date_add"
	if e.Op == OpSub {
		sign, name = -1, "date_sub"
	}
	return &rowFunc{name: name, args: []node{d, n}, dt: dateType, src: e, f: func(v []any) (any, error) {
		r := v[0].(int64) + sign*v[1].(int64)
		if !fitsInt32(r) {
			return nil, invalidArg("the date is out of range")
		}
		return r, nil
	}}, true, nil
}
