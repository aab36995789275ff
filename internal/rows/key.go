package rows

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// AppendKey appends a canonical encoding of the values of cols in row i of
// rec to buf. Two rows have equal encodings exactly when their values are
// equal column by column, with NULL equal to NULL (the equality Iceberg's
// equality deletes and changelog carry-over removal use). Integers of any
// width encode alike, so an int column matches a long column.
func AppendKey(buf []byte, rec arrow.RecordBatch, cols []int, i int) []byte {
	for _, c := range cols {
		buf = AppendValue(buf, rec.Column(c), i)
	}
	return buf
}

// AppendValue appends the canonical encoding of arr[i] to buf (see AppendKey).
func AppendValue(buf []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	switch a := arr.(type) {
	case *array.Boolean:
		if a.Value(i) {
			return append(buf, 1)
		}
		return append(buf, 0)
	case *array.Int8:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Int16:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Int32:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Int64:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Uint8:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Uint16:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Uint32:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Uint64:
		return binary.BigEndian.AppendUint64(buf, a.Value(i))
	case *array.Float32:
		return appendFloat(buf, float64(a.Value(i)))
	case *array.Float64:
		return appendFloat(buf, a.Value(i))
	case *array.Date32:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Date64:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Time32:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Time64:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Timestamp:
		return binary.BigEndian.AppendUint64(buf, uint64(a.Value(i)))
	case *array.Decimal128:
		v := a.Value(i)
		buf = binary.BigEndian.AppendUint64(buf, uint64(v.HighBits()))
		return binary.BigEndian.AppendUint64(buf, v.LowBits())
	case *array.String:
		return appendBytes(buf, []byte(a.Value(i)))
	case *array.LargeString:
		return appendBytes(buf, []byte(a.Value(i)))
	case *array.Binary:
		return appendBytes(buf, a.Value(i))
	case *array.LargeBinary:
		return appendBytes(buf, a.Value(i))
	case *array.FixedSizeBinary:
		return appendBytes(buf, a.Value(i))
	case array.ExtensionArray:
		return AppendValue(buf[:len(buf)-1], a.Storage(), i)
	case *array.List:
		start, end := a.ValueOffsets(i)
		buf = binary.AppendUvarint(buf, uint64(end-start))
		for j := start; j < end; j++ {
			buf = AppendValue(buf, a.ListValues(), int(j))
		}
		return buf
	case *array.LargeList:
		start, end := a.ValueOffsets(i)
		buf = binary.AppendUvarint(buf, uint64(end-start))
		for j := start; j < end; j++ {
			buf = AppendValue(buf, a.ListValues(), int(j))
		}
		return buf
	case *array.Map:
		start, end := a.ValueOffsets(i)
		buf = binary.AppendUvarint(buf, uint64(end-start))
		for j := start; j < end; j++ {
			buf = AppendValue(buf, a.Keys(), int(j))
			buf = AppendValue(buf, a.Items(), int(j))
		}
		return buf
	case *array.Struct:
		for f := 0; f < a.NumField(); f++ {
			buf = AppendValue(buf, a.Field(f), i)
		}
		return buf
	}
	// Unknown types fall back to their string rendering: still canonical
	// for equality within one type.
	return appendBytes(buf, []byte(fmt.Sprint(arr.GetOneForMarshal(i))))
}

func appendFloat(buf []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		f = math.NaN()
	case f == 0:
		f = 0 // fold -0 into 0
	}
	return binary.BigEndian.AppendUint64(buf, math.Float64bits(f))
}

func appendBytes(buf, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

// FormatValue renders arr[i] for error messages: strings quoted, NULL as
// NULL, other values as Arrow prints them.
func FormatValue(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	switch a := arr.(type) {
	case *array.String:
		return fmt.Sprintf("%q", a.Value(i))
	case *array.LargeString:
		return fmt.Sprintf("%q", a.Value(i))
	}
	return arr.ValueStr(i)
}

// FormatKey renders the values of cols in row i as "name=value, ...".
func FormatKey(rec arrow.RecordBatch, cols []int, i int) string {
	s := ""
	for j, c := range cols {
		if j > 0 {
			s += ", "
		}
		s += rec.Schema().Field(c).Name + "=" + FormatValue(rec.Column(c), i)
	}
	return s
}

// FormatRow renders row i of rec as a tuple, "(1, 'a', NULL)": strings in
// single quotes, other values as Arrow prints them. Tests and datadriven
// scripts compare rows in this form.
func FormatRow(rec arrow.RecordBatch, i int) string {
	s := "("
	for c := 0; c < int(rec.NumCols()); c++ {
		if c > 0 {
			s += ","
		}
		s += formatCell(rec.Column(c), i)
	}
	return s + ")"
}

func formatCell(arr arrow.Array, i int) string {
	if arr.IsNull(i) {
		return "NULL"
	}
	switch a := arr.(type) {
	case *array.String:
		return "'" + a.Value(i) + "'"
	case *array.LargeString:
		return "'" + a.Value(i) + "'"
	}
	return arr.ValueStr(i)
}

// FormatSorted drains a stream of records into their rows rendered by
// FormatRow, sorted, releasing each record; it stops at the stream's first
// error. Tests, datadriven scripts and the demo's checks compare tables in
// this form.
func FormatSorted(seq iter.Seq2[arrow.RecordBatch, error]) ([]string, error) {
	var out []string
	for rec, err := range seq {
		if err != nil {
			return nil, err
		}
		for i := range int(rec.NumRows()) {
			out = append(out, FormatRow(rec, i))
		}
		rec.Release()
	}
	slices.Sort(out)
	return out, nil
}
