package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/internal/pqcheck"
)

// readCheckpoint calls fn for the actions of a checkpoint: its files (all
// parts of a multi-part checkpoint) and, for a v2 checkpoint, the sidecar
// files it names. With filesToo false only protocol, metaData and txn are
// read, and sidecars are skipped (they hold only file actions).
func (t *Table) readCheckpoint(ctx context.Context, cp *checkpoint, filesToo bool, fn func(a *action) error) error {
	var sidecars []*sidecar
	collect := func(a *action) error {
		if a.Sidecar != nil {
			sidecars = append(sidecars, a.Sidecar)
			return nil
		}
		return fn(a)
	}
	for _, fi := range cp.files {
		var err error
		if strings.HasSuffix(fi.Name, ".json") {
			err = t.readJSONActions(ctx, fi, filesToo, func(_ int, a *action) error { return collect(a) })
		} else {
			cols := []string{"protocol", "metaData", "txn"}
			if filesToo {
				cols = append(cols, "add", "sidecar")
			}
			err = t.readParquetActions(ctx, fi.Location, "checkpoint", cols, collect)
		}
		if err != nil {
			return err
		}
	}
	if !filesToo {
		return nil
	}
	for _, sc := range sidecars {
		raw := sc.Path
		if _, abs := uriScheme(raw); !abs && !strings.HasPrefix(raw, "/") {
			raw = "_delta_log/_sidecars/" + raw
		}
		loc, err := t.root.resolve(raw)
		if err != nil {
			return fmt.Errorf("sidecar %q of checkpoint %d: %w", sc.Path, cp.version, err)
		}
		if err := t.readParquetActions(ctx, loc, "checkpoint sidecar", []string{"add"}, fn); err != nil {
			return err
		}
	}
	return nil
}

// readParquetActions reads the given top-level action columns of a Parquet
// checkpoint or sidecar and calls fn for each non-null action. Parsed copies
// of stats and partition values (stats_parsed, partitionValues_parsed) are
// not read.
func (t *Table) readParquetActions(ctx context.Context, location, what string, columns []string, fn func(a *action) error) (err error) {
	defer func() {
		// NB: arrow-go's Parquet decoder can panic on a damaged file (a nil
		// page header, seen by FuzzCheckpoint): report it as damage.
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s %s is damaged: the Parquet decoder failed: %v", ErrCorruptLog, what, location, p)
		}
	}()
	f, err := t.openFile(ctx, location, what+" "+location+" of table "+t.root.String())
	if err != nil {
		return err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(io.NewSectionReader(f, 0, f.Size()))
	if err != nil {
		return fmt.Errorf("%w: %s %s is not a readable Parquet file: %v", ErrCorruptLog, what, location, err)
	}
	defer pf.Close()
	if err := pqcheck.Check(pf); err != nil {
		return fmt.Errorf("%w: %s %s is damaged: %v", ErrCorruptLog, what, location, err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, t.mem)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrCorruptLog, what, location, err)
	}
	want := map[string]bool{}
	for _, c := range columns {
		want[c] = true
	}
	var leaves []int
	for i := range fr.Manifest.Fields {
		top := &fr.Manifest.Fields[i]
		if !want[top.Field.Name] {
			continue
		}
		for j := range top.Children {
			child := &top.Children[j]
			if strings.HasSuffix(child.Field.Name, "_parsed") {
				continue
			}
			leaves = collectLeaves(child, leaves)
		}
		if len(top.Children) == 0 && top.IsLeaf() {
			leaves = append(leaves, top.ColIndex)
		}
	}
	if len(leaves) == 0 {
		return nil
	}
	rr, err := fr.GetRecordReader(ctx, leaves, nil)
	if err != nil {
		return fmt.Errorf("%w: %s %s: %v", ErrCorruptLog, what, location, err)
	}
	defer rr.Release()
	row := 0
	for rr.Next() {
		rec := rr.RecordBatch()
		sc := rec.Schema()
		for i := 0; i < int(rec.NumRows()); i++ {
			for c := 0; c < int(rec.NumCols()); c++ {
				col := rec.Column(c)
				if col.IsNull(i) {
					continue
				}
				obj := map[string]any{sc.Field(c).Name: arrowToAny(col, i)}
				buf, err := json.Marshal(obj)
				if err != nil {
					return fmt.Errorf("%w: %s %s row %d: %v", ErrCorruptLog, what, location, row+i, err)
				}
				var a action
				if err := json.Unmarshal(buf, &a); err != nil {
					return fmt.Errorf("%w: %s %s row %d column %s: %v", ErrCorruptLog, what, location, row+i, sc.Field(c).Name, describeJSONError(err))
				}
				if err := a.validate(); err != nil {
					return fmt.Errorf("%w: %s %s row %d: %v", ErrCorruptLog, what, location, row+i, err)
				}
				if err := fn(&a); err != nil {
					return err
				}
			}
		}
		row += int(rec.NumRows())
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return fmt.Errorf("%w: %s %s: %v", ErrCorruptLog, what, location, err)
	}
	return nil
}

func collectLeaves(f *pqarrow.SchemaField, out []int) []int {
	if f.IsLeaf() {
		return append(out, f.ColIndex)
	}
	for i := range f.Children {
		out = collectLeaves(&f.Children[i], out)
	}
	return out
}

// arrowToAny converts one value of an Arrow array to the Go value
// encoding/json would produce for the same JSON action: objects for structs
// and maps, slices for lists.
func arrowToAny(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := make(map[string]any, st.NumFields())
		for j := 0; j < st.NumFields(); j++ {
			m[st.Field(j).Name] = arrowToAny(a.Field(j), i)
		}
		return m
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		m := make(map[string]any, end-start)
		for j := int(start); j < int(end); j++ {
			m[fmt.Sprint(arrowToAny(keys, j))] = arrowToAny(items, j)
		}
		return m
	case *array.List:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			out = append(out, arrowToAny(vals, j))
		}
		return out
	case *array.String:
		return a.Value(i)
	case *array.LargeString:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return int64(a.Value(i))
	case *array.Int16:
		return int64(a.Value(i))
	case *array.Int32:
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Float32:
		return float64(a.Value(i))
	case *array.Float64:
		return a.Value(i)
	}
	return json.RawMessage(strconv.Quote(arr.ValueStr(i)))
}
