package rowjson

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// FromArrow reads every batch of a stream into a Table, converting values to
// floe's conventions. The stream's batches are released after conversion. An
// error from the stream or a type without a convention (ErrUnsupportedType,
// naming the column) stops the read; the remaining batches are not consumed.
func FromArrow(schema *arrow.Schema, batches iter.Seq2[arrow.RecordBatch, error]) (*Table, error) {
	t := NewTable(schema)
	for rec, err := range batches {
		if err != nil {
			return nil, err
		}
		err = t.AppendBatch(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// NewTable returns an empty Table with the schema's columns (types in Arrow's
// own spelling).
func NewTable(schema *arrow.Schema) *Table {
	t := &Table{Columns: make([]Column, schema.NumFields()), Rows: [][]any{}}
	for i, f := range schema.Fields() {
		t.Columns[i] = Column{Name: f.Name, Type: f.Type.String()}
	}
	return t
}

// AppendBatch converts the rows of rec and appends them. rec must have the
// table's columns in order; rec is not released.
func (t *Table) AppendBatch(rec arrow.RecordBatch) error {
	if int(rec.NumCols()) != len(t.Columns) {
		return fmt.Errorf("%w: batch has %d columns, table has %d", ErrInvalidRows, rec.NumCols(), len(t.Columns))
	}
	n := int(rec.NumRows())
	rows := make([][]any, n)
	for r := range rows {
		rows[r] = make([]any, len(t.Columns))
	}
	for c := range t.Columns {
		col := rec.Column(c)
		for r := 0; r < n; r++ {
			v, err := Value(col, r)
			if err != nil {
				return fmt.Errorf("column %q row %d: %w", t.Columns[c].Name, len(t.Rows)+r, err)
			}
			rows[r][c] = v
		}
	}
	t.Rows = append(t.Rows, rows...)
	return nil
}

// Value converts element i of arr to floe's conventions. Arrays of a type with
// no convention give ErrUnsupportedType.
func Value(arr arrow.Array, i int) (any, error) {
	if arr.IsNull(i) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.Null:
		return nil, nil
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Int8:
		return Int(int64(a.Value(i))), nil
	case *array.Int16:
		return Int(int64(a.Value(i))), nil
	case *array.Int32:
		return Int(int64(a.Value(i))), nil
	case *array.Int64:
		return Int(a.Value(i)), nil
	case *array.Uint8:
		return Int(int64(a.Value(i))), nil
	case *array.Uint16:
		return Int(int64(a.Value(i))), nil
	case *array.Uint32:
		return Int(int64(a.Value(i))), nil
	case *array.Uint64:
		return jsonUint(a.Value(i)), nil
	case *array.Float16:
		return Number(float64(a.Value(i).Float32())), nil
	case *array.Float32:
		return Number(float64(a.Value(i))), nil
	case *array.Float64:
		return Number(a.Value(i)), nil
	case *array.Decimal32:
		return decimalText(int64(a.Value(i)), a.DataType().(*arrow.Decimal32Type).Scale), nil
	case *array.Decimal64:
		return decimalText(int64(a.Value(i)), a.DataType().(*arrow.Decimal64Type).Scale), nil
	case *array.Decimal128:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale), nil
	case *array.Decimal256:
		return a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale), nil
	case *array.String:
		return a.Value(i), nil
	case *array.LargeString:
		return a.Value(i), nil
	case *array.StringView:
		return a.Value(i), nil
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i)), nil
	case *array.LargeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i)), nil
	case *array.BinaryView:
		return base64.StdEncoding.EncodeToString(a.Value(i)), nil
	case *array.FixedSizeBinary:
		return base64.StdEncoding.EncodeToString(a.Value(i)), nil
	case *array.Date32:
		return expandedYear(a.Value(i).ToTime().UTC(), time.DateOnly), nil
	case *array.Date64:
		return expandedYear(a.Value(i).ToTime().UTC(), time.DateOnly), nil
	case *array.Time32:
		return FormatTime(int64(a.Value(i)), a.DataType().(*arrow.Time32Type).Unit), nil
	case *array.Time64:
		return FormatTime(int64(a.Value(i)), a.DataType().(*arrow.Time64Type).Unit), nil
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		return FormatTimestamp(int64(a.Value(i)), tt.Unit, tt.TimeZone != ""), nil
	case *extensions.UUIDArray:
		return a.Value(i).String(), nil
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		out := make(map[string]any, st.NumFields())
		for f := 0; f < st.NumFields(); f++ {
			v, err := Value(a.Field(f), i)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", st.Field(f).Name, err)
			}
			out[st.Field(f).Name] = v
		}
		return out, nil
	case *array.Map:
		keys, items := a.Keys(), a.Items()
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			k, err := Value(keys, j)
			if err != nil {
				return nil, fmt.Errorf("map key: %w", err)
			}
			v, err := Value(items, j)
			if err != nil {
				return nil, fmt.Errorf("map value: %w", err)
			}
			out = append(out, []any{k, v})
		}
		SortMapEntries(out)
		return out, nil
	case array.ListLike:
		values := a.ListValues()
		start, end := a.ValueOffsets(i)
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			v, err := Value(values, j)
			if err != nil {
				return nil, fmt.Errorf("list element %d: %w", j-int(start), err)
			}
			out = append(out, v)
		}
		return out, nil
	case *array.Dictionary:
		return Value(a.Dictionary(), a.GetValueIndex(i))
	case array.ExtensionArray:
		return Value(a.Storage(), i)
	}
	return nil, fmt.Errorf("%w: %s", ErrUnsupportedType, arr.DataType())
}

func jsonUint(u uint64) any { return json.Number(strconv.FormatUint(u, 10)) }

func decimalText(unscaled int64, scale int32) string {
	neg := unscaled < 0
	digits := strconv.FormatInt(unscaled, 10)
	if neg {
		digits = digits[1:]
	}
	if scale > 0 {
		if len(digits) <= int(scale) {
			digits = strings.Repeat("0", int(scale)-len(digits)+1) + digits
		}
		at := len(digits) - int(scale)
		digits = digits[:at] + "." + digits[at:]
	} else if scale < 0 && digits != "0" {
		digits += strings.Repeat("0", int(-scale))
	}
	if neg {
		digits = "-" + digits
	}
	return digits
}

var unitDigits = map[arrow.TimeUnit]int{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}

func unitSplit(v int64, unit arrow.TimeUnit) (secs, frac int64) {
	per := int64(time.Second / unit.Multiplier())
	secs, frac = v/per, v%per
	if frac < 0 {
		secs--
		frac += per
	}
	return secs, frac
}

// FormatTimestamp formats v units since the Unix epoch under floe's
// conventions: ISO-8601 in UTC, a fraction of 3, 6 or 9 digits for
// millisecond, microsecond and nanosecond units, and "Z" when zoned.
func FormatTimestamp(v int64, unit arrow.TimeUnit, zoned bool) string {
	secs, frac := unitSplit(v, unit)
	s := expandedYear(time.Unix(secs, 0).UTC(), "2006-01-02T15:04:05")
	if d := unitDigits[unit]; d > 0 {
		s += "." + fmt.Sprintf("%0*d", d, frac)
	}
	if zoned {
		s += "Z"
	}
	return s
}

// expandedYear formats t with layout, years after 9999 with a "+" (Go
// writes years before 0 with a "-" itself): ISO 8601's expanded years, as
// floe's writers and java.time print them.
func expandedYear(t time.Time, layout string) string {
	s := t.Format(layout)
	if t.Year() > 9999 {
		s = "+" + s
	}
	return s
}

// FormatTime formats a time of day held as v units since midnight.
func FormatTime(v int64, unit arrow.TimeUnit) string {
	secs, frac := unitSplit(v, unit)
	s := fmt.Sprintf("%02d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	if d := unitDigits[unit]; d > 0 {
		s += "." + fmt.Sprintf("%0*d", d, frac)
	}
	return s
}
