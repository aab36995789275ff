//go:build interop

package interop_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

func TestMain(m *testing.M) { os.Exit(interop.Main(m)) }

// testCtx bounds one test's engine calls.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// envInt reads a sizing knob from the environment.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// seededRand returns the random source of a randomised check: FLOE_INTEROP_SEED
// when set, else a fixed seed, so a failure reproduces from the logged seed.
func seededRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(envInt(t, "FLOE_INTEROP_SEED", 20261130))
	t.Logf("random seed %d (set FLOE_INTEROP_SEED to vary)", seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// genColumn is one column of a randomly generated table: its Iceberg field and
// a generator returning the value to append (nil for NULL) and the value floe's
// JSON conventions expect for it, computed independently of package rowjson's
// Arrow conversion.
type genColumn struct {
	field iceberg.NestedField
	gen   func(r *rand.Rand) (val any, want any)
}

const microsPerDay = 86400 * 1_000_000

// allTypesColumns covers the primitive types every engine maps the same way.
func allTypesColumns() []genColumn {
	nullable := func(p float64, g func(*rand.Rand) (any, any)) func(*rand.Rand) (any, any) {
		return func(r *rand.Rand) (any, any) {
			if r.Float64() < p {
				return nil, nil
			}
			return g(r)
		}
	}
	minTS := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxTS := time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	edgeTS := []int64{0, -1, 1, 951782400000000 /* 2000-02-29 */}
	ts := func(r *rand.Rand) int64 {
		if r.IntN(8) == 0 {
			return edgeTS[r.IntN(len(edgeTS))]
		}
		return minTS + r.Int64N(maxTS-minTS)
	}
	id := int64(0)
	return []genColumn{
		{iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
			func(r *rand.Rand) (any, any) {
				id++
				v := id*1_000_003 - 500_000_000 // negative and positive ids
				return v, json.Number(strconv.FormatInt(v, 10))
			}},
		{iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
			nullable(0.1, func(r *rand.Rand) (any, any) { s := randString(r); return s, s })},
		{iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(18, 4)},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				u := r.Int64N(2_000_000_000_000_000) - 1_000_000_000_000_000
				return u, decimalString(u, 4)
			})},
		{iceberg.NestedField{ID: 4, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.MaxFloat64, math.SmallestNonzeroFloat64}
				f := (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(20)-10))
				if r.IntN(10) == 0 {
					f = specials[r.IntN(len(specials))]
				}
				return f, floatWant(f)
			})},
		{iceberg.NestedField{ID: 5, Name: "ratio", Type: iceberg.PrimitiveTypes.Float32},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				f := float32((r.Float64() - 0.5) * 1000)
				return f, floatWant(float64(f))
			})},
		{iceberg.NestedField{ID: 6, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
			nullable(0.1, func(r *rand.Rand) (any, any) { b := r.IntN(2) == 1; return b, b })},
		{iceberg.NestedField{ID: 7, Name: "day", Type: iceberg.PrimitiveTypes.Date},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				d := int32(ts(r) / microsPerDay)
				return d, time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
			})},
		{iceberg.NestedField{ID: 8, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				v := ts(r)
				return v, time.UnixMicro(v).UTC().Format("2006-01-02T15:04:05.000000") + "Z"
			})},
		{iceberg.NestedField{ID: 9, Name: "local_at", Type: iceberg.PrimitiveTypes.Timestamp},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				v := ts(r)
				return v, time.UnixMicro(v).UTC().Format("2006-01-02T15:04:05.000000")
			})},
		{iceberg.NestedField{ID: 10, Name: "payload", Type: iceberg.PrimitiveTypes.Binary},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				b := make([]byte, r.IntN(12))
				for i := range b {
					b[i] = byte(r.IntN(256))
				}
				return b, base64.StdEncoding.EncodeToString(b)
			})},
		{iceberg.NestedField{ID: 11, Name: "small", Type: iceberg.PrimitiveTypes.Int32},
			nullable(0.1, func(r *rand.Rand) (any, any) {
				v := int32(r.Uint32())
				return v, json.Number(strconv.FormatInt(int64(v), 10))
			})},
	}
}

func randString(r *rand.Rand) string {
	pieces := []string{"", "a", "Z", " ", "'", `"`, `\`, "\n", "\t", "é", "ß", "中文", "\U0001F600", "<&>", ",", "NULL", "null"}
	var b strings.Builder
	for n := r.IntN(6); n > 0; n-- {
		if r.IntN(3) == 0 {
			b.WriteString(pieces[r.IntN(len(pieces))])
		} else {
			b.WriteByte(byte('a' + r.IntN(26)))
		}
	}
	if !utf8.ValidString(b.String()) {
		panic("generated invalid UTF-8")
	}
	return b.String()
}

// decimalString spells unscaled*10^-scale in plain notation with all scale digits.
func decimalString(unscaled int64, scale int) string {
	r := new(big.Rat).SetFrac(big.NewInt(unscaled), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	return r.FloatString(scale)
}

func floatWant(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
}

// generated is a batch of generated rows: Arrow values per column and the rows
// floe's conventions expect.
type generated struct {
	cols []genColumn
	vals [][]any // [row][col]
	want *rowjson.Table
}

func generate(r *rand.Rand, cols []genColumn, n int) *generated {
	g := &generated{cols: cols, want: &rowjson.Table{}}
	for _, c := range cols {
		g.want.Columns = append(g.want.Columns, rowjson.Column{Name: c.field.Name})
	}
	for i := 0; i < n; i++ {
		vals := make([]any, len(cols))
		want := make([]any, len(cols))
		for j, c := range cols {
			vals[j], want[j] = c.gen(r)
		}
		g.vals = append(g.vals, vals)
		g.want.Rows = append(g.want.Rows, want)
	}
	return g
}

func (g *generated) schema() *iceberg.Schema {
	fields := make([]iceberg.NestedField, len(g.cols))
	for i, c := range g.cols {
		fields[i] = c.field
	}
	return iceberg.NewSchemaWithIdentifiers(0, []int{1}, fields...)
}

// record builds rows [lo, hi) as one Arrow batch of schema sc.
func (g *generated) record(t *testing.T, mem memory.Allocator, sc *arrow.Schema, lo, hi int) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(mem, sc)
	defer b.Release()
	for i := lo; i < hi; i++ {
		for j := range g.cols {
			v := g.vals[i][j]
			fb := b.Field(j)
			if v == nil {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.Int64Builder:
				fb.Append(v.(int64))
			case *array.Int32Builder:
				fb.Append(v.(int32))
			case *array.StringBuilder:
				fb.Append(v.(string))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(v.(int64)))
			case *array.Float64Builder:
				fb.Append(v.(float64))
			case *array.Float32Builder:
				fb.Append(v.(float32))
			case *array.BooleanBuilder:
				fb.Append(v.(bool))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v.(int32)))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(v.(int64)))
			case *array.BinaryBuilder:
				fb.Append(v.([]byte))
			default:
				t.Fatalf("no generator for builder %T (column %s)", fb, g.cols[j].field.Name)
			}
		}
	}
	return b.NewRecordBatch()
}

// appendRows appends rows [lo, hi) to tbl as one snapshot and returns the new table.
func (g *generated) appendRows(ctx context.Context, t *testing.T, tbl *table.Table, lo, hi int) *table.Table {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := g.record(t, mem, sc, lo, hi)
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	out, err := tbl.Append(ctx, rdr, nil)
	rdr.Release()
	if err != nil {
		t.Fatalf("iceberg-go append of rows [%d,%d): %v", lo, hi, err)
	}
	mem.AssertSize(t, 0)
	return out
}

// icebergGoRows reads the current snapshot of tbl with iceberg-go's scan.
func icebergGoRows(ctx context.Context, t *testing.T, tbl *table.Table) *rowjson.Table {
	t.Helper()
	sc, batches, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatalf("iceberg-go scan: %v", err)
	}
	rows, err := rowjson.FromArrow(sc, batches)
	if err != nil {
		t.Fatalf("iceberg-go scan: %v", err)
	}
	return rows
}

// requireSame fails t when got differs from want as a multiset of rows.
func requireSame(t *testing.T, what string, want, got *rowjson.Table) {
	t.Helper()
	if d := rowjson.Diff(want, got); d != "" {
		t.Fatalf("%s differs:\n%s", what, d)
	}
}

// column returns the values of column name, failing t when it is absent.
func column(t *testing.T, tbl *rowjson.Table, name string) []any {
	t.Helper()
	sel, err := tbl.Select(name)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(sel.Rows))
	for i, r := range sel.Rows {
		out[i] = r[0]
	}
	return out
}

// mustSelect projects tbl to names, failing t when a column is absent.
func mustSelect(t *testing.T, tbl *rowjson.Table, names ...string) *rowjson.Table {
	t.Helper()
	sel, err := tbl.Select(names...)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// rowsOf builds an expected table from column names and rows written as JSON
// (one JSON array per row), keeping numbers exact.
func rowsOf(t *testing.T, names []string, rows ...string) *rowjson.Table {
	t.Helper()
	var cols []string
	for _, n := range names {
		cols = append(cols, fmt.Sprintf(`{"name":%q}`, n))
	}
	doc := fmt.Sprintf(`{"columns":[%s],"rows":[%s]}`, strings.Join(cols, ","), strings.Join(rows, ","))
	tbl, err := rowjson.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("bad expected rows: %v\n%s", err, doc)
	}
	return tbl
}

// sourceIDs yields n distinct ids for a merge source, drawn lazily from r
// (so the caller's own draws between ids keep their place in the stream):
// two times in three an existing id below *next, else a fresh one, which
// advances *next.
func sourceIDs(r *rand.Rand, next *int, n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		seen := map[int]bool{}
		for len(seen) < n {
			id := r.IntN(max(*next, 1))
			if r.IntN(3) == 0 {
				id = *next
				*next++
			}
			if seen[id] {
				continue
			}
			seen[id] = true
			if !yield(id) {
				return
			}
		}
	}
}
