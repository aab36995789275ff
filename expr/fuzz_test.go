package expr_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/expr"
)

// The fuzz targets of this file feed arbitrary text to the parsers. Each
// asserts that nothing panics, that every error wraps one of the package's
// sentinel errors, and that what parses prints back to text that parses to
// the same print (parse(format(x)) == x). Expressions that parse are also
// compiled against a schema with columns of many types, evaluated on a few
// rows and converted to Iceberg filters. Run one with
//
//	go test ./expr -run '^$' -fuzz '^FuzzParse$' -fuzztime 1m
//
// Seeds: the corpora under testdata/fuzz/<target>/ and every input of the
// datadriven scripts in testdata.

var exprSentinels = []error{expr.ErrSyntax, expr.ErrUnknownColumn, expr.ErrAmbiguousColumn, expr.ErrType,
	expr.ErrUnsupported, expr.ErrDivideByZero, expr.ErrOverflow, expr.ErrInvalidCast, expr.ErrSchemaMismatch, expr.ErrInvalidArgument}

func checkExprErr(t *testing.T, what, src string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range exprSentinels {
		if errors.Is(err, s) {
			// Carets render for any position the error carries.
			_ = expr.FormatError(src, err)
			return
		}
	}
	t.Fatalf("%s %q: error wraps no sentinel: %v", what, src, err)
}

// seedScripts adds the inputs of the datadriven scripts in testdata whose
// command is one of cmds (the lines between the command and "----").
func seedScripts(f *testing.F, cmds ...string) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		lines := strings.Split(string(data), "\n")
		for i := 0; i < len(lines); i++ {
			cmd, _, _ := strings.Cut(lines[i], " ")
			if !slices.Contains(cmds, cmd) {
				continue
			}
			var input []string
			for i++; i < len(lines) && lines[i] != "----"; i++ {
				input = append(input, lines[i])
			}
			f.Add(strings.Join(input, "\n"))
		}
	}
}

var fuzzSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
}, nil)

var fuzzIceberg = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
	iceberg.NestedField{ID: 3, Name: "s", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 4, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
	iceberg.NestedField{ID: 5, Name: "dec", Type: iceberg.DecimalTypeOf(10, 2)},
	iceberg.NestedField{ID: 6, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 7, Name: "dt", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 8, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
)

// fuzzBatch holds a few rows of fuzzSchema: ordinary values, extremes and NULLs.
func fuzzBatch() arrow.RecordBatch {
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, fuzzSchema, strings.NewReader(`[
		{"id": 1, "i": 2, "s": "a", "d": 1.5, "dec": "12.50", "b": true, "dt": "2024-01-31", "ts": "2024-01-31T10:00:00Z", "st": {"x": 1}},
		{"id": 9223372036854775807, "i": -2147483648, "s": "", "d": -0.0, "dec": "-99999999.99", "b": false, "dt": "1970-01-01", "ts": "1970-01-01T00:00:00Z", "st": {"x": null}},
		{"id": null, "i": null, "s": null, "d": null, "dec": null, "b": null, "dt": null, "ts": null, "st": null}
	]`))
	if err != nil {
		panic(err)
	}
	return rec
}

// FuzzParse parses, prints, re-parses, compiles, evaluates and converts
// expressions.
func FuzzParse(f *testing.F) {
	seedScripts(f, "parse", "eval", "iceberg", "compile", "names", "store")
	for _, s := range []string{"id > 5 AND s IS NOT NULL", "NOT NOT b", "CASE WHEN id = 1 THEN 'a' ELSE s END = 'a'",
		"CAST(s AS DECIMAL(38,10)) > dec", "st.x IN (1, 2, NULL)", "- - -9223372036854775808", "s LIKE 'a\\%%'",
		"ts >= TIMESTAMP '2024-01-01 00:00:00+05:30'", "dt BETWEEN DATE '0001-01-01' AND '9999-12-31'", "1/0 = 1",
		"COALESCE(d, 1e308 * 10) > 0", "`st`.`x` <=> id", "i % 0 = 0", "CONCAT(s, s) || 'x' = LOWER(UPPER(s))"} {
		f.Add(s)
	}
	rec := fuzzBatch()
	f.Fuzz(func(t *testing.T, src string) {
		e, err := expr.Parse(src)
		checkExprErr(t, "Parse", src, err)
		if err != nil {
			return
		}
		printed := e.String()
		e2, err := expr.Parse(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, err)
		}
		if again := e2.String(); again != printed {
			t.Fatalf("%q printed as %q, which prints as %q", src, printed, again)
		}
		_ = expr.Columns(e)
		p, err := expr.Compile(e, fuzzSchema)
		checkExprErr(t, "Compile", src, err)
		if err == nil {
			_ = p.String()
			if out, err := p.Eval(context.Background(), rec); err == nil {
				if out.Len() != int(rec.NumRows()) {
					t.Fatalf("%q: %d results for %d rows", src, out.Len(), rec.NumRows())
				}
				out.Release()
			} else {
				checkExprErr(t, "Eval", src, err)
			}
		}
		_, _, err = expr.ToIceberg(e, fuzzIceberg)
		checkExprErr(t, "ToIceberg", src, err)
	})
}

// FuzzParseMerge parses MERGE statements, prints and re-parses them.
func FuzzParseMerge(f *testing.F) {
	seedScripts(f, "merge")
	f.Add("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE")
	f.Add("MERGE INTO db.t AS x USING 'f.parquet' AS y ON x.k = y.k AND x.v > 1 WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 0 WHEN NOT MATCHED THEN INSERT (k, v) VALUES (y.k, y.v)")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := expr.ParseMerge(src)
		checkExprErr(t, "ParseMerge", src, err)
		if err != nil {
			return
		}
		printed := m.String()
		m2, err := expr.ParseMerge(printed)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, err)
		}
		if again := m2.String(); again != printed {
			t.Fatalf("%q printed as %q, which prints as %q", src, printed, again)
		}
	})
}

// FuzzParseAssignments parses SET lists, prints and re-parses them.
func FuzzParseAssignments(f *testing.F) {
	seedScripts(f, "assign")
	f.Add("a = 1, `b c` = CASE WHEN a > 1 THEN 'x' END")
	f.Fuzz(func(t *testing.T, src string) {
		as, err := expr.ParseAssignments(src)
		checkExprErr(t, "ParseAssignments", src, err)
		if err != nil {
			return
		}
		parts := make([]string, len(as))
		for i, a := range as {
			parts[i] = a.String()
		}
		printed := strings.Join(parts, ", ")
		back, err := expr.ParseAssignments(printed)
		if err != nil || len(back) != len(as) {
			t.Fatalf("%q printed as %q, which does not parse back: %v", src, printed, err)
		}
		for i := range back {
			if back[i].String() != parts[i] {
				t.Fatalf("%q printed as %q, which prints as %q", src, parts[i], back[i].String())
			}
		}
	})
}
