package rowfile

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// This file prints values in the stable text forms other tools parse:
// ISO-8601 dates and times (UTC with Z for timestamptz, fractional zeros
// trimmed), decimals keeping their scale, standard base64 for binary,
// canonical UUIDs, NaN/Infinity/-Infinity for non-finite floats, nested
// values as JSON.

// valueFormat writes one column's non-NULL values.
type valueFormat struct {
	// text appends the CSV/table form of a[i].
	text func(dst []byte, a arrow.Array, i int) []byte
	// json appends the JSON form of a[i].
	json func(dst []byte, a arrow.Array, i int) []byte
	// numeric is true for types printed as numbers (right-aligned in tables).
	numeric bool
}

// newValueFormat compiles the formatter for a type.
func newValueFormat(dt arrow.DataType) (*valueFormat, error) {
	f := &valueFormat{}
	quoted := func(text func(dst []byte, a arrow.Array, i int) []byte) func(dst []byte, a arrow.Array, i int) []byte {
		return func(dst []byte, a arrow.Array, i int) []byte {
			dst = append(dst, '"')
			dst = text(dst, a, i) // the text forms below need no escaping
			return append(dst, '"')
		}
	}
	switch t := dt.(type) {
	case *extensions.UUIDType:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendUUID(dst, a.(array.ExtensionArray).Storage().(*array.FixedSizeBinary).Value(i))
		}
		f.json = quoted(f.text)
	case *arrow.BooleanType:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendBool(dst, a.(*array.Boolean).Value(i))
		}
		f.json = f.text
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type, *arrow.Int64Type:
		f.numeric = true
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendInt(dst, intValue(a, i), 10)
		}
		f.json = f.text
	case *arrow.Uint8Type, *arrow.Uint16Type, *arrow.Uint32Type, *arrow.Uint64Type:
		f.numeric = true
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return strconv.AppendUint(dst, uintValue(a, i), 10)
		}
		f.json = f.text
	case *arrow.Float32Type:
		f.numeric = true
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendFloat(dst, float64(a.(*array.Float32).Value(i)), 32)
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			return appendJSONFloat(dst, float64(a.(*array.Float32).Value(i)), 32)
		}
	case *arrow.Float64Type:
		f.numeric = true
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendFloat(dst, a.(*array.Float64).Value(i), 64)
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			return appendJSONFloat(dst, a.(*array.Float64).Value(i), 64)
		}
	case *arrow.Decimal128Type:
		f.numeric = true
		scale := t.Scale
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendDecimal(dst, a.(*array.Decimal128).Value(i), scale)
		}
		f.json = quoted(f.text)
	case *arrow.Date32Type:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendDate(dst, int64(a.(*array.Date32).Value(i)))
		}
		f.json = quoted(f.text)
	case *arrow.Date64Type:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendDate(dst, int64(a.(*array.Date64).Value(i))/86400000)
		}
		f.json = quoted(f.text)
	case *arrow.Time32Type:
		digits := unitDigits(t.Unit)
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendClock(dst, int64(a.(*array.Time32).Value(i)), digits)
		}
		f.json = quoted(f.text)
	case *arrow.Time64Type:
		digits := unitDigits(t.Unit)
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendClock(dst, int64(a.(*array.Time64).Value(i)), digits)
		}
		f.json = quoted(f.text)
	case *arrow.TimestampType:
		digits := unitDigits(t.Unit)
		zoned := t.TimeZone != ""
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return appendTimestamp(dst, int64(a.(*array.Timestamp).Value(i)), digits, zoned)
		}
		f.json = quoted(f.text)
	case *arrow.StringType:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return append(dst, a.(*array.String).Value(i)...)
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			return appendJSONString(dst, a.(*array.String).Value(i))
		}
	case *arrow.LargeStringType:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return append(dst, a.(*array.LargeString).Value(i)...)
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			return appendJSONString(dst, a.(*array.LargeString).Value(i))
		}
	case *arrow.StringViewType:
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return append(dst, a.(*array.StringView).Value(i)...)
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			return appendJSONString(dst, a.(*array.StringView).Value(i))
		}
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		get := binaryGetter(dt)
		f.text = func(dst []byte, a arrow.Array, i int) []byte {
			return base64.StdEncoding.AppendEncode(dst, get(a, i))
		}
		f.json = quoted(f.text)
	case *arrow.NullType:
		f.text = func(dst []byte, _ arrow.Array, _ int) []byte { return dst }
		f.json = func(dst []byte, _ arrow.Array, _ int) []byte { return append(dst, "null"...) }
	case *arrow.ListType, *arrow.LargeListType:
		elem, err := newValueFormat(t.(arrow.ListLikeType).Elem())
		if err != nil {
			return nil, err
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			la := a.(array.ListLike)
			start, end := la.ValueOffsets(i)
			vals := la.ListValues()
			dst = append(dst, '[')
			for j := start; j < end; j++ {
				if j > start {
					dst = append(dst, ',')
				}
				dst = elem.appendJSON(dst, vals, int(j))
			}
			return append(dst, ']')
		}
		f.text = f.json
	case *arrow.MapType:
		key, err := newValueFormat(t.KeyType())
		if err != nil {
			return nil, err
		}
		item, err := newValueFormat(t.ItemType())
		if err != nil {
			return nil, err
		}
		stringKeys := false
		switch t.KeyType().ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
			stringKeys = true
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			m := a.(*array.Map)
			start, end := m.ValueOffsets(i)
			keys, items := m.Keys(), m.Items()
			if stringKeys {
				dst = append(dst, '{')
				for j := start; j < end; j++ {
					if j > start {
						dst = append(dst, ',')
					}
					dst = key.appendJSON(dst, keys, int(j))
					dst = append(dst, ':')
					dst = item.appendJSON(dst, items, int(j))
				}
				return append(dst, '}')
			}
			dst = append(dst, '[')
			for j := start; j < end; j++ {
				if j > start {
					dst = append(dst, ',')
				}
				dst = append(dst, `{"key":`...)
				dst = key.appendJSON(dst, keys, int(j))
				dst = append(dst, `,"value":`...)
				dst = item.appendJSON(dst, items, int(j))
				dst = append(dst, '}')
			}
			return append(dst, ']')
		}
		f.text = f.json
	case *arrow.StructType:
		children := make([]*valueFormat, t.NumFields())
		keys := make([][]byte, t.NumFields())
		for k, cf := range t.Fields() {
			c, err := newValueFormat(cf.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", cf.Name, err)
			}
			children[k] = c
			keys[k] = append(appendJSONString(nil, cf.Name), ':')
		}
		f.json = func(dst []byte, a arrow.Array, i int) []byte {
			s := a.(*array.Struct)
			dst = append(dst, '{')
			for k, c := range children {
				if k > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, keys[k]...)
				dst = c.appendJSON(dst, s.Field(k), i)
			}
			return append(dst, '}')
		}
		f.text = f.json
	default:
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, dt)
	}
	return f, nil
}

// isNull reports whether a[i] is NULL; arrays of the NULL type have no
// validity bitmap, so IsNull alone says false for them.
func isNull(a arrow.Array, i int) bool {
	return a.IsNull(i) || a.DataType().ID() == arrow.NULL
}

// appendJSON appends a[i] as JSON, null included.
func (f *valueFormat) appendJSON(dst []byte, a arrow.Array, i int) []byte {
	if isNull(a, i) {
		return append(dst, "null"...)
	}
	return f.json(dst, a, i)
}

func intValue(a arrow.Array, i int) int64 {
	switch a := a.(type) {
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	}
	panic("rowfile: not a signed integer array")
}

func uintValue(a arrow.Array, i int) uint64 {
	switch a := a.(type) {
	case *array.Uint8:
		return uint64(a.Value(i))
	case *array.Uint16:
		return uint64(a.Value(i))
	case *array.Uint32:
		return uint64(a.Value(i))
	case *array.Uint64:
		return a.Value(i)
	}
	panic("rowfile: not an unsigned integer array")
}

func binaryGetter(dt arrow.DataType) func(a arrow.Array, i int) []byte {
	switch dt.ID() {
	case arrow.BINARY:
		return func(a arrow.Array, i int) []byte { return a.(*array.Binary).Value(i) }
	case arrow.LARGE_BINARY:
		return func(a arrow.Array, i int) []byte { return a.(*array.LargeBinary).Value(i) }
	case arrow.BINARY_VIEW:
		return func(a arrow.Array, i int) []byte { return a.(*array.BinaryView).Value(i) }
	}
	return func(a arrow.Array, i int) []byte { return a.(*array.FixedSizeBinary).Value(i) }
}

// appendFloat writes the shortest text that reads back to the same float:
// plain notation for magnitudes in [1e-6, 1e21), exponent notation
// otherwise (as encoding/json does), NaN, Infinity and -Infinity.
func appendFloat(dst []byte, v float64, bits int) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, "NaN"...)
	case math.IsInf(v, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(v, -1):
		return append(dst, "-Infinity"...)
	}
	abs := math.Abs(v)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	dst = strconv.AppendFloat(dst, v, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendJSONFloat is appendFloat with the non-finite values as JSON strings.
func appendJSONFloat(dst []byte, v float64, bits int) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		dst = append(dst, '"')
		dst = appendFloat(dst, v, bits)
		return append(dst, '"')
	}
	return appendFloat(dst, v, bits)
}

// appendDecimal writes the unscaled value n with scale digits after the
// point, keeping trailing zeros ("12.30").
func appendDecimal(dst []byte, n decimal128.Num, scale int32) []byte {
	var digits []byte
	var buf [48]byte
	neg := n.Sign() < 0
	if neg {
		n = n.Negate()
	}
	if n.HighBits() == 0 && n.LowBits() <= math.MaxInt64 {
		digits = strconv.AppendUint(buf[:0], n.LowBits(), 10)
	} else {
		digits = n.BigInt().Append(buf[:0], 10)
	}
	if neg {
		dst = append(dst, '-')
	}
	if scale <= 0 {
		dst = append(dst, digits...)
		if len(digits) > 1 || digits[0] != '0' {
			for range -scale {
				dst = append(dst, '0')
			}
		}
		return dst
	}
	s := int(scale)
	if len(digits) <= s {
		dst = append(dst, '0', '.')
		for range s - len(digits) {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-s]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-s:]...)
}

func appendPadded(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for k := len(s); k < width; k++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// appendDate writes YYYY-MM-DD (years beyond 0..9999 get a sign and more
// digits, as ISO 8601's expanded form).
func appendDate(dst []byte, days int64) []byte {
	y, m, d := civilFromDays(days)
	switch {
	case y < 0:
		dst = append(dst, '-')
		dst = appendPadded(dst, -y, 4)
	case y > 9999:
		dst = append(dst, '+')
		dst = appendPadded(dst, y, 4)
	default:
		dst = appendPadded(dst, y, 4)
	}
	dst = append(dst, '-')
	dst = appendPadded(dst, m, 2)
	dst = append(dst, '-')
	return appendPadded(dst, d, 2)
}

// appendClock writes hh:mm:ss with a fraction of up to digits digits,
// trailing zeros trimmed and no point for whole seconds.
func appendClock(dst []byte, ticks int64, digits int) []byte {
	ups := unitsPerSecond(digits)
	secs, frac := ticks/ups, ticks%ups
	dst = appendPadded(dst, secs/3600, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, secs/60%60, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, secs%60, 2)
	if frac != 0 {
		dst = append(dst, '.')
		start := len(dst)
		dst = appendPadded(dst, frac, digits)
		end := len(dst)
		for end > start && dst[end-1] == '0' {
			end--
		}
		dst = dst[:end]
	}
	return dst
}

// appendTimestamp writes YYYY-MM-DDThh:mm:ss[.f], with Z when zoned.
func appendTimestamp(dst []byte, ticks int64, digits int, zoned bool) []byte {
	ups := unitsPerSecond(digits)
	perDay := 86400 * ups
	days := ticks / perDay
	rem := ticks % perDay
	if rem < 0 {
		rem += perDay
		days--
	}
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	dst = appendClock(dst, rem, digits)
	if zoned {
		dst = append(dst, 'Z')
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendUUID writes the canonical lower-case 8-4-4-4-12 form.
func appendUUID(dst []byte, u []byte) []byte {
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[b>>4], hexDigits[b&0xf])
	}
	return dst
}

// appendJSONString writes s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
