package delta

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fieldIDKey is the Arrow field metadata key pqarrow uses for Parquet field ids.
const fieldIDKey = "PARQUET:field_id"

// matchField finds the file field holding Delta field f: by Parquet field id
// under id mapping, else by physical name, exactly and then ignoring case.
// It returns -1 when the file lacks the field.
func matchField(fields []arrow.Field, f *StructField, mode ColumnMappingMode) int {
	if mode == ColumnMappingID {
		if id, ok := f.ColumnMappingID(); ok {
			want := strconv.FormatInt(id, 10)
			for i := range fields {
				if v, ok := fields[i].Metadata.GetValue(fieldIDKey); ok && v == want {
					return i
				}
			}
		}
	}
	name := f.PhysicalName(mode)
	for i := range fields {
		if fields[i].Name == name {
			return i
		}
	}
	for i := range fields {
		if strings.EqualFold(fields[i].Name, name) {
			return i
		}
	}
	return -1
}

// converter turns arrays read from Parquet into the Arrow types of the Delta
// schema: it renames physical (column-mapped) nested fields to logical
// names, fills nested fields a file lacks with nulls and converts compatible
// physical types (INT96 and nanosecond timestamps, narrower integers,
// decimals of another precision).
type converter struct {
	ctx  context.Context
	mem  memory.Allocator
	mode ColumnMappingMode
}

// conform returns arr as Arrow type dst (the ArrowType of Delta type dt). The
// result is a new reference the caller must release; when no change is
// needed it is arr itself, retained.
func (c *converter) conform(arr arrow.Array, dt DataType, dst arrow.DataType, path string) (arrow.Array, error) {
	if arrow.TypeEqual(arr.DataType(), dst) {
		arr.Retain()
		return arr, nil
	}
	switch d := dst.(type) {
	case *arrow.StructType:
		src, ok := arr.(*array.Struct)
		st, ok2 := dt.(*StructType)
		if !ok || !ok2 {
			break
		}
		srcFields := src.DataType().(*arrow.StructType).Fields()
		data := src.Data()
		children := make([]arrow.ArrayData, d.NumFields())
		defer func() {
			for _, ch := range children {
				if ch != nil {
					ch.Release()
				}
			}
		}()
		for j := range st.Fields {
			df := &st.Fields[j]
			k := matchField(srcFields, df, c.mode)
			if k < 0 {
				nulls := array.MakeArrayOfNull(c.mem, d.Field(j).Type, data.Offset()+data.Len())
				children[j] = nulls.Data()
				children[j].Retain()
				nulls.Release()
				continue
			}
			child := array.MakeFromData(data.Children()[k])
			conv, err := c.conform(child, df.Type, d.Field(j).Type, path+"."+df.Name)
			child.Release()
			if err != nil {
				return nil, err
			}
			children[j] = conv.Data()
			children[j].Retain()
			conv.Release()
		}
		out := array.NewData(d, data.Len(), data.Buffers()[:1], children, data.NullN(), data.Offset())
		defer out.Release()
		return array.MakeFromData(out), nil
	case *arrow.ListType:
		at, ok := dt.(*ArrayType)
		src, ok2 := arr.(*array.List)
		if !ok || !ok2 {
			break
		}
		vals := src.ListValues()
		conv, err := c.conform(vals, at.ElementType, d.Elem(), path+".element")
		if err != nil {
			return nil, err
		}
		defer conv.Release()
		data := src.Data()
		out := array.NewData(d, data.Len(), data.Buffers()[:2], []arrow.ArrayData{conv.Data()}, data.NullN(), data.Offset())
		defer out.Release()
		return array.MakeFromData(out), nil
	case *arrow.MapType:
		mt, ok := dt.(*MapType)
		src, ok2 := arr.(*array.Map)
		if !ok || !ok2 {
			break
		}
		entries := src.ListValues().Data()
		rawKeys := array.MakeFromData(entries.Children()[0])
		keys, err := c.conform(rawKeys, mt.KeyType, d.KeyType(), path+".key")
		rawKeys.Release()
		if err != nil {
			return nil, err
		}
		defer keys.Release()
		rawItems := array.MakeFromData(entries.Children()[1])
		items, err := c.conform(rawItems, mt.ValueType, d.ItemType(), path+".value")
		rawItems.Release()
		if err != nil {
			return nil, err
		}
		defer items.Release()
		ent := array.NewData(d.Elem(), entries.Len(), entries.Buffers()[:1], []arrow.ArrayData{keys.Data(), items.Data()}, entries.NullN(), entries.Offset())
		defer ent.Release()
		data := src.Data()
		out := array.NewData(d, data.Len(), data.Buffers()[:2], []arrow.ArrayData{ent}, data.NullN(), data.Offset())
		defer out.Release()
		return array.MakeFromData(out), nil
	case *arrow.TimestampType:
		if s, ok := arr.DataType().(*arrow.TimestampType); ok {
			return c.timestamp(arr, s, d)
		}
	}
	return c.cast(arr, dst, path)
}

// timestamp converts between timestamp units (truncating toward negative
// infinity, as Spark does for nanoseconds) and relabels the zone.
func (c *converter) timestamp(arr arrow.Array, src, dst *arrow.TimestampType) (arrow.Array, error) {
	data := arr.Data()
	if src.Unit == dst.Unit {
		out := array.NewData(dst, data.Len(), data.Buffers(), nil, data.NullN(), data.Offset())
		defer out.Release()
		return array.MakeFromData(out), nil
	}
	in := arr.(*array.Timestamp)
	b := array.NewTimestampBuilder(c.mem, dst)
	defer b.Release()
	b.Reserve(in.Len())
	mul, div := unitFactor(src.Unit, dst.Unit)
	for i := 0; i < in.Len(); i++ {
		if in.IsNull(i) {
			b.AppendNull()
			continue
		}
		v := int64(in.Value(i))
		if div > 1 {
			q := v / div
			if v%div < 0 {
				q--
			}
			v = q
		} else {
			v *= mul
		}
		b.Append(arrow.Timestamp(v))
	}
	return b.NewArray(), nil
}

func unitFactor(from, to arrow.TimeUnit) (mul, div int64) {
	scale := map[arrow.TimeUnit]int64{arrow.Second: 1, arrow.Millisecond: 1e3, arrow.Microsecond: 1e6, arrow.Nanosecond: 1e9}
	f, t := scale[from], scale[to]
	if f > t {
		return 1, f / t
	}
	return t / f, 1
}

// cast converts a leaf with the Arrow compute cast kernels (integer and float
// widening, decimal precision, date, string/binary variants), refusing lossy
// casts.
func (c *converter) cast(arr arrow.Array, dst arrow.DataType, path string) (arrow.Array, error) {
	out, err := compute.CastArray(compute.WithAllocator(c.ctx, c.mem), arr, compute.SafeCastOptions(dst))
	if err != nil {
		return nil, fmt.Errorf("%w: column %q: cannot read Parquet type %s as %s: %v", ErrUnsupportedFeature, path, arr.DataType(), dst, err)
	}
	return out, nil
}

// selectionMask returns a boolean mask of the n rows starting at row offset
// first that a selection keeps, or nil when it keeps them all. The second
// result reports that it keeps none.
func selectionMask(mem memory.Allocator, sel *rowSelection, first int64, n int) (arrow.Array, bool) {
	if sel == nil || sel.rows == nil {
		return nil, false
	}
	lo, hi := uint64(first), uint64(first)+uint64(n)
	var hits []int // batch positions of the selection's rows
	it := sel.rows.Iterator()
	it.AdvanceIfNeeded(lo)
	for it.HasNext() {
		r := it.Next()
		if r >= hi {
			break
		}
		hits = append(hits, int(r-lo))
	}
	// keep: the hits are kept; otherwise the hits are dropped.
	switch {
	case len(hits) == 0:
		return nil, sel.keep
	case len(hits) == n:
		return nil, !sel.keep
	}
	buf := memory.NewResizableBuffer(mem)
	buf.Resize(int(bitutil.BytesForBits(int64(n))))
	bits := buf.Bytes()
	fill := byte(0xFF)
	if sel.keep {
		fill = 0
	}
	for i := range bits {
		bits[i] = fill
	}
	for _, h := range hits {
		bitutil.SetBitTo(bits, h, sel.keep)
	}
	return boolArray(buf, n), false
}

func boolArray(buf *memory.Buffer, n int) arrow.Array {
	defer buf.Release()
	data := array.NewData(arrow.FixedWidthTypes.Boolean, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	return array.MakeFromData(data)
}
