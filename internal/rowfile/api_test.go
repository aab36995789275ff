package rowfile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func TestOpenOptionsErrors(t *testing.T) {
	target := mustSchema(t, "id long not null\nname string")
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "a.csv")
	if err := os.WriteFile(csvPath, []byte("id,name\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name, path string
		opts       ReadOptions
		sentinel   error
		msg        string
	}{
		{"nil target", csvPath, ReadOptions{}, ErrOptions, "invalid read options: Target schema is nil"},
		{"negative batch", csvPath, ReadOptions{Target: target, BatchSize: -1}, ErrOptions, "invalid read options: BatchSize -1 is negative"},
		{"extra clashes", csvPath, ReadOptions{Target: target, Extra: []arrow.Field{{Name: "ID", Type: arrow.BinaryTypes.String}}},
			ErrOptions, `invalid read options: column names "id" and "ID" clash`},
		{"unknown extension", filepath.Join(dir, "a.txt"), ReadOptions{Target: target}, ErrFormat,
			`unsupported format: cannot tell the format of "` + filepath.Join(dir, "a.txt") + `" from its extension ".txt"; use .csv, .jsonl, .ndjson, .json, .parquet or .parq, or name the format`},
		{"stdin needs format", "-", ReadOptions{Target: target}, ErrFormat,
			`unsupported format: cannot tell the format of "-" from its extension ""; use .csv, .jsonl, .ndjson, .json, .parquet or .parq, or name the format`},
		{"missing file", filepath.Join(dir, "nope.csv"), ReadOptions{Target: target}, os.ErrNotExist,
			"open " + filepath.Join(dir, "nope.csv") + ": no such file or directory"},
		{"unsupported target type", csvPath, ReadOptions{Target: arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.FixedWidthTypes.Duration_s, Nullable: true}}, nil)},
			ErrUnsupportedType, csvPath + `: column "id": unsupported column type: duration[s]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Open(ctx, tc.path, tc.opts)
			if err == nil {
				r.Close()
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.sentinel) || err.Error() != tc.msg {
				t.Errorf("error %q (%s), want %q", err, sentinelName(err), tc.msg)
			}
		})
	}
}

func TestOpenFileAndExtraColumns(t *testing.T) {
	target := mustSchema(t, "id long not null\nname string")
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	extra := []arrow.Field{{Name: "_change_type", Type: arrow.BinaryTypes.String, Nullable: false, Metadata: md},
		{Name: "_seq", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}
	path := filepath.Join(t.TempDir(), "c.ndjson")
	os.WriteFile(path, []byte(`{"_change_type": "insert", "id": 1, "_seq": 5}`+"\n"+`{"_change_type": "delete", "id": 2}`+"\n"), 0o644)
	r, err := Open(context.Background(), path, ReadOptions{Target: target, Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := arrow.NewSchema(append(target.Fields(), extra...), nil)
	if !r.Schema().Equal(want) {
		t.Fatalf("schema %s, want %s", r.Schema(), want)
	}
	for i, f := range want.Fields() {
		if !r.Schema().Field(i).Metadata.Equal(f.Metadata) {
			t.Errorf("field %s lost its metadata", f.Name)
		}
	}
	var out bytes.Buffer
	w, _ := NewWriter(&out, OutputCSV, r.Schema())
	for r.Next() {
		w.Write(r.RecordBatch())
	}
	w.Close()
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if got, exp := out.String(), "id,name,_change_type,_seq\n1,,insert,5\n2,,delete,\n"; got != exp {
		t.Errorf("got\n%s\nwant\n%s", got, exp)
	}
	// An extra column is required like any other.
	os.WriteFile(path, []byte(`{"id": 1}`+"\n"), 0o644)
	r2, err := Open(context.Background(), path, ReadOptions{Target: target, Extra: extra})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	for r2.Next() {
	}
	// An absent key is a missing column (not a NULL), with its line.
	if err := r2.Err(); !errors.Is(err, ErrMissingColumn) || !strings.Contains(err.Error(), path+":1: ") || !strings.Contains(err.Error(), `"_change_type"`) {
		t.Errorf("error %v", err)
	}
}

// onlyReader hides every method but Read, like a pipe.
type onlyReader struct{ io.Reader }

func TestParquetFromStream(t *testing.T) {
	schema := mustSchema(t, "id long\ns string")
	data := writeParquetFromJSONL(t, schema, "{\"id\": 1, \"s\": \"a\"}\n{\"id\": 2}\n")
	r, err := NewReader(context.Background(), onlyReader{bytes.NewReader(data)}, "stdin",
		ReadOptions{Target: schema, Format: FormatParquet})
	if err != nil {
		t.Fatal(err)
	}
	tmp := r.onClose // the temporary copy's cleanup
	if len(tmp) != 1 {
		t.Fatalf("expected a temporary copy, got %d cleanups", len(tmp))
	}
	n := 0
	for r.Next() {
		n += int(r.RecordBatch().NumRows())
	}
	if n != 2 || r.Err() != nil {
		t.Fatalf("rows %d err %v", n, r.Err())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "rowfile-*.parquet"))
	for _, m := range matches {
		t.Logf("left over (maybe another test run): %s", m)
	}
}

func TestAllAndRelease(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := mustSchema(t, "v long")
	input := "v\n1\n2\n3\n4\n5\nx\n"
	open := func() *Reader {
		r, err := NewReader(context.Background(), strings.NewReader(input), "v.csv",
			ReadOptions{Target: schema, BatchSize: 2, Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Full iteration ends with the error as the last element.
	r := open()
	var rows int64
	var last error
	for rec, err := range r.All() {
		if err != nil {
			last = err
			continue
		}
		rows += rec.NumRows()
		rec.Release()
	}
	if rows != 4 || last == nil || last.Error() != `v.csv:7: column "v": cannot convert "x" to long: not a number` {
		t.Errorf("rows %d, last error %v", rows, last)
	}
	r.Release() // the reference count drops to zero and closes it
	if !r.closed {
		t.Error("Release did not close")
	}
	// Stopping early keeps the reader usable.
	r = open()
	for rec, err := range r.All() {
		if err != nil {
			t.Fatal(err)
		}
		rec.Release()
		break
	}
	if !r.Next() || r.RecordBatch().Column(0).(*array.Int64).Value(0) != 3 {
		t.Error("did not continue after the first batch")
	}
	r.Retain()
	r.Release()
	if r.closed {
		t.Error("closed while still referenced")
	}
	r.Release()
}

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r, err := NewReader(ctx, strings.NewReader("v\n1\n"), "v.csv", ReadOptions{Target: mustSchema(t, "v long")})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cancel()
	if r.Next() || !errors.Is(r.Err(), context.Canceled) {
		t.Errorf("Next after cancel: err %v", r.Err())
	}
}

func TestWriterErrors(t *testing.T) {
	schema := mustSchema(t, "v long")
	rec := func(dt arrow.DataType) arrow.RecordBatch {
		s := arrow.NewSchema([]arrow.Field{{Name: "v", Type: dt, Nullable: true}}, nil)
		return array.NewRecordBatch(s, []arrow.Array{array.MakeArrayOfNull(memory.DefaultAllocator, dt, 1)}, 1)
	}
	for _, format := range []OutputFormat{OutputTable, OutputJSONL, OutputJSON, OutputCSV, OutputParquet} {
		t.Run(format.String(), func(t *testing.T) {
			w, err := NewWriter(io.Discard, format, schema)
			if err != nil {
				t.Fatal(err)
			}
			err = w.Write(rec(arrow.BinaryTypes.String))
			if !errors.Is(err, ErrSchema) || err.Error() != `schema mismatch: column 0 ("v") is utf8, the writer's schema has int64` {
				t.Errorf("mismatched batch: %v", err)
			}
			if err := w.Write(rec(arrow.PrimitiveTypes.Int64)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Write(rec(arrow.PrimitiveTypes.Int64)); !errors.Is(err, ErrWriterClosed) {
				t.Errorf("write after close: %v", err)
			}
			if err := w.Close(); !errors.Is(err, ErrWriterClosed) {
				t.Errorf("close twice: %v", err)
			}
		})
	}
	bad := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Duration_s}}, nil)
	if _, err := NewWriter(io.Discard, OutputJSONL, bad); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("duration column: %v", err)
	}
}

// TestIcebergSchema reads and writes through the schema iceberg-go builds
// for every Iceberg type, checking that the output keeps its fields exactly
// (field IDs included) and that the Parquet output carries the field IDs
// and zstd compression.
func TestIcebergSchema(t *testing.T) {
	id := 0
	next := func() int { id++; return id }
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: next(), Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: next(), Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: next(), Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: next(), Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: next(), Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: next(), Name: "dec", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: next(), Name: "dt", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: next(), Name: "tm", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: next(), Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: next(), Name: "tz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: next(), Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: next(), Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: next(), Name: "u", Type: iceberg.PrimitiveTypes.UUID},
		iceberg.NestedField{ID: next(), Name: "fx", Type: iceberg.FixedTypeOf(3)},
		iceberg.NestedField{ID: next(), Name: "l", Type: &iceberg.ListType{ElementID: next(), Element: iceberg.PrimitiveTypes.Int64, ElementRequired: true}},
		iceberg.NestedField{ID: next(), Name: "m", Type: &iceberg.MapType{KeyID: next(), KeyType: iceberg.PrimitiveTypes.String,
			ValueID: next(), ValueType: iceberg.PrimitiveTypes.Float64}},
		iceberg.NestedField{ID: next(), Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: next(), Name: "a", Type: iceberg.PrimitiveTypes.String, Required: true}}}},
	)
	row := `{"id": 1, "i": 2, "b": true, "f": 1.5, "d": 2.5, "dec": "3.25", "dt": "2024-01-02", "tm": "03:04:05", ` +
		`"ts": "2024-01-02T03:04:05", "tz": "2024-01-02T03:04:05Z", "s": "x", "bin": "AA==", ` +
		`"u": "0f7e6b2c-3b7a-4b8e-9c39-6d3b1c2e1f00", "fx": "AAEC", "l": [1, 2], "m": {"k": 1.5}, "st": {"a": "y"}}` + "\n"
	for _, large := range []bool{false, true} {
		target, err := table.SchemaToArrowSchema(sc, nil, true, large)
		if err != nil {
			t.Fatal(err)
		}
		out := readAllAs(t, []byte(row), "row.jsonl", ReadOptions{Target: target}, OutputJSONL)
		want := `{"id":1,"i":2,"b":true,"f":1.5,"d":2.5,"dec":"3.25","dt":"2024-01-02","tm":"03:04:05",` +
			`"ts":"2024-01-02T03:04:05","tz":"2024-01-02T03:04:05Z","s":"x","bin":"AA==",` +
			`"u":"0f7e6b2c-3b7a-4b8e-9c39-6d3b1c2e1f00","fx":"AAEC","l":[1,2],"m":{"k":1.5},"st":{"a":"y"}}` + "\n"
		if out != want {
			t.Fatalf("large=%v\ngot  %s\nwant %s", large, out, want)
		}
		r, err := NewReader(context.Background(), strings.NewReader(row), "row.jsonl", ReadOptions{Target: target})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		w, err := NewWriter(&buf, OutputParquet, target)
		if err != nil {
			t.Fatal(err)
		}
		for r.Next() {
			rec := r.RecordBatch()
			for i, f := range target.Fields() {
				if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type, arrow.CheckMetadata()) {
					t.Errorf("column %s: %s, want %s", f.Name, rec.Column(i).DataType(), f.Type)
				}
			}
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		r.Close()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		pf, err := file.NewParquetReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		col := pf.MetaData().Schema.Column(0)
		if col.Name() != "id" || col.SchemaNode().FieldID() != 1 {
			t.Errorf("first Parquet column %s has field id %d", col.Name(), col.SchemaNode().FieldID())
		}
		cc, err := pf.MetaData().RowGroup(0).ColumnChunk(0)
		if err != nil {
			t.Fatal(err)
		}
		if cc.Compression() != compress.Codecs.Zstd {
			t.Errorf("compression %v, want zstd", cc.Compression())
		}
		// And back: the Parquet file reads into the same schema.
		back := readAllAs(t, buf.Bytes(), "row.parquet", ReadOptions{Target: target}, OutputJSONL)
		if back != want {
			t.Errorf("parquet round trip\ngot  %s\nwant %s", back, want)
		}
		pf.Close()
	}
}

// TestCorruptParquet damages the bytes of a valid file in many places: each
// read must end (with rows or an ErrMalformed error naming the file), never
// panic or hang.
func TestCorruptParquet(t *testing.T) {
	schema := mustSchema(t, "id long\ns string\nl list<long>")
	var rows strings.Builder
	for i := range 200 {
		rows.WriteString(`{"id": ` + strings.Repeat("1", 1+i%15) + `, "s": "row ` + strings.Repeat("x", i%7) + `", "l": [1, 2]}` + "\n")
	}
	good := writeParquetFromJSONL(t, schema, rows.String())
	failures := 0
	for pos := 4; pos < len(good)-8; pos += max(len(good)/150, 1) {
		bad := bytes.Clone(good)
		bad[pos] ^= 0x5a
		r, err := NewReader(context.Background(), bytes.NewReader(bad), "bad.parquet", ReadOptions{Target: schema})
		if err == nil {
			for r.Next() {
			}
			err = r.Err()
			r.Close()
		}
		if err != nil {
			failures++
			if !strings.HasPrefix(err.Error(), "bad.parquet") {
				t.Errorf("byte %d: error without the file name: %v", pos, err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrValue) && !errors.Is(err, ErrUnknownColumn) &&
				!errors.Is(err, ErrIncompatibleType) && !errors.Is(err, ErrMissingColumn) {
				t.Errorf("byte %d: error without a sentinel: %v", pos, err)
			}
		}
	}
	if failures == 0 {
		t.Error("no damaged file was detected")
	}
	t.Logf("%d damaged files rejected", failures)
}
