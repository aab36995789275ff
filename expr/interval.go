package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// Interval literals: INTERVAL n unit [n unit ...], with n an integer,
// optionally quoted ('30'), and unit one of YEAR, MONTH, WEEK, DAY, HOUR,
// MINUTE, SECOND (singular or plural), either all year-month or all
// day-time fields, as in Spark. They only appear as the right side
// of date/timestamp + or -, or the left side of +, as Spark's common
// `ts >= current_timestamp() - INTERVAL 30 DAYS`. The Literal's Value is an
// arrow.MonthDayNanoInterval.

var intervalType = arrow.FixedWidthTypes.MonthDayNanoInterval

var intervalUnits = map[string]string{
	"YEAR": "YEAR", "YEARS": "YEAR", "MONTH": "MONTH", "MONTHS": "MONTH", "WEEK": "WEEK", "WEEKS": "WEEK",
	"DAY": "DAY", "DAYS": "DAY", "HOUR": "HOUR", "HOURS": "HOUR", "MINUTE": "MINUTE", "MINUTES": "MINUTE",
	"SECOND": "SECOND", "SECONDS": "SECOND",
}

// startsInterval reports whether the INTERVAL keyword at the current token
// begins an interval literal (it may also be a column named interval).
func (p *parser) startsInterval() bool {
	n := p.peekAt(1)
	return n.kind == tNumber || n.kind == tString || (n.kind == tOp && n.text == "-" && p.peekAt(2).kind == tNumber)
}

func (p *parser) parseInterval() (Expr, error) {
	t := p.next() // INTERVAL
	var iv arrow.MonthDayNanoInterval
	var parts []string
	tooBig := func(pos int) error { return p.errAt(pos, "the interval is too large") }
	for len(parts) == 0 || p.peek().kind == tNumber || p.peek().kind == tString {
		vt := p.peek()
		neg := false
		if len(parts) == 0 && p.atOp("-") {
			p.next()
			neg = true
			vt = p.peek()
		}
		var text string
		switch {
		case vt.kind == tNumber && vt.suffix == "" && !strings.ContainsAny(vt.text, ".eE"):
			text = vt.text
		case vt.kind == tString:
			text = strings.TrimSpace(vt.text)
		default:
			return nil, p.expected("a whole number of units after INTERVAL")
		}
		p.next()
		n, err := strconv.ParseInt(text, 10, 32)
		if err != nil {
			return nil, p.errAt(vt.pos, fmt.Sprintf("expected a whole number of units but found %s", quoteString(text)))
		}
		if neg {
			n = -n
		}
		ut := p.peek()
		unit, ok := intervalUnits[strings.ToUpper(ut.text)]
		if ut.kind != tIdent || !ok {
			return nil, p.expected("an interval unit (YEAR, MONTH, WEEK, DAY, HOUR, MINUTE or SECOND)")
		}
		p.next()
		add32 := func(dst *int32, v int64) bool {
			r := int64(*dst) + v
			if r > 1<<31-1 || r < -1<<31 {
				return false
			}
			*dst = int32(r)
			return true
		}
		ok = true
		switch unit {
		case "YEAR":
			ok = add32(&iv.Months, 12*n)
		case "MONTH":
			ok = add32(&iv.Months, n)
		case "WEEK":
			ok = add32(&iv.Days, 7*n)
		case "DAY":
			ok = add32(&iv.Days, n)
		default:
			per := map[string]int64{"HOUR": 3600e9, "MINUTE": 60e9, "SECOND": 1e9}[unit]
			var ns int64
			if ns, ok = mul64(n, per); ok {
				iv.Nanoseconds, ok = add64(iv.Nanoseconds, ns)
			}
		}
		if !ok {
			return nil, tooBig(vt.pos)
		}
		parts = append(parts, fmt.Sprintf("'%d' %s", n, unit))
	}
	if iv.Months != 0 && (iv.Days != 0 || iv.Nanoseconds != 0) {
		// as Spark: a year-month interval and a day-time one are two types
		return nil, p.errAt(t.pos, "an INTERVAL cannot mix year-month fields (YEAR, MONTH) with day-time fields (WEEK, DAY, HOUR, MINUTE, SECOND)")
	}
	return &Literal{P: t.pos, Type: intervalType, Value: iv, Text: "INTERVAL " + strings.Join(parts, " ")}, nil
}

func isInterval(e Expr) (arrow.MonthDayNanoInterval, bool) {
	l, ok := e.(*Literal)
	if !ok || !arrow.TypeEqual(l.Type, intervalType) {
		return arrow.MonthDayNanoInterval{}, false
	}
	return l.Value.(arrow.MonthDayNanoInterval), true
}

// bindInterval binds x + iv or x - iv (sign -1) for a date or timestamp x,
// as Spark does: months first (the day cut to the end of a shorter month),
// then days, then the time; a date stays a date when the interval has no
// time part, and becomes a timestamp otherwise.
func (b *binder) bindInterval(e *Binary, xe Expr, iv arrow.MonthDayNanoInterval, sign int64) (node, error) {
	x, err := b.bind(xe)
	if err != nil {
		return nil, err
	}
	months, days, micros := sign*int64(iv.Months), sign*int64(iv.Days), sign*(iv.Nanoseconds/1000)
	var dt arrow.DataType
	switch f := familyOf(x.dataType()); {
	case f == famNull:
		return &constNode{dt: tsType}, nil
	case f == famDate && micros == 0:
		return &rowFunc{name: "interval arithmetic", args: []node{x}, dt: dateType, src: e, f: func(v []any) (any, error) {
			d, ok := addMonths(v[0].(int64), months)
			if !ok || !fitsInt32(d+days) {
				return nil, invalidArg("the date is out of range")
			}
			return d + days, nil
		}}, nil
	case f == famDate:
		dt = tsType
	case f == famTimestamp:
		dt = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: x.dataType().(*arrow.TimestampType).TimeZone}
	default:
		return nil, bindErr(e.OpPos, ErrType, "cannot apply %q to %s and an INTERVAL: intervals are added to or subtracted from dates and timestamps", e.Op.String(), describe(xe, x.dataType()))
	}
	if x, err = b.castTo(x, dt, xe); err != nil {
		return nil, err
	}
	return &rowFunc{name: "interval arithmetic", args: []node{x}, dt: dt, src: e, f: func(v []any) (any, error) {
		us := v[0].(int64)
		day, tod := floorDiv(us, microsPerDay), us-floorDiv(us, microsPerDay)*microsPerDay
		d, ok := addMonths(day, months)
		if !ok {
			return nil, invalidArg("the timestamp is out of range")
		}
		r, ok1 := mul64(d+days, microsPerDay)
		r, ok2 := add64(r, tod)
		r, ok3 := add64(r, micros)
		if !ok1 || !ok2 || !ok3 {
			return nil, invalidArg("the timestamp is out of range")
		}
		return r, nil
	}}, nil
}
