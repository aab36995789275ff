package rowfile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The fuzz targets of this file feed arbitrary JSON Lines and CSV files to
// the readers, with a target schema of every supported type. Each asserts
// that nothing panics, that every error wraps one of the package's sentinel
// errors, and that what reads writes back (in the same format) to a file
// that reads to the same values (parse(format(x)) == x). Run one with
//
//	go test ./internal/rowfile -run '^$' -fuzz '^FuzzJSONLines$' -fuzztime 1m
//
// Seeds: the corpora under testdata/fuzz/<target>/ and the inputs of the
// datadriven scripts in testdata.

var rowfileSentinels = []error{ErrFormat, ErrOptions, ErrUnknownColumn, ErrMissingColumn, ErrDuplicateColumn,
	ErrIncompatibleType, ErrUnsupportedType, ErrMalformed, ErrValue, ErrSchema}

func checkRowfileErr(t *testing.T, what string, err error) {
	t.Helper()
	for _, s := range rowfileSentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error wraps no sentinel: %v", what, err)
}

// fuzzSchemaText is allTypes but for the columns JSON and CSV cannot tell
// apart from others on the way back (large types write as their plain ones).
const fuzzSchemaText = `
b boolean
i int
l long
f float
d double
dec decimal(38,10)
dt date
tm time
ts timestamp
tz timestamptz
tzn timestamptz_ns
s string
bin binary
u uuid
fx fixed[3]
li list<long>
st struct<a: int, b: string not null, c: list<double>>
m map<string, int>
mi map<int, string>
`

// readAll reads data in format f into the schema, concatenated by column.
func readAll(t *testing.T, data []byte, f Format, schema *arrow.Schema, mem memory.Allocator) ([]arrow.Array, error) {
	rd, err := NewReader(context.Background(), bytes.NewReader(data), "fuzz", ReadOptions{Target: schema, Format: f, BatchSize: 3, Allocator: mem, IgnoreUnknown: true})
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var recs []arrow.RecordBatch
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for rec, err := range rd.All() {
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return concatColumns(t, mem, schema, recs), nil
}

func fuzzRoundTrip(t *testing.T, data []byte, in Format, out OutputFormat) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := mustSchema(t, fuzzSchemaText)
	cols, err := readAll(t, data, in, schema, mem)
	if err != nil {
		checkRowfileErr(t, "read", err)
		return
	}
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	n := int64(0)
	if len(cols) > 0 {
		n = int64(cols[0].Len())
	}
	rec := array.NewRecordBatch(schema, cols, n)
	defer rec.Release()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, out, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatalf("writing what was read: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := readAll(t, buf.Bytes(), in, schema, mem)
	if err != nil {
		t.Fatalf("reading back what was written: %v\n%s", err, clipOutput(buf.String()))
	}
	for i := range back {
		if !array.ApproxEqual(cols[i], back[i], array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
			t.Errorf("column %s differs\nread    %v\nwritten %s\nre-read %v", schema.Field(i).Name, cols[i], clipOutput(buf.String()), back[i])
		}
		back[i].Release()
	}
}

// seedInputs adds the inputs of the datadriven scripts in testdata that
// read a file named with extension ext (the lines between the command and
// "----").
func seedInputs(f *testing.F, ext string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			name, _, _ := strings.Cut(strings.TrimPrefix(lines[i], "read name="), " ")
			if !strings.HasPrefix(lines[i], "read name=") || !strings.HasSuffix(name, ext) {
				continue
			}
			var input []string
			for i++; i < len(lines) && lines[i] != "----"; i++ {
				input = append(input, lines[i])
			}
			f.Add([]byte(strings.Join(input, "\n") + "\n"))
		}
	}
}

// FuzzJSONLines reads JSON Lines files.
func FuzzJSONLines(f *testing.F) {
	seedInputs(f, ".jsonl")
	f.Add([]byte(`{"b": true, "i": -2147483648, "l": 9223372036854775807, "f": 1e38, "d": "NaN", "dec": "-1.5", "dt": "+10000-01-01", "tm": "23:59:59.999999", "ts": "-0001-12-31T00:00:00", "tz": "2024-01-01T00:00:00+14:00", "tzn": "1677-09-21T00:12:43.145224192Z", "s": "\u2028", "bin": "AAE=", "u": "0f8fad5b-d9cb-469f-a165-70867728950e", "fx": "AQID", "li": [1, null], "st": {"a": 1, "b": "", "c": [1.5, "Infinity"]}, "m": {"k": 1}, "mi": [{"key": 1, "value": "v"}]}` + "\n"))
	f.Add([]byte("{}\n{\"s\": null}\n\n"))
	f.Add([]byte(`[{"l": 1}, {"l": 2}]`))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRoundTrip(t, data, FormatJSONL, OutputJSONL) })
}

// FuzzCSV reads CSV files (their cells converted to every type).
func FuzzCSV(f *testing.F) {
	seedInputs(f, ".csv")
	f.Add([]byte("b,i,l,f,d,dec,dt,tm,ts,tz,tzn,s,bin,u,fx,li,st,m,mi\n" +
		`true,-2147483648,9223372036854775807,1e38,NaN,-1.5,+10000-01-01,23:59:59.999999,-0001-12-31T00:00:00,2024-01-01 00:00:00+14:00,1677-09-21T00:12:43.145224192Z,"a,""b""",AAE=,0f8fad5b-d9cb-469f-a165-70867728950e,AQID,"[1,null]","{""a"":1,""b"":""""}","{""k"":1}","[{""key"":1,""value"":""v""}]"` + "\n"))
	f.Add([]byte("s,l\n\"multi\nline\",1\n,\n\"\",2\n"))
	f.Add([]byte("\ufeffl\r\n1\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRoundTrip(t, data, FormatCSV, OutputCSV) })
}

// TestDamagedParquetFooter: a Parquet file whose footer gives a column
// chunk a length outside the file (found by delta's FuzzCheckpoint) is
// ErrMalformed; arrow-go's decoder panicked on it in its own goroutines,
// which crashed the process.
func TestDamagedParquetFooter(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "delta", "testdata", "fuzz", "FuzzCheckpoint", "regression-parquet-chunk-length-out-of-range"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	text, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	// Every column of the file, as the file declares them.
	pf, err := file.NewParquetReader(bytes.NewReader([]byte(text)))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := fr.Schema()
	if err != nil {
		t.Fatal(err)
	}
	pf.Close()
	rd, err := NewReader(context.Background(), bytes.NewReader([]byte(text)), "damaged.parquet", ReadOptions{Target: schema, Format: FormatParquet, IgnoreUnknown: true})
	if err == nil {
		for _, err = range rd.All() {
			if err != nil {
				break
			}
		}
		rd.Close()
	}
	if !errors.Is(err, ErrMalformed) {
		t.Fatalf("got %v, want %v", err, ErrMalformed)
	}
}
