package rowfile

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/internal/pqcheck"
)

// parquetColumn is how one output column is filled from the file.
type parquetColumn struct {
	src      int            // index in the record reader's schema, -1 if absent
	srcType  arrow.DataType // the file's type
	same     bool           // same layout as the target: reuse the buffers
	fn       appendFn       // per-value conversion into b
	c        conv
	b        array.Builder
	field    arrow.Field
	hasInner bool // the target has required fields below the top level
}

type parquetSource struct {
	*arrowCols
	pf    *file.Reader
	rr    pqarrow.RecordReader
	total int64
	batch int
}

// arrowCols converts Arrow batches of a source schema (a Parquet file's,
// or a caller's record stream) into the output schema.
type arrowCols struct {
	file   string
	schema *arrow.Schema
	cols   []parquetColumn
	mem    memory.Allocator
	rb     *array.RecordBuilder // builders for converted columns
	row    int64                // index of the next row
}

// planArrowCols matches the fields of src to the output schema and
// prepares a converter per column. srcOf maps a source field name to its
// output column.
func planArrowCols(name string, src, schema *arrow.Schema, opts *ReadOptions) (_ *arrowCols, srcOf map[string]int, err error) {
	a := &arrowCols{file: name, schema: schema, mem: opts.allocator()}
	res := newResolver(name, schema, opts)
	fields := schema.Fields()
	a.cols = make([]parquetColumn, len(fields))
	for i := range a.cols {
		a.cols[i] = parquetColumn{src: -1, field: fields[i], hasInner: hasRequiredInner(fields[i].Type)}
	}
	present := make([]bool, len(fields))
	srcOf = map[string]int{}
	for _, f := range src.Fields() {
		col, err := res.resolve([]byte(f.Name), 0)
		if err != nil {
			return nil, nil, err
		}
		if col < 0 {
			continue
		}
		if present[col] {
			return nil, nil, fmt.Errorf("%s: %w: two source columns match %q", name, ErrDuplicateColumn, fields[col].Name)
		}
		present[col] = true
		srcOf[f.Name] = col
		a.cols[col].srcType = f.Type
	}
	if err := missingRequired(name, fields, present); err != nil {
		return nil, nil, err
	}
	a.rb = array.NewRecordBuilder(a.mem, schema)
	co := convOptions{ignoreUnknown: opts.IgnoreUnknown}
	for i := range a.cols {
		pc := &a.cols[i]
		if !present[i] {
			continue
		}
		pc.same = sameLayout(pc.srcType, pc.field.Type)
		pc.b = a.rb.Field(i)
		pc.c, err = newConv(pc.field, pc.b, co)
		if err != nil {
			a.release()
			return nil, nil, fmt.Errorf("%s: column %q: %w", name, pc.field.Name, err)
		}
		fn, err := pc.c.arrowFunc(pc.srcType)
		if err != nil {
			a.release()
			return nil, nil, fmt.Errorf("%s: column %q: %w", name, pc.field.Name, err)
		}
		pc.fn = nonNull(pc.c, fn)
	}
	return a, srcOf, nil
}

func (a *arrowCols) release() {
	if a != nil && a.rb != nil {
		a.rb.Release()
		a.rb = nil
	}
}

// convert turns n rows of in (nil when no source column is read) into an
// output batch.
func (a *arrowCols) convert(in arrow.RecordBatch, n int64) (arrow.RecordBatch, error) {
	out := make([]arrow.Array, len(a.cols))
	defer func() {
		for _, x := range out {
			if x != nil {
				x.Release()
			}
		}
	}()
	for i := range a.cols {
		pc := &a.cols[i]
		if pc.src < 0 {
			out[i] = array.MakeArrayOfNull(a.mem, pc.field.Type, int(n))
			continue
		}
		col := in.Column(pc.src)
		if pc.same && !(pc.hasInner && hasNullsBelow(col)) {
			if !pc.field.Nullable && col.NullN() > 0 {
				for j := 0; j < col.Len(); j++ {
					if col.IsNull(j) {
						return nil, toValueError(pc.c.appendNull(), a.file, 0, a.row+int64(j), pc.field.Name)
					}
				}
			}
			d := retype(col.Data(), pc.field.Type)
			out[i] = array.MakeFromData(d)
			d.Release()
			continue
		}
		for j := 0; j < col.Len(); j++ {
			if err := pc.fn(col, j); err != nil {
				return nil, toValueError(err, a.file, 0, a.row+int64(j), pc.field.Name)
			}
		}
		out[i] = pc.b.NewArray()
	}
	a.row += n
	return array.NewRecordBatch(a.schema, out, n), nil
}

func newParquetSource(ctx context.Context, ra readerAtSeeker, name string, schema *arrow.Schema, opts *ReadOptions) (_ *parquetSource, err error) {
	defer func() {
		// NB: a corrupt footer can make the decoder panic (see next).
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", name, ErrMalformed, p)
		}
	}()
	mem := opts.allocator()
	props := parquet.NewReaderProperties(mem)
	// NB: stream pages instead of loading whole column chunks, so memory
	// does not grow with the row group size.
	props.BufferedStreamEnabled = true
	// NB: the wrapper hides Close, which file.Reader would call on the
	// caller's file; the file is closed by whoever opened it.
	pf, err := file.NewParquetReader(struct{ readerAtSeeker }{ra}, file.WithReadProps(props))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	if err := pqcheck.Check(pf); err != nil {
		pf.Close()
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	s := &parquetSource{pf: pf, batch: opts.batchSize(), total: pf.NumRows()}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(s.batch)}, mem)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	fileSchema, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	ac, srcOf, err := planArrowCols(name, fileSchema, schema, opts)
	if err != nil {
		return nil, err
	}
	s.arrowCols = ac
	var leaves []int
	for k, f := range fileSchema.Fields() {
		if _, ok := srcOf[f.Name]; ok {
			leaves = appendLeaves(leaves, &fr.Manifest.Fields[k])
		}
	}
	if len(leaves) == 0 {
		return s, nil // no column is read: rows of NULLs
	}
	s.rr, err = fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	for k, f := range s.rr.Schema().Fields() {
		s.cols[srcOf[f.Name]].src = k
	}
	return s, nil
}

// appendLeaves adds the Parquet leaf column indices below a field.
func appendLeaves(out []int, f *pqarrow.SchemaField) []int {
	if f.IsLeaf() {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = appendLeaves(out, &f.Children[i])
	}
	return out
}

func (s *parquetSource) next(ctx context.Context) (rec arrow.RecordBatch, err error) {
	if s.row >= s.total {
		return nil, nil
	}
	defer func() {
		// NB: a corrupt file can make the decoder panic; report it as a
		// malformed file rather than crashing the process.
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("%s: rows from %d: %w: %v", s.file, s.row, ErrMalformed, p)
		}
	}()
	var in arrow.RecordBatch
	n := int64(s.batch)
	if s.rr != nil {
		if !s.rr.Next() {
			if err := s.rr.Err(); err != nil {
				return nil, fmt.Errorf("%s: rows from %d: %w: %v", s.file, s.row, ErrMalformed, err)
			}
			return nil, fmt.Errorf("%s: %w: file ended after %d of its %d rows", s.file, ErrMalformed, s.row, s.total)
		}
		in = s.rr.RecordBatch()
		n = in.NumRows()
	} else {
		n = min(n, s.total-s.row)
	}
	return s.convert(in, n)
}

func (s *parquetSource) close() error {
	if s.rr != nil {
		s.rr.Release()
		s.rr = nil
	}
	s.arrowCols.release()
	if s.pf != nil {
		// Closing the file.Reader only releases its buffers (see above).
		err := s.pf.Close()
		s.pf = nil
		return err
	}
	return nil
}

// sameLayout reports whether arrays of type src can be relabelled as dst
// without touching their buffers: the same types, ignoring the names,
// nullability and metadata of nested fields.
func sameLayout(src, dst arrow.DataType) bool {
	if src.ID() != dst.ID() {
		return false
	}
	switch d := dst.(type) {
	case *arrow.ListType:
		return sameLayout(src.(*arrow.ListType).Elem(), d.Elem())
	case *arrow.LargeListType:
		return sameLayout(src.(*arrow.LargeListType).Elem(), d.Elem())
	case *arrow.MapType:
		s := src.(*arrow.MapType)
		return sameLayout(s.KeyType(), d.KeyType()) && sameLayout(s.ItemType(), d.ItemType())
	case *arrow.StructType:
		s := src.(*arrow.StructType)
		if s.NumFields() != d.NumFields() {
			return false
		}
		for i := range d.Fields() {
			if s.Field(i).Name != d.Field(i).Name || !sameLayout(s.Field(i).Type, d.Field(i).Type) {
				return false
			}
		}
		return true
	case arrow.ExtensionType:
		se, ok := src.(arrow.ExtensionType)
		return ok && d.ExtensionEquals(se)
	}
	return arrow.TypeEqual(src, dst)
}

// hasRequiredInner reports whether a type has a non-nullable field below
// its top level (list elements, struct fields, map values).
func hasRequiredInner(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case arrow.ListLikeType:
		if _, isMap := dt.(*arrow.MapType); isMap {
			m := dt.(*arrow.MapType)
			return !m.ItemField().Nullable || hasRequiredInner(m.ItemType()) || hasRequiredInner(m.KeyType())
		}
		return !t.ElemField().Nullable || hasRequiredInner(t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !f.Nullable || hasRequiredInner(f.Type) {
				return true
			}
		}
	}
	return false
}

// hasNullsBelow reports whether any child array below a has NULLs; when it
// does and the target requires values there, the per-value path checks each
// one (a NULL under a NULL parent is fine, and only that path can tell).
func hasNullsBelow(a arrow.Array) bool {
	for _, c := range a.Data().Children() {
		if c.NullN() > 0 || hasNullsBelowData(c) {
			return true
		}
	}
	return false
}

func hasNullsBelowData(d arrow.ArrayData) bool {
	for _, c := range d.Children() {
		if c.NullN() > 0 || hasNullsBelowData(c) {
			return true
		}
	}
	return false
}

// retype returns data relabelled with type dt (see sameLayout).
func retype(d arrow.ArrayData, dt arrow.DataType) arrow.ArrayData {
	var childTypes []arrow.DataType
	switch t := dt.(type) {
	case *arrow.ListType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.LargeListType:
		childTypes = []arrow.DataType{t.Elem()}
	case *arrow.MapType:
		childTypes = []arrow.DataType{t.Elem()} // the entries struct
	case *arrow.StructType:
		for _, f := range t.Fields() {
			childTypes = append(childTypes, f.Type)
		}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		if i < len(childTypes) {
			children[i] = retype(c, childTypes[i])
		} else {
			c.Retain()
			children[i] = c
		}
	}
	out := array.NewData(dt, d.Len(), d.Buffers(), children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}
