package cli

import (
	"fmt"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rowfile"
)

// column is one column of a small metadata listing printed through the
// same writers as table rows, so every --format works for it.
type column struct {
	name   string
	typ    arrow.DataType
	values []any // string, int64, *int64 (nil = NULL), time.Time, []string, map[string]string, bool
}

var (
	tsType     = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	strMapType = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	strList    = arrow.ListOf(arrow.BinaryTypes.String)
	boolType   = arrow.FixedWidthTypes.Boolean
)

func (a *app) printColumns(cols []column) error {
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ, Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, c := range cols {
		for _, v := range c.values {
			if err := appendAny(b.Field(i), v); err != nil {
				return fmt.Errorf("column %s: %w", c.name, err)
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return a.printRecord(rec)
}

func (a *app) printRecord(rec arrow.RecordBatch) error {
	f, err := a.outputFormat()
	if err != nil {
		return err
	}
	if f == rowfile.OutputParquet {
		return usagef("--format parquet needs --output FILE")
	}
	w, err := rowfile.NewWriter(a.stdout, f, rec.Schema())
	if err != nil {
		return err
	}
	if err := w.Write(rec); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func appendAny(fb array.Builder, v any) error {
	if v == nil {
		fb.AppendNull()
		return nil
	}
	switch b := fb.(type) {
	case *array.StringBuilder:
		b.Append(fmt.Sprint(v))
	case *array.Int64Builder:
		switch x := v.(type) {
		case int64:
			b.Append(x)
		case int:
			b.Append(int64(x))
		case *int64:
			if x == nil {
				b.AppendNull()
			} else {
				b.Append(*x)
			}
		default:
			return fmt.Errorf("not an integer: %T", v)
		}
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(time.Time).UnixMicro()))
	case *array.ListBuilder:
		b.Append(true)
		vb := b.ValueBuilder().(*array.StringBuilder)
		for _, s := range v.([]string) {
			vb.Append(s)
		}
	case *array.MapBuilder:
		m := v.(map[string]string)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.Append(true)
		kb := b.KeyBuilder().(*array.StringBuilder)
		ib := b.ItemBuilder().(*array.StringBuilder)
		for _, k := range keys {
			kb.Append(k)
			ib.Append(m[k])
		}
	default:
		return fmt.Errorf("unsupported builder %T", fb)
	}
	return nil
}
