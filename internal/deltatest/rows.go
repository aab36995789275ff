package deltatest

import (
	"fmt"
	"iter"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// Rows drains a batch sequence into rows of cells rendered by FormatCell,
// for the named columns in that order (all columns when names is nil). It
// releases every batch, and fails when a batch's schema differs from schema
// or the sequence reports an error.
func Rows(schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error], names []string) ([][]string, error) {
	if names == nil {
		for _, f := range schema.Fields() {
			names = append(names, f.Name)
		}
	}
	idx := make([]int, len(names))
	for i, n := range names {
		is := schema.FieldIndices(n)
		if len(is) != 1 {
			return nil, fmt.Errorf("schema %s has no single column %q", schema, n)
		}
		idx[i] = is[0]
	}
	rows := [][]string{}
	for b, err := range seq {
		if err != nil {
			return rows, err
		}
		if !b.Schema().Equal(schema) {
			b.Release()
			return rows, fmt.Errorf("batch schema %s differs from announced schema %s", b.Schema(), schema)
		}
		for r := 0; r < int(b.NumRows()); r++ {
			row := make([]string, len(names))
			for i, c := range idx {
				row[i] = FormatCell(b.Column(c), r)
			}
			rows = append(rows, row)
		}
		b.Release()
	}
	return rows, nil
}

// FormatCell renders one value as the upstream expected CSV files print it:
// NULL as "", timestamps as UTC "2006-01-02T15:04:05.000000", dates as
// "2006-01-02", structs as "{name: value, ...}", lists as "[a, b]", maps as
// "{k: v, ...}", floats in shortest form.
func FormatCell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return ""
	}
	switch v := a.(type) {
	case *array.String:
		return v.Value(i)
	case *array.Binary:
		return string(v.Value(i))
	case *array.Int8:
		return strconv.FormatInt(int64(v.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(v.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(v.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(v.Value(i), 10)
	case *array.Float32:
		return strconv.FormatFloat(float64(v.Value(i)), 'g', -1, 32)
	case *array.Float64:
		return strconv.FormatFloat(v.Value(i), 'g', -1, 64)
	case *array.Boolean:
		return strconv.FormatBool(v.Value(i))
	case *array.Date32:
		return v.Value(i).ToTime().Format("2006-01-02")
	case *array.Timestamp:
		unit := v.DataType().(*arrow.TimestampType).Unit
		return CanonicalTime(v.Value(i).ToTime(unit))
	case *array.Decimal128:
		return v.Value(i).ToString(v.DataType().(*arrow.Decimal128Type).Scale)
	case *array.Struct:
		st := v.DataType().(*arrow.StructType)
		parts := make([]string, st.NumFields())
		for j := 0; j < st.NumFields(); j++ {
			parts[j] = st.Field(j).Name + ": " + FormatCell(v.Field(j), i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *array.Map:
		s, e := v.ValueOffsets(i)
		var parts []string
		for j := int(s); j < int(e); j++ {
			parts = append(parts, FormatCell(v.Keys(), j)+": "+FormatCell(v.Items(), j))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *array.List:
		s, e := v.ValueOffsets(i)
		var parts []string
		for j := int(s); j < int(e); j++ {
			parts = append(parts, FormatCell(v.ListValues(), j))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return a.ValueStr(i)
}

// CanonicalTime renders a time as FormatCell renders timestamps.
func CanonicalTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

// ParseTime parses RFC 3339, or the same without a zone (then UTC).
func ParseTime(s string) (time.Time, error) {
	if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return ts, nil
	}
	return time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.UTC)
}

// CanonicalCell rewrites a cell of an expected CSV file into FormatCell's
// form for a column of type dt (numbers, timestamps and decimals may be
// printed differently upstream).
func CanonicalCell(cell string, dt arrow.DataType) (string, error) {
	if cell == "" {
		return "", nil
	}
	switch d := dt.(type) {
	case *arrow.Float32Type, *arrow.Float64Type:
		f, err := strconv.ParseFloat(cell, 64)
		if err != nil {
			return "", err
		}
		bits := 64
		if _, ok := dt.(*arrow.Float32Type); ok {
			bits = 32
		}
		return strconv.FormatFloat(f, 'g', -1, bits), nil
	case *arrow.TimestampType:
		ts, err := ParseTime(cell)
		if err != nil {
			return "", err
		}
		return CanonicalTime(ts), nil
	case *arrow.Decimal128Type:
		n, err := decimal128.FromString(cell, d.Precision, d.Scale)
		if err != nil {
			return "", err
		}
		return n.ToString(d.Scale), nil
	}
	return cell, nil
}

// DiffMultisets compares rows as multisets and describes the difference,
// or returns "" when they are equal.
func DiffMultisets(got, want [][]string) string {
	key := func(r []string) string { return strings.Join(r, " | ") }
	count := map[string]int{}
	for _, r := range want {
		count[key(r)]++
	}
	for _, r := range got {
		count[key(r)]--
	}
	var missing, extra []string
	for k, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, k)
		}
		for ; n < 0; n++ {
			extra = append(extra, k)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("got %d rows, want %d\nmissing rows:\n  %s\nunexpected rows:\n  %s",
		len(got), len(want), strings.Join(missing, "\n  "), strings.Join(extra, "\n  "))
}

// SortRows sorts rows lexicographically by their cells, for stable output.
func SortRows(rows [][]string) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		for k := 0; k < len(a) && k < len(b); k++ {
			if a[k] != b[k] {
				return a[k] < b[k]
			}
		}
		return len(a) < len(b)
	})
}
