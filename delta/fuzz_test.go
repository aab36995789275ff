package delta_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

// The fuzz targets of this file feed damaged transaction logs to the
// reader: commit files, checkpoints, deletion vector descriptors, Z85 text
// and schema strings. Each asserts that nothing panics and that every
// error wraps one of the package's sentinel errors (so a caller can tell
// what went wrong); the Z85 target also checks its round trips. Run one with
//
//	go test ./delta -run '^$' -fuzz '^FuzzCommit$' -fuzztime 1m
//
// Seeds are the corpora under testdata/fuzz/<target>/ plus the f.Add calls.

var sentinels = []error{delta.ErrNotATable, delta.ErrVersionNotFound, delta.ErrInvalidRange, delta.ErrTimestampOutOfRange,
	delta.ErrChangeDataNotRecorded, delta.ErrIncompatibleSchemaChange, delta.ErrUnsupportedFeature, delta.ErrCorruptLog,
	delta.ErrCorruptDeletionVector, delta.ErrFileNotFound, delta.ErrPathEscapesRoot, delta.ErrColumnNotFound, delta.ErrCorruptDataFile}

func checkErr(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error wraps no sentinel of package delta: %v", what, err)
}

// fuzzTable is a table with version 0 (protocol, metadata with the change
// data feed and deletion vectors enabled, one data file of ids 1..3) and
// version 1 (one more file), written once per fuzz process.
type fuzzTable struct {
	dir  string
	add  delta.AddFile // the file of version 0
	meta delta.Metadata
}

func newFuzzTable(tb testing.TB) *fuzzTable {
	tb.Helper()
	dir := filepath.Join(tb.TempDir(), "t")
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		tb.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	meta, err := deltatest.Metadata(schema, nil, map[string]string{"delta.enableChangeDataFeed": "true", "delta.enableDeletionVectors": "true"})
	if err != nil {
		tb.Fatal(err)
	}
	rec := func(ids ...int64) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for _, id := range ids {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append("n")
		}
		return b.NewRecordBatch()
	}
	r0 := rec(1, 2, 3)
	defer r0.Release()
	add, err := w.WriteData("part-0.parquet", r0)
	if err != nil {
		tb.Fatal(err)
	}
	proto := delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "changeDataFeed"}}
	if _, err := w.Commit(proto, meta, add); err != nil {
		tb.Fatal(err)
	}
	r1 := rec(4)
	defer r1.Release()
	add1, err := w.WriteData("part-1.parquet", r1)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := w.Commit(add1); err != nil {
		tb.Fatal(err)
	}
	return &fuzzTable{dir: dir, add: add, meta: meta}
}

func (ft *fuzzTable) logFile(name string) string { return filepath.Join(ft.dir, "_delta_log", name) }

// read reads everything a reader of the table reads: the latest snapshot's
// rows, the change feed from version 0 and the commit infos.
func (ft *fuzzTable) read(t *testing.T) {
	ctx := context.Background()
	tbl, err := delta.Open(ctx, ft.dir, delta.WithBatchSize(2))
	checkErr(t, "open", err)
	if err != nil {
		return
	}
	if s, err := tbl.LatestSnapshot(ctx); err != nil {
		checkErr(t, "snapshot", err)
	} else {
		_, seq, err := s.Scan(ctx, delta.ScanOptions{})
		checkErr(t, "scan", err)
		if err == nil {
			for rec, err := range seq {
				checkErr(t, "scan rows", err)
				if err != nil {
					break
				}
				rec.Release()
			}
		}
	}
	_, seq, err := tbl.Changes(ctx, delta.ChangesOptions{Start: delta.AtVersion(0)})
	checkErr(t, "changes", err)
	if err == nil {
		for rec, err := range seq {
			checkErr(t, "change rows", err)
			if err != nil {
				break
			}
			rec.Release()
		}
	}
	_, err = tbl.Commits(ctx, 0, 2)
	checkErr(t, "commits", err)
}

// FuzzCommit reads a table whose commit file of version 2 is the input.
func FuzzCommit(f *testing.F) {
	ft := newFuzzTable(f)
	for _, s := range []string{
		`{"add":{"path":"part-0.parquet","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true}}`,
		`{"remove":{"path":"part-0.parquet","deletionTimestamp":1,"dataChange":true}}`,
		`{"cdc":{"path":"_change_data/c.parquet","partitionValues":{},"size":1,"dataChange":false}}`,
		`{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}` + "\n" + `{"txn":{"appId":"a","version":3}}`,
		`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[]}","partitionColumns":[],"configuration":{},"createdTime":1}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["columnMapping"],"writerFeatures":[]}}`,
		`{"add":{"path":"../x","partitionValues":{},"size":1,"modificationTime":0,"dataChange":true}}`,
		`{"add":`, "\x00\xff", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(ft.logFile("00000000000000000002.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ft.read(t)
	})
}

// FuzzCheckpoint reads a table whose classic checkpoint of version 1 is the
// input, the commits before it cleaned up.
func FuzzCheckpoint(f *testing.F) {
	ft := newFuzzTable(f)
	w, err := deltatest.NewWriter(filepath.Join(f.TempDir(), "seed"))
	if err != nil {
		f.Fatal(err)
	}
	// A valid checkpoint to start from: the same table's, rewritten.
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	meta, _ := deltatest.Metadata(schema, nil, nil)
	if _, err := w.Commit(delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, meta, ft.add); err != nil {
		f.Fatal(err)
	}
	names, err := w.Checkpoint(deltatest.Classic, 1)
	if err != nil {
		f.Fatal(err)
	}
	seed, err := os.ReadFile(filepath.Join(w.Dir, "_delta_log", names[0]))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	for _, v := range []string{"00000000000000000000.json", "00000000000000000001.json"} {
		if err := os.Remove(ft.logFile(v)); err != nil {
			f.Fatal(err)
		}
	}
	// The newest commit after the checkpoint, so a reader has to combine both.
	if err := os.WriteFile(ft.logFile("00000000000000000002.json"), []byte(`{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}`+"\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(ft.logFile("00000000000000000001.checkpoint.parquet"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		ft.read(t)
	})
}

// FuzzDeletionVector reads a table whose version 2 removes the first file
// and adds it back with the input as its deletion vector descriptor, and
// inline vectors decoded from the input.
func FuzzDeletionVector(f *testing.F) {
	ft := newFuzzTable(f)
	inline, err := deltatest.InlineDeletionVector([]uint64{0, 2})
	if err != nil {
		f.Fatal(err)
	}
	b, _ := json.Marshal(inline)
	f.Add(b)
	f.Add([]byte(`{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":1,"sizeInBytes":36,"cardinality":2}`))
	f.Add([]byte(`{"storageType":"p","pathOrInlineDv":"file:///etc/passwd","offset":1,"sizeInBytes":36,"cardinality":2}`))
	f.Add([]byte(`{"storageType":"i","pathOrInlineDv":"","sizeInBytes":-1,"cardinality":1}`))
	f.Fuzz(func(t *testing.T, descriptor []byte) {
		var dv delta.DeletionVector
		if json.Unmarshal(descriptor, &dv) != nil {
			return // not a descriptor: FuzzCommit covers malformed JSON
		}
		add := ft.add
		add.DeletionVector = &dv
		rm := delta.RemoveFile{Path: ft.add.Path, DataChange: true}
		var buf bytes.Buffer
		for _, a := range []any{map[string]any{"remove": rm}, map[string]any{"add": add}} {
			line, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(line)
			buf.WriteByte('\n')
		}
		if err := os.WriteFile(ft.logFile("00000000000000000002.json"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		ft.read(t)
	})
}

// FuzzZ85: decoding never panics; what decodes re-encodes to the same text
// (Delta-Java form) or to the Rust tail form of the same bytes; any bytes
// encode and decode back.
func FuzzZ85(f *testing.F) {
	for _, s := range []string{"", "HelloWorld", "ab^-aqEH.-t@S}K{vb[*k^", "#####", "##a00", "%%%%%", "\x00\xff\x01\x02\x03"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, n := range []int{len(s) * 4 / 5, len(s)*4/5 - 1, len(s)*4/5 - 3, -1, 0} {
			out, err := delta.DecodeZ85(s, n)
			if err != nil {
				continue
			}
			if len(out) != n {
				t.Fatalf("DecodeZ85(%q, %d) returned %d bytes", s, n, len(out))
			}
			if back, err := delta.DecodeZ85(delta.EncodeZ85(out), n); err != nil || !bytes.Equal(back, out) {
				t.Fatalf("DecodeZ85(%q, %d) = %x does not survive EncodeZ85: %x %v", s, n, out, back, err)
			}
		}
		data := []byte(s)
		enc := delta.EncodeZ85(data)
		back, err := delta.DecodeZ85(enc, len(data))
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("EncodeZ85(%x) = %q decodes to %x, %v", data, enc, back, err)
		}
	})
}

// FuzzSchemaString parses a schemaString and converts it to Arrow; a
// schema that parses converts, and converts again the same way.
func FuzzSchemaString(f *testing.F) {
	f.Add(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}}]}`)
	f.Add(`{"type":"struct","fields":[{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"decimal(10,2)","containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-1"}}]}`)
	f.Add(`{"type":"struct","fields":[{"name":"s","type":{"type":"struct","fields":[{"name":"t","type":"timestamp_ntz","nullable":false,"metadata":{}}]},"nullable":true,"metadata":{}}]}`)
	f.Add(`{"type":"struct","fields":[{"name":"d","type":"decimal(38, 38)","nullable":true,"metadata":{}},{"name":"v","type":"variant","nullable":true,"metadata":{}}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		st, err := delta.ParseSchema(s)
		checkErr(t, "ParseSchema", err)
		if err != nil {
			return
		}
		a, err := delta.ArrowSchema(st)
		checkErr(t, "ArrowSchema", err)
		if err != nil {
			return
		}
		b, err := delta.ArrowSchema(st)
		if err != nil || !a.Equal(b) {
			t.Fatalf("ArrowSchema is not deterministic: %v / %v %v", a, b, err)
		}
	})
}
