package deltasync

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/scan"
)

// openCatalog opens an embedded catalog in a fresh folder.
func openCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	cat, err := catalog.Open(context.Background(), catalog.Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return cat
}

// cell renders a value for comparisons: like deltatest.FormatCell, but NULL
// (at any depth) is "NULL", so that it differs from the empty string, and
// binary is hex.
func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch v := a.(type) {
	case *array.Binary:
		return "0x" + hex.EncodeToString(v.Value(i))
	case *array.Struct:
		st := v.DataType().(*arrow.StructType)
		parts := make([]string, st.NumFields())
		for j := 0; j < st.NumFields(); j++ {
			parts[j] = st.Field(j).Name + ": " + cell(v.Field(j), i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *array.Map:
		s, e := v.ValueOffsets(i)
		var parts []string
		for j := int(s); j < int(e); j++ {
			parts = append(parts, cell(v.Keys(), j)+": "+cell(v.Items(), j))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *array.List:
		s, e := v.ValueOffsets(i)
		var parts []string
		for j := int(s); j < int(e); j++ {
			parts = append(parts, cell(v.ListValues(), j))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *array.String:
		return strconv.Quote(v.Value(i))
	}
	return deltatest.FormatCell(a, i)
}

// drain renders the named columns of a batch sequence as rows, releasing
// the batches.
func drain(schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error], names []string) ([][]string, error) {
	idx := make([]int, len(names))
	for i, n := range names {
		is := schema.FieldIndices(n)
		if len(is) != 1 {
			return nil, fmt.Errorf("no column %q in %s", n, schema)
		}
		idx[i] = is[0]
	}
	out := [][]string{}
	for rec, err := range seq {
		if err != nil {
			return nil, err
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make([]string, len(idx))
			for j, c := range idx {
				row[j] = cell(rec.Column(c), r)
			}
			out = append(out, row)
		}
		rec.Release()
	}
	return out, nil
}

// deltaRows returns the rows of the Delta snapshot at v and its column names.
func deltaRows(t testing.TB, src *delta.Table, v int64) ([][]string, []string) {
	t.Helper()
	ctx := context.Background()
	snap, err := src.Snapshot(ctx, v)
	if err != nil {
		t.Fatalf("Delta snapshot %d: %v", v, err)
	}
	schema, seq, err := snap.Scan(ctx, delta.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		names[i] = f.Name
	}
	rows, err := drain(schema, seq, names)
	if err != nil {
		t.Fatalf("Delta snapshot %d: %v", v, err)
	}
	return rows, names
}

// icebergRows returns the rows of the Iceberg table's current snapshot.
func icebergRows(t testing.TB, cat *catalog.Catalog, ident table.Identifier, names []string) [][]string {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	schema, seq, err := scan.Rows(ctx, tbl, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := drain(schema, seq, names)
	if err != nil {
		t.Fatalf("scan %s: %v", catalog.FormatName(ident), err)
	}
	return rows
}

// tableState is what a failed run must leave unchanged: the metadata file
// (every commit writes a new one).
func tableState(t testing.TB, cat *catalog.Catalog, ident table.Identifier) string {
	t.Helper()
	tbl, err := cat.Load(context.Background(), ident)
	if err != nil {
		return "absent: " + err.Error()
	}
	return tbl.MetadataLocation()
}

// watermark returns the table's watermark property ("" when absent).
// watermark is the table's watermark ("" when it has none, or when the
// table does not exist: a first run that failed creates nothing where the
// catalog creates and migrates in one commit).
func watermark(t testing.TB, cat *catalog.Catalog, ident table.Identifier) string {
	t.Helper()
	tbl, err := cat.Load(context.Background(), ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return tbl.Properties()[PropSourceVersion]
}

func deltatestDiff(got, want [][]string) string { return deltatest.DiffMultisets(got, want) }
