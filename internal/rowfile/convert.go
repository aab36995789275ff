package rowfile

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// A conv appends values of one target column (or nested field) to its Arrow
// builder, converting from the three input shapes: text (a CSV cell, a JSON
// string, a Parquet string), a parsed JSON value, or an Arrow value read from
// Parquet. Errors for bad values are *convError; the reader adds the place.
type conv interface {
	// appendNull appends a NULL, or fails when the column is required.
	appendNull() error
	// appendText parses the text form of a value.
	appendText(s []byte) error
	// appendJSON converts the parsed JSON value p.nodes[i].
	appendJSON(p *jparser, i int32) error
	// arrowFunc compiles a function appending values of an Arrow array of
	// type src, or says why src cannot be read into this column.
	arrowFunc(src arrow.DataType) (appendFn, error)
}

// appendFn appends a.Value(i) (never called for a NULL slot).
type appendFn func(a arrow.Array, i int) error

// convOptions are the parts of ReadOptions that converters need.
type convOptions struct {
	ignoreUnknown bool
}

// base holds what every converter shares.
type base struct {
	nullable bool
	typ      string
	b        array.Builder
}

func (c *base) appendNull() error {
	if !c.nullable {
		return &convError{null: true, typ: c.typ}
	}
	c.b.AppendNull()
	return nil
}

func (c *base) bad(v []byte, reason string) error {
	return &convError{value: string(v), typ: c.typ, reason: reason}
}

func (c *base) badJSON(p *jparser, i int32, reason string) error {
	return &convError{value: p.text(&p.nodes[i]), typ: c.typ, reason: reason}
}

func (c *base) badArrow(a arrow.Array, i int, reason string) error {
	return &convError{value: a.ValueStr(i), typ: c.typ, reason: reason}
}

func (c *base) wrongKind(p *jparser, i int32) error {
	return c.badJSON(p, i, "unexpected JSON "+p.nodes[i].kind.String())
}

func (c *base) incompatible(src arrow.DataType) error {
	return fmt.Errorf("%w: cannot read %s into %s", ErrIncompatibleType, src, c.typ)
}

// newConv builds the converter for a field whose values go to builder b.
func newConv(f arrow.Field, b array.Builder, opts convOptions) (conv, error) {
	bs := base{nullable: f.Nullable, typ: typeName(f.Type), b: b}
	switch t := f.Type.(type) {
	case *extensions.UUIDType:
		sb := b.(*extensions.UUIDBuilder).StorageBuilder().(*array.FixedSizeBinaryBuilder)
		return &fixedConv{base: bs, fb: sb, width: 16, uuid: true}, nil
	case *arrow.BooleanType:
		return &boolConv{base: bs, bb: b.(*array.BooleanBuilder)}, nil
	case *arrow.Int8Type:
		return &intConv[int8]{base: bs, ib: b.(*array.Int8Builder), bits: 8}, nil
	case *arrow.Int16Type:
		return &intConv[int16]{base: bs, ib: b.(*array.Int16Builder), bits: 16}, nil
	case *arrow.Int32Type:
		return &intConv[int32]{base: bs, ib: b.(*array.Int32Builder), bits: 32}, nil
	case *arrow.Int64Type:
		return &intConv[int64]{base: bs, ib: b.(*array.Int64Builder), bits: 64}, nil
	case *arrow.Float32Type:
		return &floatConv[float32]{base: bs, fb: b.(*array.Float32Builder), bits: 32}, nil
	case *arrow.Float64Type:
		return &floatConv[float64]{base: bs, fb: b.(*array.Float64Builder), bits: 64}, nil
	case *arrow.Decimal128Type:
		return &decimalConv{base: bs, db: b.(*array.Decimal128Builder), prec: t.Precision, scale: t.Scale}, nil
	case *arrow.Date32Type:
		db := b.(*array.Date32Builder)
		return &dateConv{base: bs, add: func(d int32) { db.Append(arrow.Date32(d)) }}, nil
	case *arrow.Date64Type:
		db := b.(*array.Date64Builder)
		return &dateConv{base: bs, add: func(d int32) { db.Append(arrow.Date64(int64(d) * 86400000)) }}, nil
	case *arrow.Time64Type:
		tb := b.(*array.Time64Builder)
		return &timeConv{base: bs, add: func(v int64) { tb.Append(arrow.Time64(v)) }, digits: unitDigits(t.Unit)}, nil
	case *arrow.Time32Type:
		tb := b.(*array.Time32Builder)
		return &timeConv{base: bs, add: func(v int64) { tb.Append(arrow.Time32(v)) }, digits: unitDigits(t.Unit)}, nil
	case *arrow.TimestampType:
		return &timestampConv{base: bs, tb: b.(*array.TimestampBuilder), unit: t.Unit,
			digits: unitDigits(t.Unit), zoned: t.TimeZone != ""}, nil
	case *arrow.StringType:
		return &stringConv{base: bs, sb: b.(*array.StringBuilder).BinaryBuilder}, nil
	case *arrow.LargeStringType:
		return &stringConv{base: bs, sb: b.(*array.LargeStringBuilder).BinaryBuilder}, nil
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return &binaryConv{base: bs, bb: b.(*array.BinaryBuilder)}, nil
	case *arrow.FixedSizeBinaryType:
		return &fixedConv{base: bs, fb: b.(*array.FixedSizeBinaryBuilder), width: t.ByteWidth}, nil
	case *arrow.NullType:
		return &nullConv{base: bs}, nil
	case *arrow.ListType, *arrow.LargeListType:
		lb := b.(array.ListLikeBuilder)
		elemField := t.(arrow.ListLikeType).ElemField()
		elem, err := newConv(elemField, lb.ValueBuilder(), opts)
		if err != nil {
			return nil, err
		}
		return &listConv{base: bs, lb: lb, elem: elem}, nil
	case *arrow.MapType:
		mb := b.(*array.MapBuilder)
		key, err := newConv(t.KeyField(), mb.KeyBuilder(), opts)
		if err != nil {
			return nil, err
		}
		item, err := newConv(t.ItemField(), mb.ItemBuilder(), opts)
		if err != nil {
			return nil, err
		}
		return &mapConv{base: bs, mb: mb, key: key, item: item}, nil
	case *arrow.StructType:
		sb := b.(*array.StructBuilder)
		sc := &structConv{base: bs, sb: sb, fields: t.Fields(), opts: opts,
			seen: make([]bool, t.NumFields()), byName: map[string]int{}}
		for k, cf := range t.Fields() {
			cc, err := newConv(cf, sb.FieldBuilder(k), opts)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", cf.Name, err)
			}
			sc.children = append(sc.children, cc)
			sc.byName[cf.Name] = k
		}
		return sc, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, f.Type)
}

func unitDigits(u arrow.TimeUnit) int {
	switch u {
	case arrow.Second:
		return 0
	case arrow.Millisecond:
		return 3
	case arrow.Microsecond:
		return 6
	}
	return 9
}

// nonNull wraps a compiled function with the NULL check.
func nonNull(c conv, fn appendFn) appendFn {
	return func(a arrow.Array, i int) error {
		if a.IsNull(i) {
			return c.appendNull()
		}
		return fn(a, i)
	}
}

// valueArray is an Arrow array whose values read as V.
type valueArray[V any] interface {
	arrow.Array
	Value(int) V
}

// valuesOf compiles fn over the non-NULL values of arrays of type A.
func valuesOf[A valueArray[V], V any](c conv, fn func(V) error) appendFn {
	return nonNull(c, func(a arrow.Array, i int) error { return fn(a.(A).Value(i)) })
}

// commonArrowFunc handles the source types every converter accepts: NULL
// arrays, dictionaries and extension types (through their values or
// storage), and strings (parsed as text). It returns nil when src is none of
// those.
func commonArrowFunc(c conv, src arrow.DataType) (appendFn, error) {
	text := func(v string) error { return c.appendText(unsafeBytes(v)) }
	switch t := src.(type) {
	case *arrow.NullType:
		return func(arrow.Array, int) error { return c.appendNull() }, nil
	case *arrow.DictionaryType:
		inner, err := c.arrowFunc(t.ValueType)
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array, i int) error {
			d := a.(*array.Dictionary)
			if d.IsNull(i) {
				return c.appendNull()
			}
			return inner(d.Dictionary(), d.GetValueIndex(i))
		}, nil
	case arrow.ExtensionType:
		if _, isUUID := t.(*extensions.UUIDType); isUUID {
			if fc, ok := c.(*fixedConv); ok && fc.width == 16 {
				return nonNull(c, func(a arrow.Array, i int) error {
					return fc.appendArrowFixed(a.(array.ExtensionArray).Storage().(*array.FixedSizeBinary), i)
				}), nil
			}
		}
		inner, err := c.arrowFunc(t.StorageType())
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array, i int) error {
			return inner(a.(array.ExtensionArray).Storage(), i)
		}, nil
	case *arrow.StringType:
		return valuesOf[*array.String](c, text), nil
	case *arrow.LargeStringType:
		return valuesOf[*array.LargeString](c, text), nil
	case *arrow.StringViewType:
		return valuesOf[*array.StringView](c, text), nil
	}
	return nil, nil
}

// unsafeBytes views a string's bytes without copying; callers only read them.
func unsafeBytes(s string) []byte {
	if s == "" {
		return nil
	}
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// unsafeString views bytes as a string without copying, for strconv calls
// that do not retain their argument.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// --- NULL (Iceberg unknown) ---

type nullConv struct{ base }

func (c *nullConv) appendText(s []byte) error { return c.bad(s, "column holds only NULL") }
func (c *nullConv) appendJSON(p *jparser, i int32) error {
	if p.nodes[i].kind == jNull {
		return c.appendNull()
	}
	return c.badJSON(p, i, "column holds only NULL")
}
func (c *nullConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if src.ID() == arrow.NULL {
		return func(arrow.Array, int) error { return c.appendNull() }, nil
	}
	return nil, c.incompatible(src)
}

// --- boolean ---

type boolConv struct {
	base
	bb *array.BooleanBuilder
}

func (c *boolConv) appendText(s []byte) error {
	v, ok := parseBool(trimSpace(s))
	if !ok {
		return c.bad(s, "expected true, false, 1 or 0")
	}
	c.bb.Append(v)
	return nil
}

func (c *boolConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jBool:
		c.bb.Append(n.b)
		return nil
	case jString:
		return c.appendText(n.val)
	}
	return c.wrongKind(p, i)
}

func (c *boolConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	if src.ID() == arrow.BOOL {
		return nonNull(c, func(a arrow.Array, i int) error {
			c.bb.Append(a.(*array.Boolean).Value(i))
			return nil
		}), nil
	}
	return nil, c.incompatible(src)
}

// --- integers ---

type intBuilder[T int8 | int16 | int32 | int64] interface {
	Append(T)
}

type intConv[T int8 | int16 | int32 | int64] struct {
	base
	ib   intBuilder[T]
	bits int
}

func (c *intConv[T]) appendText(s []byte) error {
	v, reason := parseInt(trimSpace(s), c.bits)
	if reason != "" {
		return c.bad(s, reason)
	}
	c.ib.Append(T(v))
	return nil
}

func (c *intConv[T]) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jNumber, jString:
		v, reason := parseInt(trimSpace(n.val), c.bits)
		if reason != "" {
			return c.badJSON(p, i, reason)
		}
		c.ib.Append(T(v))
		return nil
	}
	return c.wrongKind(p, i)
}

func (c *intConv[T]) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	// NB: only widenings that hold for every value are accepted, so a file
	// that would fail on row 10 million fails at open instead.
	var get func(a arrow.Array, i int) int64
	var width int
	signed := true
	switch src.ID() {
	case arrow.INT8:
		width, get = 8, func(a arrow.Array, i int) int64 { return int64(a.(*array.Int8).Value(i)) }
	case arrow.INT16:
		width, get = 16, func(a arrow.Array, i int) int64 { return int64(a.(*array.Int16).Value(i)) }
	case arrow.INT32:
		width, get = 32, func(a arrow.Array, i int) int64 { return int64(a.(*array.Int32).Value(i)) }
	case arrow.INT64:
		width, get = 64, func(a arrow.Array, i int) int64 { return a.(*array.Int64).Value(i) }
	case arrow.UINT8:
		width, signed, get = 8, false, func(a arrow.Array, i int) int64 { return int64(a.(*array.Uint8).Value(i)) }
	case arrow.UINT16:
		width, signed, get = 16, false, func(a arrow.Array, i int) int64 { return int64(a.(*array.Uint16).Value(i)) }
	case arrow.UINT32:
		width, signed, get = 32, false, func(a arrow.Array, i int) int64 { return int64(a.(*array.Uint32).Value(i)) }
	default:
		return nil, c.incompatible(src)
	}
	if (signed && width > c.bits) || (!signed && width >= c.bits) {
		return nil, c.incompatible(src)
	}
	return nonNull(c, func(a arrow.Array, i int) error {
		c.ib.Append(T(get(a, i)))
		return nil
	}), nil
}

// --- floating point ---

type floatConv[T float32 | float64] struct {
	base
	fb   interface{ Append(T) }
	bits int
}

func (c *floatConv[T]) parse(s []byte) (T, string) {
	t := trimSpace(s)
	v, err := strconv.ParseFloat(unsafeString(t), c.bits)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, "out of range"
		}
		return 0, "not a number"
	}
	return T(v), ""
}

func (c *floatConv[T]) appendText(s []byte) error {
	v, reason := c.parse(s)
	if reason != "" {
		return c.bad(s, reason)
	}
	c.fb.Append(v)
	return nil
}

func (c *floatConv[T]) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jNumber, jString:
		v, reason := c.parse(n.val)
		if reason != "" {
			return c.badJSON(p, i, reason)
		}
		c.fb.Append(v)
		return nil
	}
	return c.wrongKind(p, i)
}

func (c *floatConv[T]) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	switch src.ID() {
	case arrow.FLOAT32:
		return nonNull(c, func(a arrow.Array, i int) error {
			c.fb.Append(T(a.(*array.Float32).Value(i)))
			return nil
		}), nil
	case arrow.FLOAT64:
		if c.bits == 64 {
			return nonNull(c, func(a arrow.Array, i int) error {
				c.fb.Append(T(a.(*array.Float64).Value(i)))
				return nil
			}), nil
		}
	case arrow.FLOAT16:
		return nonNull(c, func(a arrow.Array, i int) error {
			c.fb.Append(T(a.(*array.Float16).Value(i).Float32()))
			return nil
		}), nil
	}
	return nil, c.incompatible(src)
}

// --- decimal ---

type decimalConv struct {
	base
	db          *array.Decimal128Builder
	prec, scale int32
}

func (c *decimalConv) appendText(s []byte) error {
	v, reason := parseDecimal(trimSpace(s), c.prec, c.scale)
	if reason != "" {
		return c.bad(s, reason)
	}
	c.db.Append(v)
	return nil
}

func (c *decimalConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jNumber, jString:
		v, reason := parseDecimal(trimSpace(n.val), c.prec, c.scale)
		if reason != "" {
			return c.badJSON(p, i, reason)
		}
		c.db.Append(v)
		return nil
	}
	return c.wrongKind(p, i)
}

func (c *decimalConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	dt, ok := src.(arrow.DecimalType)
	if !ok {
		return nil, c.incompatible(src)
	}
	sp, ss := dt.GetPrecision(), dt.GetScale()
	// Widening only: same or larger scale, and at least as many integer digits.
	if ss > c.scale || sp-ss > c.prec-c.scale {
		return nil, c.incompatible(src)
	}
	mul := decimal128.GetScaleMultiplier(int(c.scale - ss))
	switch src.ID() {
	case arrow.DECIMAL128:
		return nonNull(c, func(a arrow.Array, i int) error {
			c.db.Append(a.(*array.Decimal128).Value(i).Mul(mul))
			return nil
		}), nil
	case arrow.DECIMAL64:
		return nonNull(c, func(a arrow.Array, i int) error {
			c.db.Append(decimal128.FromI64(int64(a.(*array.Decimal64).Value(i))).Mul(mul))
			return nil
		}), nil
	case arrow.DECIMAL32:
		return nonNull(c, func(a arrow.Array, i int) error {
			c.db.Append(decimal128.FromI64(int64(a.(*array.Decimal32).Value(i))).Mul(mul))
			return nil
		}), nil
	case arrow.DECIMAL256:
		return nonNull(c, func(a arrow.Array, i int) error {
			// The precision check above bounds the value to 38 digits.
			n := decimal128.FromBigInt(a.(*array.Decimal256).Value(i).BigInt())
			c.db.Append(n.Mul(mul))
			return nil
		}), nil
	}
	return nil, c.incompatible(src)
}

// --- date ---

type dateConv struct {
	base
	add func(days int32)
}

func (c *dateConv) appendText(s []byte) error {
	v, reason := parseDate(trimSpace(s))
	if reason != "" {
		return c.bad(s, reason)
	}
	c.add(v)
	return nil
}

func (c *dateConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	}
	return c.wrongKind(p, i)
}

func (c *dateConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	switch src.ID() {
	case arrow.DATE32:
		return nonNull(c, func(a arrow.Array, i int) error {
			c.add(int32(a.(*array.Date32).Value(i)))
			return nil
		}), nil
	case arrow.DATE64:
		return nonNull(c, func(a arrow.Array, i int) error {
			ms := int64(a.(*array.Date64).Value(i))
			if ms%86400000 != 0 {
				return c.badArrow(a, i, "not a whole day")
			}
			c.add(int32(ms / 86400000))
			return nil
		}), nil
	}
	return nil, c.incompatible(src)
}

// --- time of day ---

type timeConv struct {
	base
	add    func(ticks int64)
	digits int
}

func (c *timeConv) appendText(s []byte) error {
	v, reason := parseTime(trimSpace(s), c.digits)
	if reason != "" {
		return c.bad(s, reason)
	}
	c.add(v)
	return nil
}

func (c *timeConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	}
	return c.wrongKind(p, i)
}

func (c *timeConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	var get func(a arrow.Array, i int) int64
	var from int
	switch t := src.(type) {
	case *arrow.Time32Type:
		from = unitDigits(t.Unit)
		get = func(a arrow.Array, i int) int64 { return int64(a.(*array.Time32).Value(i)) }
	case *arrow.Time64Type:
		from = unitDigits(t.Unit)
		get = func(a arrow.Array, i int) int64 { return int64(a.(*array.Time64).Value(i)) }
	default:
		return nil, c.incompatible(src)
	}
	return nonNull(c, func(a arrow.Array, i int) error {
		v, ok := rescaleTicks(get(a, i), from, c.digits)
		if !ok {
			return c.badArrow(a, i, "not exact in the target unit (no rounding is done)")
		}
		c.add(v)
		return nil
	}), nil
}

// rescaleTicks converts v from 10^-from to 10^-to second ticks, failing when
// that would lose precision or overflow.
func rescaleTicks(v int64, from, to int) (int64, bool) {
	switch {
	case from == to:
		return v, true
	case from < to:
		m := int64(pow10u64[to-from])
		if v > math.MaxInt64/m || v < math.MinInt64/m {
			return 0, false
		}
		return v * m, true
	default:
		d := int64(pow10u64[from-to])
		if v%d != 0 {
			return 0, false
		}
		return v / d, true
	}
}

// --- timestamp ---

type timestampConv struct {
	base
	tb     *array.TimestampBuilder
	unit   arrow.TimeUnit
	digits int
	zoned  bool
}

func (c *timestampConv) appendText(s []byte) error {
	v, zoned, reason := parseTimestamp(trimSpace(s), c.digits)
	if reason != "" {
		return c.bad(s, reason)
	}
	if zoned && !c.zoned {
		return c.bad(s, "a timestamp without time zone cannot take a value with a zone")
	}
	c.tb.Append(arrow.Timestamp(v))
	return nil
}

func (c *timestampConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	}
	return c.wrongKind(p, i)
}

func (c *timestampConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	t, ok := src.(*arrow.TimestampType)
	// NB: a zone-less Parquet timestamp read into timestamptz is taken as
	// UTC (the instant has the same digits); a zoned one cannot go into a
	// zone-less column because it would silently drop the zone.
	if !ok || (t.TimeZone != "" && !c.zoned) {
		return nil, c.incompatible(src)
	}
	from := unitDigits(t.Unit)
	return nonNull(c, func(a arrow.Array, i int) error {
		v, ok := rescaleTicks(int64(a.(*array.Timestamp).Value(i)), from, c.digits)
		if !ok {
			return c.badArrow(a, i, "not exact in the target unit (no rounding is done)")
		}
		c.tb.Append(arrow.Timestamp(v))
		return nil
	}), nil
}

// --- string ---

type stringConv struct {
	base
	sb *array.BinaryBuilder
}

func (c *stringConv) appendText(s []byte) error {
	if !utf8.Valid(s) {
		return c.bad(s, "invalid UTF-8")
	}
	c.sb.Append(s)
	return nil
}

func (c *stringConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		c.sb.Append(n.val)
		return nil
	}
	return c.wrongKind(p, i)
}

func (c *stringConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	add := func(v string) error { c.sb.AppendString(v); return nil }
	switch src.ID() {
	case arrow.STRING:
		return valuesOf[*array.String](c, add), nil
	case arrow.LARGE_STRING:
		return valuesOf[*array.LargeString](c, add), nil
	case arrow.STRING_VIEW:
		return valuesOf[*array.StringView](c, add), nil
	}
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	return nil, c.incompatible(src)
}

// --- binary ---

type binaryConv struct {
	base
	bb  *array.BinaryBuilder
	buf []byte
}

func (c *binaryConv) appendText(s []byte) error {
	var ok bool
	c.buf, ok = decodeBase64(c.buf[:0], trimSpace(s))
	if !ok {
		return c.bad(s, "not standard base64")
	}
	c.bb.Append(c.buf)
	return nil
}

func (c *binaryConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	}
	return c.wrongKind(p, i)
}

func (c *binaryConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	add := func(v []byte) error { c.bb.Append(v); return nil }
	switch src.ID() {
	case arrow.BINARY:
		return valuesOf[*array.Binary](c, add), nil
	case arrow.LARGE_BINARY:
		return valuesOf[*array.LargeBinary](c, add), nil
	case arrow.BINARY_VIEW:
		return valuesOf[*array.BinaryView](c, add), nil
	}
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	return nil, c.incompatible(src)
}

// --- fixed-size binary and uuid ---

type fixedConv struct {
	base
	fb    *array.FixedSizeBinaryBuilder
	width int
	uuid  bool // the uuid type: text must be a UUID
	buf   []byte
}

func (c *fixedConv) appendText(s []byte) error {
	t := trimSpace(s)
	if c.width == 16 {
		if u, ok := parseUUID(t); ok {
			c.fb.Append(u[:])
			return nil
		}
		if c.uuid {
			return c.bad(s, "expected a UUID as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
		}
	}
	var ok bool
	c.buf, ok = decodeBase64(c.buf[:0], t)
	if !ok {
		return c.bad(s, "not standard base64")
	}
	if len(c.buf) != c.width {
		return c.bad(s, fmt.Sprintf("decodes to %d bytes, need %d", len(c.buf), c.width))
	}
	c.fb.Append(c.buf)
	return nil
}

func (c *fixedConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	}
	return c.wrongKind(p, i)
}

func (c *fixedConv) appendArrowFixed(a *array.FixedSizeBinary, i int) error {
	c.fb.Append(a.Value(i))
	return nil
}

func (c *fixedConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	if t, ok := src.(*arrow.FixedSizeBinaryType); ok && t.ByteWidth == c.width {
		return nonNull(c, func(a arrow.Array, i int) error {
			return c.appendArrowFixed(a.(*array.FixedSizeBinary), i)
		}), nil
	}
	return nil, c.incompatible(src)
}

// --- list ---

type listConv struct {
	base
	lb   array.ListLikeBuilder
	elem conv
	sub  *jparser
}

func (c *listConv) appendText(s []byte) error {
	return appendJSONText(&c.base, &c.sub, c, s)
}

// appendJSONText parses text as JSON for a nested column (a CSV cell or a
// Parquet string holding a list, struct or map).
func appendJSONText(b *base, sub **jparser, c conv, s []byte) error {
	if *sub == nil {
		*sub = &jparser{}
	}
	p := *sub
	if !p.parse(s) {
		return b.bad(s, fmt.Sprintf("invalid JSON at byte %d: %s", p.errPos+1, p.errMsg))
	}
	return c.appendJSON(p, 0)
}

func (c *listConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	case jArray:
	default:
		return c.wrongKind(p, i)
	}
	c.lb.Append(true)
	k := 0
	for j := i + 1; j < n.next; j = p.nodes[j].next {
		if err := c.elem.appendJSON(p, j); err != nil {
			return under(err, "["+strconv.Itoa(k)+"]")
		}
		k++
	}
	return nil
}

func (c *listConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	lt, ok := src.(arrow.ListLikeType)
	if !ok || (src.ID() != arrow.LIST && src.ID() != arrow.LARGE_LIST) {
		return nil, c.incompatible(src)
	}
	elemFn, err := c.elem.arrowFunc(lt.Elem())
	if err != nil {
		return nil, err
	}
	elemFn = nonNull(c.elem, elemFn)
	return nonNull(c, func(a arrow.Array, i int) error {
		la := a.(array.ListLike)
		start, end := la.ValueOffsets(i)
		c.lb.Append(true)
		vals := la.ListValues()
		for j := start; j < end; j++ {
			if err := elemFn(vals, int(j)); err != nil {
				return under(err, "["+strconv.FormatInt(j-start, 10)+"]")
			}
		}
		return nil
	}), nil
}

// --- map ---

type mapConv struct {
	base
	mb        *array.MapBuilder
	key, item conv
	sub       *jparser
}

func (c *mapConv) appendText(s []byte) error {
	return appendJSONText(&c.base, &c.sub, c, s)
}

func (c *mapConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	case jObject:
		// {"k": v, ...}: keys are parsed as text into the key type.
		c.mb.Append(true)
		for j := i + 1; j < n.next; j = p.nodes[j].next {
			if err := c.key.appendText(p.nodes[j].key); err != nil {
				return under(err, ".key")
			}
			if err := c.item.appendJSON(p, j); err != nil {
				return under(err, "["+strconv.Quote(string(p.nodes[j].key))+"]")
			}
		}
		return nil
	case jArray:
		// [{"key": k, "value": v}, ...], the form written for non-string keys.
		c.mb.Append(true)
		for j := i + 1; j < n.next; j = p.nodes[j].next {
			e := &p.nodes[j]
			if e.kind != jObject {
				return c.badJSON(p, j, `expected {"key": ..., "value": ...}`)
			}
			var kIdx, vIdx int32 = -1, -1
			for m := j + 1; m < e.next; m = p.nodes[m].next {
				switch string(p.nodes[m].key) {
				case "key":
					kIdx = m
				case "value":
					vIdx = m
				default:
					return c.badJSON(p, j, `expected {"key": ..., "value": ...}`)
				}
			}
			if kIdx < 0 {
				return c.badJSON(p, j, `map entry without "key"`)
			}
			if err := c.key.appendJSON(p, kIdx); err != nil {
				return under(err, ".key")
			}
			if vIdx < 0 {
				if err := c.item.appendNull(); err != nil {
					return under(err, ".value")
				}
				continue
			}
			if err := c.item.appendJSON(p, vIdx); err != nil {
				return under(err, ".value")
			}
		}
		return nil
	}
	return c.wrongKind(p, i)
}

func (c *mapConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	mt, ok := src.(*arrow.MapType)
	if !ok {
		return nil, c.incompatible(src)
	}
	keyFn, err := c.key.arrowFunc(mt.KeyType())
	if err != nil {
		return nil, err
	}
	itemFn, err := c.item.arrowFunc(mt.ItemType())
	if err != nil {
		return nil, err
	}
	keyFn, itemFn = nonNull(c.key, keyFn), nonNull(c.item, itemFn)
	return nonNull(c, func(a arrow.Array, i int) error {
		ma := a.(*array.Map)
		start, end := ma.ValueOffsets(i)
		c.mb.Append(true)
		keys, items := ma.Keys(), ma.Items()
		for j := start; j < end; j++ {
			if err := keyFn(keys, int(j)); err != nil {
				return under(err, ".key")
			}
			if err := itemFn(items, int(j)); err != nil {
				return under(err, ".value")
			}
		}
		return nil
	}), nil
}

// --- struct ---

type structConv struct {
	base
	sb       *array.StructBuilder
	fields   []arrow.Field
	children []conv
	byName   map[string]int
	seen     []bool
	opts     convOptions
	sub      *jparser
}

// lookup finds a child by exact name, then by a unique case-insensitive
// match.
func (c *structConv) lookup(name []byte) (int, bool) {
	if k, ok := c.byName[string(name)]; ok {
		return k, true
	}
	found := -1
	for k, f := range c.fields {
		if strings.EqualFold(f.Name, unsafeString(name)) {
			if found >= 0 {
				return -1, false
			}
			found = k
		}
	}
	return found, found >= 0
}

func (c *structConv) appendText(s []byte) error {
	return appendJSONText(&c.base, &c.sub, c, s)
}

func (c *structConv) appendJSON(p *jparser, i int32) error {
	n := &p.nodes[i]
	switch n.kind {
	case jNull:
		return c.appendNull()
	case jString:
		return c.appendText(n.val)
	case jObject:
	default:
		return c.wrongKind(p, i)
	}
	c.sb.Append(true)
	clear(c.seen)
	for j := i + 1; j < n.next; j = p.nodes[j].next {
		key := p.nodes[j].key
		k, ok := c.lookup(key)
		if !ok {
			if c.opts.ignoreUnknown {
				continue
			}
			return c.badJSON(p, i, fmt.Sprintf("unknown or ambiguous field %q", key))
		}
		if c.seen[k] {
			return c.badJSON(p, i, fmt.Sprintf("field %q given twice", c.fields[k].Name))
		}
		c.seen[k] = true
		if err := c.children[k].appendJSON(p, j); err != nil {
			return under(err, "."+c.fields[k].Name)
		}
	}
	for k, seen := range c.seen {
		if !seen {
			if err := c.children[k].appendNull(); err != nil {
				return under(err, "."+c.fields[k].Name)
			}
		}
	}
	return nil
}

func (c *structConv) arrowFunc(src arrow.DataType) (appendFn, error) {
	if fn, err := commonArrowFunc(c, src); fn != nil || err != nil {
		return fn, err
	}
	st, ok := src.(*arrow.StructType)
	if !ok {
		return nil, c.incompatible(src)
	}
	srcIdx := make([]int, len(c.fields))
	for k := range srcIdx {
		srcIdx[k] = -1
	}
	for s, sf := range st.Fields() {
		k, ok := c.lookup([]byte(sf.Name))
		if !ok {
			if c.opts.ignoreUnknown {
				continue
			}
			return nil, fmt.Errorf("%w: struct field %q is not in %s", ErrUnknownColumn, sf.Name, c.typ)
		}
		if srcIdx[k] >= 0 {
			return nil, fmt.Errorf("%w: struct fields %q and %q both match %q", ErrDuplicateColumn,
				st.Field(srcIdx[k]).Name, sf.Name, c.fields[k].Name)
		}
		srcIdx[k] = s
	}
	fns := make([]appendFn, len(c.fields))
	for k, s := range srcIdx {
		if s < 0 {
			if !c.fields[k].Nullable {
				return nil, fmt.Errorf("%w: struct field %q", ErrMissingColumn, c.fields[k].Name)
			}
			continue
		}
		fn, err := c.children[k].arrowFunc(st.Field(s).Type)
		if err != nil {
			return nil, fmt.Errorf("struct field %q: %w", c.fields[k].Name, err)
		}
		fns[k] = nonNull(c.children[k], fn)
	}
	return nonNull(c, func(a arrow.Array, i int) error {
		sa := a.(*array.Struct)
		c.sb.Append(true)
		for k, fn := range fns {
			var err error
			if fn == nil {
				err = c.children[k].appendNull()
			} else {
				err = fn(sa.Field(srcIdx[k]), i)
			}
			if err != nil {
				return under(err, "."+c.fields[k].Name)
			}
		}
		return nil
	}), nil
}
