package merge

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/expr"
)

func TestStoreAssignable(t *testing.T) {
	ts := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	ntz := &arrow.TimestampType{Unit: arrow.Microsecond}
	dec := &arrow.Decimal128Type{Precision: 10, Scale: 2}
	str := arrow.BinaryTypes.String
	i32, i64, f64 := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float64
	list := func(dt arrow.DataType, nullable bool) arrow.DataType {
		return arrow.ListOfField(arrow.Field{Name: "element", Type: dt, Nullable: nullable})
	}
	for _, c := range []struct {
		from, to arrow.DataType
		want     bool
	}{
		{i64, i64, true},
		{arrow.Null, i64, true},
		{i64, i32, true}, // numbers into numbers (overflow checked when cast)
		{i32, f64, true},
		{f64, dec, true},
		{str, f64, false}, // Spark: no string into a number without CAST
		{str, i64, false},
		{i64, str, true}, // any atomic value into a string
		{arrow.FixedWidthTypes.Boolean, str, true},
		{arrow.FixedWidthTypes.Boolean, i32, false},
		{i32, arrow.FixedWidthTypes.Boolean, false},
		{arrow.FixedWidthTypes.Date32, ts, true},
		{ts, arrow.FixedWidthTypes.Date32, true},
		{ntz, ts, true},
		{str, ts, false},
		{arrow.BinaryTypes.Binary, &arrow.FixedSizeBinaryType{ByteWidth: 16}, true},
		{list(i32, false), list(i64, true), true},
		{list(i32, true), list(i64, false), false}, // nullable elements into required ones
		{list(i32, true), str, false},
		{arrow.StructOf(arrow.Field{Name: "a", Type: i32}), arrow.StructOf(arrow.Field{Name: "b", Type: i64}), true},
		{arrow.StructOf(arrow.Field{Name: "a", Type: str}), arrow.StructOf(arrow.Field{Name: "a", Type: i64}), false},
	} {
		if got := storeAssignable(c.from, c.to); got != c.want {
			t.Errorf("storeAssignable(%s, %s) = %t, want %t", c.from, c.to, got, c.want)
		}
	}
}

func TestHashType(t *testing.T) {
	i32, i64, f32, f64 := arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64
	str, lstr := arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString
	dec := func(p, s int32) arrow.DataType { return &arrow.Decimal128Type{Precision: p, Scale: s} }
	ts := func(u arrow.TimeUnit, tz string) arrow.DataType { return &arrow.TimestampType{Unit: u, TimeZone: tz} }
	for _, c := range []struct {
		a, b arrow.DataType
		want string // "" = hash as they are, "-" = not a join key
	}{
		{i64, i64, ""},
		{i32, i64, ""}, // integers encode alike at any width
		{str, lstr, ""},
		{f32, f64, ""},
		{i64, f64, "float64"},
		{dec(10, 2), dec(10, 2), ""},
		{dec(10, 2), dec(12, 4), "decimal(38, 4)"},
		{i64, dec(10, 2), "decimal(38, 2)"},
		{i64, dec(38, 20), "-"}, // no decimal holds both
		{ts(arrow.Microsecond, "UTC"), ts(arrow.Nanosecond, "UTC"), "timestamp[ns, tz=UTC]"},
		{ts(arrow.Microsecond, "UTC"), ts(arrow.Microsecond, ""), "-"},
		{str, i64, "-"},
		{arrow.FixedWidthTypes.Date32, ts(arrow.Microsecond, ""), "-"},
	} {
		dt, ok := hashType(c.a, c.b)
		got := "-"
		if ok {
			got = ""
			if dt != nil {
				got = dt.String()
			}
		}
		if got != c.want {
			t.Errorf("hashType(%s, %s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

// TestBind checks how a statement is bound: aliases, join keys, the
// residual, the columns the match pass reads, and Spark's rule for when
// the cardinality check runs.
func TestBind(t *testing.T) {
	target := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	source := arrow.NewSchema([]arrow.Field{
		{Name: "key", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	for _, c := range []struct {
		sql        string
		name       string // Source.Name
		aliases    string
		keys       int
		residual   string
		matchCols  string
		checkCard  bool
		targetOnly int
	}{
		{sql: "MERGE INTO ns.out USING ns.src ON out.id = src.key WHEN MATCHED THEN DELETE",
			aliases: "out src", keys: 1, matchCols: "id", checkCard: false},
		{sql: "MERGE INTO ns.out USING 'dir/changes.parquet' ON out.id = changes.key WHEN MATCHED AND changes.flag THEN DELETE",
			aliases: "out changes", keys: 1, matchCols: "id", checkCard: true},
		{sql: "MERGE INTO ns.out t USING x ON t.id = key WHEN NOT MATCHED THEN INSERT (id) VALUES (key)", name: "named",
			aliases: "t named", keys: 1, matchCols: "id", checkCard: false},
		{sql: "MERGE INTO ns.out AS t USING src AS s ON s.key = t.id AND t.part = s.part AND t.amount > 0 AND s.flag WHEN MATCHED THEN UPDATE SET status = 'x'",
			aliases: "t s", keys: 2, residual: "t.amount > 0 AND s.flag", matchCols: "id,part,amount", checkCard: true, targetOnly: 1},
		{sql: "MERGE INTO ns.out AS t USING src AS s ON t.id = s.key WHEN MATCHED AND status = 'a' THEN DELETE WHEN NOT MATCHED BY SOURCE AND t.amount < 0 THEN DELETE",
			aliases: "t s", keys: 1, matchCols: "id,status,amount", checkCard: true},
		// <=> is not a join key: NULLs match under it.
		{sql: "MERGE INTO ns.out AS t USING src AS s ON t.id = s.key AND t.part <=> s.part WHEN MATCHED THEN DELETE",
			aliases: "t s", keys: 1, residual: "t.part <=> s.part", matchCols: "id,part", checkCard: false},
	} {
		stmt, err := expr.ParseMerge(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		p, err := bind(stmt, target, source, c.name)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		var cols []string
		for _, i := range p.matchCols {
			cols = append(cols, target.Field(i).Name)
		}
		residual := ""
		if p.residualSrc != nil {
			residual = p.residualSrc.String()
		}
		got := []any{p.tAlias + " " + p.sAlias, len(p.keys), residual, strings.Join(cols, ","), p.checkCard, len(p.targetOnly)}
		want := []any{c.aliases, c.keys, c.residual, c.matchCols, c.checkCard, c.targetOnly}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s:\n got %v\nwant %v", c.sql, got, want)
				break
			}
		}
	}
}

func TestBindErrorsWrapSentinels(t *testing.T) {
	target := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	source := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	for _, c := range []struct {
		sql  string
		kind error
	}{
		{"MERGE INTO t USING s ON id = s.id WHEN MATCHED THEN DELETE", expr.ErrAmbiguousColumn},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = nope", expr.ErrUnknownColumn},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *", expr.ErrUnknownColumn},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED AND s.n THEN DELETE", expr.ErrType},
		{"MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET id = 'x'", expr.ErrType},
		{"MERGE INTO t USING s ON t.id < s.id WHEN MATCHED THEN DELETE", expr.ErrUnsupported},
		{"MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (v) VALUES ('x')", nil},
	} {
		stmt, err := expr.ParseMerge(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		_, err = bind(stmt, target, source, "")
		if !errors.Is(err, ErrBadMerge) || (c.kind != nil && !errors.Is(err, c.kind)) {
			t.Errorf("%s: got %v, want ErrBadMerge and %v", c.sql, err, c.kind)
		}
	}
}
