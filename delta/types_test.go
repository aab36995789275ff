package delta_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

// recordFromJSON builds a record batch from JSON rows.
func recordFromJSON(t *testing.T, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// scanTable reads the latest snapshot of the table at dir as text rows.
func scanTable(t *testing.T, dir string, columns []string) [][]string {
	t.Helper()
	ctx := context.Background()
	tbl, err := delta.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := tbl.LatestSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema, seq, err := s.Scan(ctx, delta.ScanOptions{Columns: columns})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := deltatest.Rows(schema, seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	deltatest.SortRows(rows)
	return rows
}

func field(name string, t arrow.DataType, md ...string) arrow.Field {
	f := arrow.Field{Name: name, Type: t, Nullable: true}
	if len(md) > 0 {
		f.Metadata = arrow.NewMetadata(md[:len(md)/2], md[len(md)/2:])
	}
	return f
}

// TestReadConvertsPhysicalTypes writes data files whose Parquet types differ
// from the table schema in the ways real writers produce (INT96 and
// nanosecond timestamps, narrower integers and decimals, nested values of
// narrower types) and checks Scan returns the schema's types and values.
func TestReadConvertsPhysicalTypes(t *testing.T) {
	dir := t.TempDir()
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	tsUTC := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	tableSchema := arrow.NewSchema([]arrow.Field{
		field("ts", tsUTC),
		field("ntz", &arrow.TimestampType{Unit: arrow.Microsecond}),
		field("n", arrow.PrimitiveTypes.Int64),
		field("small", arrow.PrimitiveTypes.Int8),
		field("price", &arrow.Decimal128Type{Precision: 12, Scale: 2}),
		field("s", arrow.StructOf(field("x", arrow.PrimitiveTypes.Int64))),
		field("l", arrow.ListOf(arrow.PrimitiveTypes.Int64)),
		field("m", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)),
		field("added_later", arrow.BinaryTypes.String),
	}, nil)
	meta, err := deltatest.Metadata(tableSchema, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	proto := delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"timestampNtz"}, WriterFeatures: []string{"timestampNtz"}}
	fileSchema := arrow.NewSchema([]arrow.Field{
		field("ts", &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}),
		field("ntz", &arrow.TimestampType{Unit: arrow.Nanosecond}),
		field("n", arrow.PrimitiveTypes.Int32),
		field("small", arrow.PrimitiveTypes.Int32),
		field("price", &arrow.Decimal128Type{Precision: 9, Scale: 2}),
		field("s", arrow.StructOf(field("x", arrow.PrimitiveTypes.Int32))),
		field("l", arrow.ListOf(arrow.PrimitiveTypes.Int32)),
		field("m", arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32)),
	}, nil)
	rows := `[
	 {"ts": "2024-03-01T12:00:00.123456789Z", "ntz": "2024-03-01T12:00:00.5", "n": 7, "small": -3, "price": "12.50",
	  "s": {"x": 1}, "l": [1, 2], "m": [{"key": "a", "value": 1}]},
	 {"ts": null, "ntz": null, "n": null, "small": null, "price": null, "s": null, "l": null, "m": null}
	]`
	rec := recordFromJSON(t, fileSchema, rows)
	defer rec.Release()
	// The first file stores the timestamp as INT96, the second as
	// TIMESTAMP(NANOS); both read as microseconds.
	w.Int96Timestamps = true
	a, err := w.WriteData("int96.parquet", rec)
	if err != nil {
		t.Fatal(err)
	}
	w.Int96Timestamps = false
	b, err := w.WriteData("nanos.parquet", rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(proto, meta, a, b); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]parquet.Type{"int96.parquet": parquet.Types.Int96, "nanos.parquet": parquet.Types.Int64} {
		pr, err := file.OpenParquetFile(filepath.Join(dir, name), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := pr.MetaData().Schema.Column(0).PhysicalType(); got != want {
			t.Fatalf("%s stores ts as %s, want %s", name, got, want)
		}
		pr.Close()
	}
	got := scanTable(t, dir, nil)
	full := []string{"2024-03-01T12:00:00.123456", "2024-03-01T12:00:00.500000", "7", "-3", "12.50", "{x: 1}", "[1, 2]", "{a: 1}", ""}
	empty := make([]string, 9)
	want := [][]string{empty, empty, full, full}
	if d := deltatest.DiffMultisets(got, want); d != "" {
		t.Fatal(d)
	}
}

// TestReadColumnMapping writes data files with physical column names (and
// Parquet field ids) as column mapping requires, including nested struct
// fields, and checks Scan maps them back to logical names: by name in name
// mode, by field id first in id mode.
func TestReadColumnMapping(t *testing.T) {
	cm := func(name string, typ arrow.DataType, id, phys string) arrow.Field {
		return field(name, typ, "delta.columnMapping.id", "delta.columnMapping.physicalName", id, phys)
	}
	tableSchema := arrow.NewSchema([]arrow.Field{
		cm("id", arrow.PrimitiveTypes.Int64, "1", "col-a"),
		cm("info", arrow.StructOf(cm("city", arrow.BinaryTypes.String, "3", "col-c")), "2", "col-b"),
		cm("missing", arrow.BinaryTypes.String, "4", "col-d"),
		cm("part", arrow.BinaryTypes.String, "5", "col-e"),
	}, nil)
	pf := func(name string, typ arrow.DataType, id string) arrow.Field {
		return field(name, typ, "PARQUET:field_id", id)
	}
	for _, mode := range []string{"name", "id"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			w, err := deltatest.NewWriter(dir)
			if err != nil {
				t.Fatal(err)
			}
			meta, err := deltatest.Metadata(tableSchema, []string{"part"}, map[string]string{"delta.columnMapping.mode": mode})
			if err != nil {
				t.Fatal(err)
			}
			proto := delta.Protocol{MinReaderVersion: 2, MinWriterVersion: 5}
			// Physical names; under id mode the names are different again,
			// so only the field ids can match.
			names := map[string][]string{"name": {"col-a", "col-b", "col-c"}, "id": {"x1", "x2", "x3"}}[mode]
			fileSchema := arrow.NewSchema([]arrow.Field{
				pf(names[0], arrow.PrimitiveTypes.Int64, "1"),
				pf(names[1], arrow.StructOf(pf(names[2], arrow.BinaryTypes.String, "3")), "2"),
			}, nil)
			rec := recordFromJSON(t, fileSchema, `[{"`+names[0]+`": 1, "`+names[1]+`": {"`+names[2]+`": "Oslo"}}]`)
			defer rec.Release()
			add, err := w.WriteData("f.parquet", rec)
			if err != nil {
				t.Fatal(err)
			}
			add.PartitionValues = map[string]*string{"col-e": deltatest.Str("p1")}
			if _, err := w.Commit(proto, meta, add); err != nil {
				t.Fatal(err)
			}
			got := scanTable(t, dir, nil)
			want := [][]string{{"1", "{city: Oslo}", "", "p1"}}
			if d := deltatest.DiffMultisets(got, want); d != "" {
				t.Fatal(d)
			}
		})
	}
}
