//go:build interop

package interop_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/interop"
)

// exprRows is the table both engines evaluate the expressions on: Spark as
// an inline VALUES relation, floe as an Arrow batch of the same values.
var exprRows = []struct{ spark, json string }{
	{`(1, 'Hello, World', 'lo', DATE '2024-02-29', TIMESTAMP '2024-02-29 13:45:30.123456', 2.5D, CAST(-12.345 AS DECIMAL(6,3)), 15)`,
		`{"id": 1, "s": "Hello, World", "t": "lo", "d": "2024-02-29", "ts": "2024-02-29T13:45:30.123456Z", "x": 2.5, "dec": "-12.345", "n": 15}`},
	{`(2, 'ÉtÉ été, x', 'é', DATE '1969-12-31', TIMESTAMP '1969-12-31 23:59:59.5', -2.675D, CAST(999.995 AS DECIMAL(6,3)), -25)`,
		`{"id": 2, "s": "ÉtÉ été, x", "t": "é", "d": "1969-12-31", "ts": "1969-12-31T23:59:59.5Z", "x": -2.675, "dec": "999.995", "n": -25}`},
	{`(3, '', '', DATE '2000-01-01', TIMESTAMP '2000-01-01 00:00:00', 0.0D, CAST(0 AS DECIMAL(6,3)), 0)`,
		`{"id": 3, "s": "", "t": "", "d": "2000-01-01", "ts": "2000-01-01T00:00:00Z", "x": 0.0, "dec": "0", "n": 0}`},
	{`(4, CAST(NULL AS STRING), 'x', CAST(NULL AS DATE), CAST(NULL AS TIMESTAMP), CAST(NULL AS DOUBLE), CAST(NULL AS DECIMAL(6,3)), CAST(NULL AS INT))`,
		`{"id": 4, "s": null, "t": "x", "d": null, "ts": null, "x": null, "dec": null, "n": null}`},
}

// exprSamples are expressions whose results floe and Spark must agree on,
// row for row, compared as CAST(... AS STRING). They avoid backslashes
// (Spark's string literals read them as escapes, floe's do not) and
// arguments that fail (Spark's ANSI setting decides those).
var exprSamples = []string{
	"substring(s, 2, 3)", "substr(s, -3)", "substring(s, 0, 2)", "substring(s, n)", "left(s, 3)", "right(s, 4)",
	"ltrim('  a ') || rtrim(' b  ') || trim('  c  ')", "concat_ws('-', s, t, NULL, 'z')", "replace(s, 'l', 'L')",
	"lpad(s, 15, '*-')", "rpad(s, 4)", "lpad(t, 0, 'x')", "instr(s, t)", "locate('l', s, 5)", "locate(t, s)",
	"startswith(s, 'He')", "endswith(s, 'x')", "contains(s, t)", "s RLIKE '^[A-Z]'", "regexp_replace(s, '[aeiou]', '#')",
	"regexp_replace(s, '([a-z]+), ([a-z]+)', '$2 $1')", "regexp_extract(s, '([a-z])(o)', 1)", "regexp_extract(s, '(o)', 0)",
	"split_part(s, ',', 1)", "split_part(s, ',', -1)", "split_part(s, ',', 5)", "reverse(s)", "repeat(t, 2)", "initcap(s)",
	"upper(s)", "lower(s)", "length(s)",
	"year(d)", "month(d)", "day(d)", "dayofweek(d)", "dayofyear(d)", "weekofyear(d)", "quarter(d)", "hour(ts)", "minute(ts)", "second(ts)",
	"date_add(d, n)", "date_sub(d, 30)", "datediff(d, DATE '2024-01-01')", "add_months(d, n)", "last_day(d)", "make_date(2024, 2, id)",
	"to_date('2024-1-5', 'yyyy-M-d')", "to_date('05/01/2024 10:11', 'dd/MM/yyyy HH:mm')", "to_timestamp('2024-01-05 10:11:12.5', 'yyyy-MM-dd HH:mm:ss.S')",
	"unix_timestamp(ts)", "unix_timestamp(d)", "from_unixtime(unix_timestamp(ts))", "from_unixtime(86400 * n, 'yyyy/MM/dd HH:mm')",
	"date_format(ts, 'yyyy-MM-dd HH:mm:ss.SSS')", "date_format(ts, 'MMM d, yy h:mm a EEE')",
	"date_trunc('MONTH', ts)", "date_trunc('week', ts)", "date_trunc('quarter', ts)", "date_trunc('hour', ts)", "date_trunc('millisecond', ts)",
	"trunc(d, 'MM')", "trunc(d, 'year')", "trunc(d, 'week')",
	"round(x)", "round(x, 2)", "round(dec, 2)", "round(dec, -1)", "round(n, -1)", "bround(x)", "bround(dec, 2)", "bround(n, -1)",
	"ceil(x)", "floor(x)", "ceil(dec)", "floor(dec)", "mod(n, 7)", "pmod(n, 7)", "pmod(n, -7)", "pmod(dec, 10)", "pmod(x, 2)",
	"power(x, 2)", "sqrt(abs(x))", "exp(x)", "ln(x)", "log10(abs(n))", "log2(8)", "log(2, abs(n))", "sign(x)", "sign(dec)",
	"exp(1)", "exp(0) + exp(1)", "log10(x)", "log10(1000)", "log2(abs(n))", "ln(abs(n))", "log(10, 1000)", "power(x, 0.5)", "power(2, n)", "exp(n / 10)",
	"locate('l', s, CAST(NULL AS INT))", "locate('l', s, 0)", "instr(s, '')", "substring(s, -100, 102)", "lpad(s, -1, 'x')",
	"rpad(s, 20, '')", "split_part(s, '', 1)", "regexp_extract(s, 'z(x)?')", "concat_ws(',')", "replace(s, '', 'x')",
	"initcap('hELLO wORLD  x')", "round(-2.5)", "bround(-0.5D)", "round(CAST(1.005 AS FLOAT), 2)", "greatest(CAST('NaN' AS DOUBLE), x)",
	"ceil(1e30)", "round(1.23456789e300, -299)", "date_trunc('DAY', d)", "datediff(ts, d)", "hour(d)",
	"ts - INTERVAL 30 DAYS", "ts + INTERVAL '1' MONTH", "d + INTERVAL 1 MONTH", "INTERVAL 1 WEEK + d", "d - INTERVAL 2 HOURS",
	"ts - INTERVAL -1 YEAR", "ts + INTERVAL 1 DAY 2 HOURS 3 MINUTES 4 SECONDS", "ts - INTERVAL 2 YEARS 3 MONTHS",
	"d + 1", "d - n", "date_format(ts, 'D')", "ts >= date_sub(DATE '2024-03-30', 30)",
	"greatest(n, id, 3)", "least(x, dec, n)", "greatest(s, t)",
	"if(n > 0, 'pos', 'other')", "nvl2(s, 1, 2)", "nvl(s, 'none')", "ifnull(n, -1)", "nullif(id, 1)", "coalesce(s, t)",
	"CAST(n AS tinyint)", "CAST(x AS decimal(5,1))", "CAST(d AS timestamp)", "n::string", "CAST(dec AS varchar(10))",
}

// TestExprMatchesSpark evaluates exprSamples in Spark and in floe on the
// same rows and requires equal results (issue 16).
func TestExprMatchesSpark(t *testing.T) {
	spark := interop.SharedSpark(t)
	ctx := testCtx(t)
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "t", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 6, Scale: 3}, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	}, nil)
	var js, values []string
	for _, r := range exprRows {
		js = append(js, r.json)
		values = append(values, r.spark)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader("["+strings.Join(js, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	relation := "VALUES " + strings.Join(values, ", ") + " AS r(id, s, t, d, ts, x, dec, n)"
	for _, src := range exprSamples {
		str := "CAST((" + src + ") AS STRING)"
		got, err := floeColumn(ctx, str, rec)
		if err != nil {
			t.Errorf("floe: %s: %v", src, err)
			continue
		}
		res, err := spark.SQL(ctx, "default", "SELECT "+str+" AS v FROM "+relation+" ORDER BY id")
		if err != nil {
			t.Errorf("spark: %s: %v", src, err)
			continue
		}
		var want []string
		for _, row := range res.Rows {
			if row[0] == nil {
				want = append(want, "NULL")
			} else {
				want = append(want, fmt.Sprint(row[0]))
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\nfloe  %q\nspark %q", src, got, want)
		}
	}
}

func floeColumn(ctx context.Context, src string, rec arrow.RecordBatch) ([]string, error) {
	e, err := expr.Parse(src)
	if err != nil {
		return nil, err
	}
	p, err := expr.Compile(e, rec.Schema())
	if err != nil {
		return nil, err
	}
	out, err := p.Eval(ctx, rec)
	if err != nil {
		return nil, err
	}
	defer out.Release()
	s := out.(*array.String)
	var vals []string
	for i := 0; i < s.Len(); i++ {
		if s.IsNull(i) {
			vals = append(vals, "NULL")
		} else {
			vals = append(vals, s.Value(i))
		}
	}
	return vals, nil
}
