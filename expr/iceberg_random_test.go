package expr

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/hadoop"
	"github.com/apache/iceberg-go/table"
)

// pruneSchema is the Iceberg schema of the pruning tests.
var pruneSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 2, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 3, Name: "d", Type: iceberg.DecimalTypeOf(9, 2)},
	iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "g", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 6, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 7, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 8, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 9, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
	iceberg.NestedField{ID: 10, Name: "ntz", Type: iceberg.PrimitiveTypes.Timestamp},
)

// rowSchema adds a nanosecond timestamp (Iceberg v3) for the row-level test.
var rowSchema = iceberg.NewSchema(0, append(pruneSchema.Fields(),
	iceberg.NestedField{ID: 11, Name: "tns", Type: iceberg.PrimitiveTypes.TimestampNs})...)

// pruneRows draws rows around a per-file centre so that files have
// different min/max statistics; NULLs, NaN and -0.0 included.
func pruneRows(r *rand.Rand, mem memory.Allocator, schema *arrow.Schema, n int) arrow.RecordBatch {
	centre := r.IntN(100) - 50
	day := int64(19723 + r.IntN(6)) // 2024-01-01 .. 2024-01-06
	letters := "abcé"
	first := string([]rune(letters)[r.IntN(4)])
	bs := make([]array.Builder, schema.NumFields())
	for i, f := range schema.Fields() {
		bs[i] = array.NewBuilder(mem, f.Type)
	}
	null := func() bool { return r.IntN(8) == 0 }
	for k := 0; k < n; k++ {
		v := int64(centre + r.IntN(11) - 5)
		vals := []any{
			v,
			v * 3,
			decimal128.FromI64(v*100 + int64(r.IntN(200)-100)),
			float64(v) + float64(r.IntN(4))/4,
			float64(float32(float64(v) / 10)),
			first + string([]rune(letters)[r.IntN(4)]) + strings.Repeat("z", r.IntN(2)),
			r.IntN(2) == 0,
			day + int64(r.IntN(2)),
			(day+int64(r.IntN(2)))*microsPerDay + int64(r.IntN(4))*microsPerDay/4 + int64(r.IntN(3)-1),
			day*microsPerDay + int64(r.IntN(3)-1)*microsPerDay/2,
			(day*microsPerDay+int64(r.IntN(3)-1)*microsPerDay/4)*1000 + int64(r.IntN(3)-1),
		}
		switch r.IntN(10) {
		case 0:
			vals[3] = math.NaN()
		case 1:
			vals[4] = math.Copysign(0, -1)
		case 2:
			vals[4] = math.NaN()
		}
		for i, b := range bs {
			if null() {
				b.AppendNull()
			} else {
				appendValue(b, vals[i])
			}
		}
	}
	cols := make([]arrow.Array, len(bs))
	for i, b := range bs {
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(schema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// predGen writes random predicates over pruneSchema (and tns with ns set),
// mixing parts Iceberg can express with parts it cannot.
type predGen struct {
	r  *rand.Rand
	ns bool
}

func (g *predGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *predGen) literal(col string) string {
	switch col {
	case "i", "l":
		return g.pick("-60", "-47", "-5", "0", "3", "7", "12", "42", "55", "2.5", "-7.5", "3000000000", "-3000000000", "1e1", "7.0", "42L", "'7'", "100.25", "-45.5")
	case "d":
		return g.pick("1.25", "-3.5", "12.345", "0", "100", "99999999", "1e2", "-4500", "3.999", "'25.5'", "-0.01")
	case "f", "g":
		return g.pick("0", "1.5", "0.1", "-0.3", "1e300", "-2.25", "7", "-45", "4.5", "CAST('NaN' AS DOUBLE)", "2.5F", "-1e-300", "0.5")
	case "s":
		return g.pick("'a'", "'b'", "'ab'", "'abc'", "'c'", "''", "'é'", "'bz'", "'cé'")
	case "dt":
		return g.pick("DATE '2024-01-02'", "'2024-01-04'", "TIMESTAMP '2024-01-03 12:00:00'", "DATE '2023-12-31'", "TIMESTAMP '2024-01-05 00:00:00'")
	}
	return g.pick("TIMESTAMP '2024-01-02 06:00:00'", "TIMESTAMP '2024-01-03 06:00:00.000001'", "DATE '2024-01-03'", "'2024-01-04'", "TIMESTAMP_NTZ '2024-01-05 00:00:00.000001'",
		"TIMESTAMP '2024-01-02 23:59:59.999999+01:00'", "TIMESTAMP '2024-01-06 12:00:00'")
}

func (g *predGen) leaf() string {
	cols := []string{"i", "l", "d", "f", "g", "s", "dt", "ts", "ntz"}
	if g.ns {
		cols = append(cols, "tns")
	}
	col := cols[g.r.IntN(len(cols))]
	op := g.pick("=", "<>", "<", "<=", ">", ">=")
	switch g.r.IntN(15) {
	case 0, 1, 2, 3:
		return fmt.Sprintf("%s %s %s", col, op, g.literal(col))
	case 4:
		return fmt.Sprintf("%s %s %s", g.literal(col), op, col)
	case 5:
		items := []string{g.literal(col), g.literal(col)}
		if g.r.IntN(4) == 0 {
			items = append(items, "NULL")
		}
		return fmt.Sprintf("%s %sIN (%s)", col, g.pick("", "NOT "), strings.Join(items, ", "))
	case 6:
		return fmt.Sprintf("%s %sBETWEEN %s AND %s", col, g.pick("", "NOT "), g.literal(col), g.literal(col))
	case 7:
		return fmt.Sprintf("s %sLIKE %s", g.pick("", "NOT "), g.pick("'a%'", "'ab%'", "'b_'", "'%z'", "'abz'", "'%'", "'é%'", "'c%'"))
	case 8:
		return fmt.Sprintf("%s IS %sNULL", col, g.pick("", "NOT "))
	case 9:
		return g.pick("b", "NOT b", "b = TRUE", "b <> FALSE", "b IS NOT TRUE", "b IS FALSE")
	case 10:
		return g.pick("i + 1 > 5", "l = i", "LOWER(s) = 'ab'", "CASE WHEN i > 0 THEN TRUE ELSE FALSE END",
			"COALESCE(i, 0) > 3", "l <=> 15", "s LIKE 'a%z'", "ABS(f) < 2", "d * 2 > 10", "CAST(l AS STRING) = '9'")
	case 11:
		return fmt.Sprintf("(%s %s %s) IS %s%s", col, op, g.literal(col), g.pick("", "NOT "), g.pick("TRUE", "FALSE"))
	case 12:
		return fmt.Sprintf("%s %s %s", g.pick("1", "NULL", "2"), op, g.pick("1", "NULL"))
	case 13:
		return g.pick("CAST(d AS DECIMAL(5,1)) "+op+" "+g.literal("d"), "CAST(f AS FLOAT) "+op+" "+g.literal("f"),
			"CAST(ts AS DATE) "+op+" "+g.literal("dt"), "CAST(l AS DOUBLE) "+op+" "+g.literal("l"),
			"CAST(i AS BIGINT) "+op+" "+g.literal("i"), "CAST(dt AS TIMESTAMP) "+op+" "+g.literal("ts"),
			"CAST(g AS DOUBLE) "+op+" "+g.literal("g"), "CAST(l AS INT) "+op+" "+g.literal("l"))
	}
	return fmt.Sprintf("%s %s %s", col, op, g.literal(col))
}

func (g *predGen) pred(d int) string {
	if d <= 0 || g.r.IntN(3) == 0 {
		return g.leaf()
	}
	switch g.r.IntN(3) {
	case 0:
		return fmt.Sprintf("(%s AND %s)", g.pred(d-1), g.pred(d-1))
	case 1:
		return fmt.Sprintf("(%s OR %s)", g.pred(d-1), g.pred(d-1))
	}
	return fmt.Sprintf("NOT (%s)", g.pred(d-1))
}

// icebergRow adapts one row of a batch to iceberg.StructLike.
type icebergRow []any

func (r icebergRow) Size() int          { return len(r) }
func (r icebergRow) Get(pos int) any    { return r[pos] }
func (r icebergRow) Set(pos int, v any) { r[pos] = v }

func toIcebergRow(rec arrow.RecordBatch, row int, sc *iceberg.Schema) icebergRow {
	out := make(icebergRow, rec.NumCols())
	for c := range out {
		v := getter(rec.Column(c))(row)
		if v == nil {
			continue
		}
		switch t := sc.Field(c).Type.(type) {
		case iceberg.Int32Type:
			out[c] = int32(v.(int64))
		case iceberg.Float32Type:
			out[c] = float32(v.(float64))
		case iceberg.DecimalType:
			out[c] = iceberg.Decimal{Val: v.(decimal128.Num), Scale: t.Scale()}
		case iceberg.DateType:
			out[c] = iceberg.Date(v.(int64))
		case iceberg.TimestampType, iceberg.TimestampTzType:
			out[c] = iceberg.Timestamp(v.(int64))
		case iceberg.TimestampNsType:
			out[c] = iceberg.TimestampNano(v.(int64))
		default:
			out[c] = v
		}
	}
	return out
}

// TestIcebergRowsConservative evaluates random predicates on random rows
// both as SQL and, after ToIceberg, with iceberg-go's row evaluator: a row
// the SQL predicate accepts must be accepted by the Iceberg expression, and
// when ToIceberg says exact, the two must agree on every row.
func TestIcebergRowsConservative(t *testing.T) {
	r := rand.New(rand.NewPCG(*seedFlag, 0x1ceb))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	schema := icebergArrowSchema(rowSchema)
	g := &predGen{r: r, ns: true}
	var exactCount, accepted, widened int
	for it := 0; it < *itersFlag; it++ {
		src := g.pred(1 + r.IntN(3))
		e, err := Parse(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		prog, err := Compile(e, schema, WithAllocator(mem))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		ice, exact, err := ToIceberg(e, rowSchema)
		if err != nil {
			t.Fatalf("ToIceberg(%s): %v", src, err)
		}
		eval, err := iceberg.ExpressionEvaluator(rowSchema, ice, true)
		if err != nil {
			t.Fatalf("%s: iceberg-go cannot bind %s: %v", src, ice, err)
		}
		if exact {
			exactCount++
		}
		rec := pruneRows(r, mem, schema, 40)
		mask, err := prog.Mask(ctx, rec)
		if err != nil {
			rec.Release()
			continue // e.g. a cast that fails on these rows
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			ok, err := eval(toIcebergRow(rec, i, rowSchema))
			if err != nil {
				t.Fatalf("%s: iceberg evaluation: %v", src, err)
			}
			sqlTrue := mask.Value(i)
			if sqlTrue && !ok {
				t.Fatalf("seed %d: NOT CONSERVATIVE: %s is TRUE but %s rejects row %s", *seedFlag, src, ice, rowString(rec, i))
			}
			if exact && ok != sqlTrue {
				t.Fatalf("seed %d: NOT EXACT: %s is %v but %s (exact) says %v on row %s", *seedFlag, src, sqlTrue, ice, ok, rowString(rec, i))
			}
			if sqlTrue {
				accepted++
			} else if ok {
				widened++
			}
		}
		mask.Release()
		rec.Release()
	}
	t.Logf("%d predicates, %d exact; rows: %d accepted by both, %d only by the widened Iceberg expression", *itersFlag, exactCount, accepted, widened)
	if exactCount == 0 || accepted == 0 {
		t.Fatal("the random predicates exercised nothing")
	}
}

// TestIcebergPruningConservative writes real tables (unpartitioned and
// partitioned) with many small files and checks, for random predicates,
// that iceberg-go's planning with the ToIceberg filter (partition,
// manifest and metrics evaluators) keeps every file holding a row the SQL
// predicate accepts.
func TestIcebergPruningConservative(t *testing.T) {
	if testing.Short() {
		t.Skip("writes Iceberg tables")
	}
	ctx := context.Background()
	r := rand.New(rand.NewPCG(*seedFlag, 0xf11e))
	cat, err := hadoop.NewCatalog("prune", t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	specs := map[string]iceberg.PartitionSpec{
		"unpartitioned": *iceberg.UnpartitionedSpec,
		"identity_s":    iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{6}, FieldID: 1000, Name: "s", Transform: iceberg.IdentityTransform{}}),
		"day_ts_bucket_l": iceberg.NewPartitionSpec(
			iceberg.PartitionField{SourceIDs: []int{9}, FieldID: 1000, Name: "ts_day", Transform: iceberg.DayTransform{}},
			iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "l_bucket", Transform: iceberg.BucketTransform{NumBuckets: 4}}),
		"truncate_i_identity_dt": iceberg.NewPartitionSpec(
			iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "i_trunc", Transform: iceberg.TruncateTransform{Width: 10}},
			iceberg.PartitionField{SourceIDs: []int{8}, FieldID: 1001, Name: "dt", Transform: iceberg.IdentityTransform{}}),
	}
	preds := *itersFlag / 30
	for _, name := range slices.Sorted(maps.Keys(specs)) {
		spec := specs[name]
		t.Run(name, func(t *testing.T) {
			tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", name}, pruneSchema, catalog.WithPartitionSpec(&spec))
			if err != nil {
				t.Fatal(err)
			}
			schema, err := table.SchemaToArrowSchema(pruneSchema, nil, false, false)
			if err != nil {
				t.Fatal(err)
			}
			for f := 0; f < 12; f++ {
				rec := pruneRows(r, memory.DefaultAllocator, schema, 30)
				at := array.NewTableFromRecords(schema, []arrow.RecordBatch{rec})
				rec.Release()
				tbl, err = tbl.AppendTable(ctx, at, 1<<20, nil)
				at.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			files := readDataFiles(t, ctx, tbl)
			g := &predGen{r: r}
			var checked, pruned, mustKeep int
			for k := 0; k < preds; k++ {
				src := g.pred(1 + r.IntN(3))
				e, err := Parse(src)
				if err != nil {
					t.Fatal(err)
				}
				ice, _, err := ToIceberg(e, pruneSchema)
				if err != nil {
					t.Fatalf("ToIceberg(%s): %v", src, err)
				}
				tasks, err := tbl.Scan(table.WithRowFilter(ice)).PlanFiles(ctx)
				if err != nil {
					t.Fatalf("%s: PlanFiles with %s: %v", src, ice, err)
				}
				kept := map[string]bool{}
				for _, task := range tasks {
					kept[task.File.FilePath()] = true
				}
				var prog *Program
				for path, rec := range files {
					if prog == nil {
						if prog, err = Compile(e, rec.Schema()); err != nil {
							t.Fatalf("%s: %v", src, err)
						}
					}
					mask, err := prog.Mask(ctx, rec)
					if err != nil {
						continue
					}
					hit := -1
					for i := 0; i < mask.Len() && hit < 0; i++ {
						if mask.Value(i) {
							hit = i
						}
					}
					mask.Release()
					checked++
					if hit >= 0 {
						mustKeep++
					}
					if !kept[path] {
						pruned++
						if hit >= 0 {
							t.Fatalf("seed %d: NOT CONSERVATIVE: %s (as %s) pruned a file with the matching row %s", *seedFlag, src, ice, rowString(rec, hit))
						}
					}
				}
			}
			t.Logf("%d data files, %d predicate×file checks: %d files had a match, %d files pruned", len(files), checked, mustKeep, pruned)
			if pruned == 0 {
				t.Fatal("no file was ever pruned: the test has no teeth")
			}
		})
	}
}

// readDataFiles reads every data file of the table's current snapshot.
func readDataFiles(t *testing.T, ctx context.Context, tbl *table.Table) map[string]arrow.RecordBatch {
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]arrow.RecordBatch{}
	for _, task := range tasks {
		path := strings.TrimPrefix(task.File.FilePath(), "file://")
		rdr, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		at, err := fr.ReadTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tr := array.NewTableReader(at, at.NumRows())
		tr.Next()
		rec := tr.RecordBatch()
		rec.Retain()
		tr.Release()
		at.Release()
		rdr.Close()
		t.Cleanup(rec.Release)
		out[task.File.FilePath()] = rec
	}
	return out
}
