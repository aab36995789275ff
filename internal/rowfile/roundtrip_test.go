package rowfile

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// allTypes is a schema with every column type the package supports, nested
// ones included, nullable and required.
const allTypes = `
b boolean
i int
l long not null
f float
d double
dec decimal(38,10)
dec2 decimal(9,2) not null
dt date
tm time
ts timestamp
tz timestamptz
tsn timestamp_ns
tzn timestamptz_ns
s string
s2 string not null
ls large_string
bin binary
lbin large_binary
u uuid
fx fixed[5]
nul unknown
li list<long>
lreq list<string not null>
ll large_list<double>
st struct<a: int, b: string not null, c: list<double>, d: struct<e: date>>
m map<string, int>
mi map<int, string>
ms map<string, struct<x: long, y: list<boolean>>>
`

var (
	minDay = daysFromCivil(1, 1, 1)
	maxDay = daysFromCivil(9999, 12, 31)
)

// randomString mixes the characters that stress CSV and JSON: separators,
// quotes, line breaks, white space at the ends, non-ASCII, text that looks
// like NULL.
func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", ",", "\"", "'", "\n", "\r\n", "\r", " ", "\t", "\\", "é", "漢", "😀",
		"NULL", "null", "", "{", "[", "\u2028", "\x01", "\x7f", "-", "1.5", "true"}
	var sb strings.Builder
	for n := r.IntN(8); n > 0; n-- {
		sb.WriteString(pieces[r.IntN(len(pieces))])
	}
	return sb.String()
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(10) {
	case 0:
		return math.NaN()
	case 1:
		return math.Inf(1 - 2*r.IntN(2))
	case 2:
		return 0
	case 3:
		return math.Float64frombits(r.Uint64()) // any bit pattern
	case 4:
		return float64(r.Int64N(1000)) / 8
	}
	return (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20))
}

// randomDecimal returns an unscaled value with up to prec digits.
func randomDecimal(r *rand.Rand, prec int32) decimal128.Num {
	digits := 1 + r.IntN(int(prec))
	var sb strings.Builder
	if r.IntN(2) == 0 {
		sb.WriteByte('-')
	}
	for range digits {
		sb.WriteByte(byte('0' + r.IntN(10)))
	}
	v, _ := new(big.Int).SetString(sb.String(), 10)
	return decimal128.FromBigInt(v)
}

// appendRandom appends one random value (or NULL when allowed) of type dt.
func appendRandom(r *rand.Rand, b array.Builder, dt arrow.DataType, nullable bool) {
	if dt.ID() == arrow.NULL || (nullable && r.IntN(5) == 0) {
		b.AppendNull()
		return
	}
	switch t := dt.(type) {
	case *extensions.UUIDType:
		b.(*extensions.UUIDBuilder).AppendBytes([16]byte(randomBytes(r, 16)))
	case *arrow.BooleanType:
		b.(*array.BooleanBuilder).Append(r.IntN(2) == 0)
	case *arrow.Int32Type:
		v := int32(r.Uint32())
		if r.IntN(4) == 0 {
			v = []int32{math.MinInt32, math.MaxInt32, 0, -1}[r.IntN(4)]
		}
		b.(*array.Int32Builder).Append(v)
	case *arrow.Int64Type:
		v := int64(r.Uint64())
		if r.IntN(4) == 0 {
			v = []int64{math.MinInt64, math.MaxInt64, 0, -1}[r.IntN(4)]
		}
		b.(*array.Int64Builder).Append(v)
	case *arrow.Float32Type:
		b.(*array.Float32Builder).Append(float32(randomFloat(r)))
	case *arrow.Float64Type:
		b.(*array.Float64Builder).Append(randomFloat(r))
	case *arrow.Decimal128Type:
		v := randomDecimal(r, t.Precision)
		if r.IntN(4) == 0 { // the largest and smallest values of the precision
			m, _ := new(big.Int).SetString(strings.Repeat("9", int(t.Precision)), 10)
			if r.IntN(2) == 0 {
				m.Neg(m)
			}
			v = decimal128.FromBigInt(m)
		}
		b.(*array.Decimal128Builder).Append(v)
	case *arrow.Date32Type:
		v := minDay + r.Int64N(maxDay-minDay+1)
		switch r.IntN(4) {
		case 0: // any day of the type: years before 0 and after 9999
			v = int64(int32(r.Uint32()))
		case 1:
			v = []int64{math.MinInt32, math.MaxInt32, daysFromCivil(0, 1, 1), daysFromCivil(-1, 12, 31),
				daysFromCivil(10000, 1, 1), daysFromCivil(9999, 12, 31), minDay - 1}[r.IntN(7)]
		}
		b.(*array.Date32Builder).Append(arrow.Date32(v))
	case *arrow.Time64Type:
		v := r.Int64N(86400 * 1e6)
		if r.IntN(4) == 0 {
			v = []int64{0, 86400*1e6 - 1}[r.IntN(2)]
		}
		b.(*array.Time64Builder).Append(arrow.Time64(v))
	case *arrow.TimestampType:
		var v int64
		switch {
		case r.IntN(4) == 0: // any instant of the type, the extremes too
			v = []int64{math.MinInt64, math.MaxInt64, r.Int64() - r.Int64(), -1, 0}[r.IntN(5)]
		case t.Unit == arrow.Nanosecond:
			v = r.Int64() - r.Int64() // any int64 is in range for ns
		default:
			v = (minDay+r.Int64N(maxDay-minDay+1))*86400*1e6 + r.Int64N(86400*1e6)
		}
		b.(*array.TimestampBuilder).Append(arrow.Timestamp(v))
	case *arrow.StringType:
		b.(*array.StringBuilder).Append(randomString(r))
	case *arrow.LargeStringType:
		b.(*array.LargeStringBuilder).Append(randomString(r))
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		b.(*array.BinaryBuilder).Append(randomBytes(r, r.IntN(12)))
	case *arrow.FixedSizeBinaryType:
		b.(*array.FixedSizeBinaryBuilder).Append(randomBytes(r, t.ByteWidth))
	case *arrow.ListType, *arrow.LargeListType:
		lb := b.(array.ListLikeBuilder)
		ef := t.(arrow.ListLikeType).ElemField()
		lb.Append(true)
		for n := r.IntN(4); n > 0; n-- {
			appendRandom(r, lb.ValueBuilder(), ef.Type, ef.Nullable)
		}
	case *arrow.MapType:
		mb := b.(*array.MapBuilder)
		mb.Append(true)
		for n := r.IntN(4); n > 0; n-- {
			appendRandom(r, mb.KeyBuilder(), t.KeyType(), false)
			appendRandom(r, mb.ItemBuilder(), t.ItemType(), t.ItemField().Nullable)
		}
	case *arrow.StructType:
		sb := b.(*array.StructBuilder)
		sb.Append(true)
		for k, f := range t.Fields() {
			appendRandom(r, sb.FieldBuilder(k), f.Type, f.Nullable)
		}
	default:
		panic(fmt.Sprintf("appendRandom: %s", dt))
	}
}

func randomBatch(r *rand.Rand, mem memory.Allocator, schema *arrow.Schema, rows int) arrow.RecordBatch {
	rb := array.NewRecordBuilder(mem, schema)
	defer rb.Release()
	for range rows {
		for i, f := range schema.Fields() {
			appendRandom(r, rb.Field(i), f.Type, f.Nullable)
		}
	}
	return rb.NewRecordBatch()
}

// concatColumns concatenates the batches' columns.
func concatColumns(t *testing.T, mem memory.Allocator, schema *arrow.Schema, recs []arrow.RecordBatch) []arrow.Array {
	t.Helper()
	out := make([]arrow.Array, schema.NumFields())
	for i := range out {
		var parts []arrow.Array
		for _, rec := range recs {
			parts = append(parts, rec.Column(i))
		}
		if len(parts) == 0 {
			out[i] = array.MakeArrayOfNull(mem, schema.Field(i).Type, 0)
			continue
		}
		c, err := array.Concatenate(parts, mem)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c
	}
	return out
}

// TestRoundTrip writes random batches of every type (with NULLs) as jsonl,
// json, csv and parquet, reads them back into the same schema and checks
// the values are identical (NaN equal to NaN).
func TestRoundTrip(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	schema := mustSchema(t, allTypes)
	formats := []struct {
		out OutputFormat
		in  Format
	}{{OutputJSONL, FormatJSONL}, {OutputJSON, FormatJSONL}, {OutputCSV, FormatCSV}, {OutputParquet, FormatParquet}}
	for seed := uint64(1); seed <= 24; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		var written []arrow.RecordBatch
		for n := r.IntN(4); n >= 0; n-- {
			written = append(written, randomBatch(r, mem, schema, r.IntN(60)))
		}
		want := concatColumns(t, mem, schema, written)
		for _, f := range formats {
			t.Run(fmt.Sprintf("seed%d/%v", seed, f.out), func(t *testing.T) {
				var buf bytes.Buffer
				w, err := NewWriter(&buf, f.out, schema, WithRowGroupRows(int64(1+r.IntN(50))))
				if err != nil {
					t.Fatal(err)
				}
				for _, rec := range written {
					if err := w.Write(rec); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				rd, err := NewReader(context.Background(), bytes.NewReader(buf.Bytes()), "rt",
					ReadOptions{Target: schema, Format: f.in, BatchSize: 1 + r.IntN(40), Allocator: mem})
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				var got []arrow.RecordBatch
				for rec, err := range rd.All() {
					if err != nil {
						t.Fatalf("reading back: %v\n%s", err, clipOutput(buf.String()))
					}
					if !rec.Schema().Equal(schema) {
						t.Fatalf("schema %s, want %s", rec.Schema(), schema)
					}
					got = append(got, rec)
				}
				cols := concatColumns(t, mem, schema, got)
				for _, rec := range got {
					rec.Release()
				}
				for i := range cols {
					if !array.ApproxEqual(want[i], cols[i], array.WithNaNsEqual(true), array.WithAbsTolerance(0)) {
						t.Errorf("column %s differs\nwrote %v\nread  %v", schema.Field(i).Name, want[i], cols[i])
					}
					cols[i].Release()
				}
			})
		}
		for _, a := range want {
			a.Release()
		}
		for _, rec := range written {
			rec.Release()
		}
	}
}

func clipOutput(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "..."
	}
	return s
}
