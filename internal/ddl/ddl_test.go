package ddl

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestParseSchema(t *testing.T) {
	for _, tc := range []struct {
		src, want string
		ids       []string
	}{
		{src: "id long not null, data string", want: "1:id:long:req 2:data:string:opt"},
		{src: "id long not null, price decimal(10,2), ts timestamptz", want: "1:id:long:req 2:price:decimal(10,2):opt 3:ts:timestamptz:opt", ids: []string{"id"}},
		{src: "tags list<string>, m map<string, int>, s struct<a: int not null, b: string>",
			want: "1:tags:list<string>:opt 3:m:map<string, int>:opt 6:s:struct<a: int not null, b: string>:opt"},
		{src: "`odd name` int, f fixed(4), g fixed[8], b binary, u uuid, d date, t time, n timestamp_ns",
			want: "1:odd name:int:opt 2:f:fixed(4):opt 3:g:fixed(8):opt 4:b:binary:opt 5:u:uuid:opt 6:d:date:opt 7:t:time:opt 8:n:timestamp_ns:opt"},
	} {
		sc, err := ParseSchema(tc.src, tc.ids)
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		var got []string
		for _, f := range sc.Fields() {
			req := "opt"
			if f.Required {
				req = "req"
			}
			got = append(got, strings.Join([]string{itoa(f.ID), f.Name, FormatType(f.Type), req}, ":"))
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, g, tc.want)
		}
		if len(tc.ids) > 0 && len(sc.IdentifierFieldIDs) != len(tc.ids) {
			t.Errorf("%q: identifier ids %v", tc.src, sc.IdentifierFieldIDs)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestParseSchemaErrors(t *testing.T) {
	for _, tc := range []struct {
		src  string
		ids  []string
		want string
	}{
		{src: "id lng", want: `position 3 of "id lng": unknown type "lng"`},
		{src: "id long,", want: "expected a column definition"},
		{src: "id decimal(40,2)", want: "precision must be 1..38"},
		{src: "id long, id int", want: `column "id" is defined twice`},
		{src: "id long", ids: []string{"id"}, want: `identifier column "id" must be declared not null`},
		{src: "id long not null", ids: []string{"x"}, want: `identifier column "x" is not a column`},
		{src: "m map<string int>", want: `expected ","`},
		{src: "id long extra", want: "expected ',' or end of column list"},
	} {
		_, err := ParseSchema(tc.src, tc.ids)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want error containing %q", tc.src, err, tc.want)
		}
	}
	_, err := ParseSchema("id lng", nil)
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("want ErrSyntax, got %v", err)
	}
}

func TestParsePartitionSpec(t *testing.T) {
	sc, err := ParseSchema("id long not null, data string, ts timestamptz, d date", nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := ParsePartitionSpec("day(ts), bucket(16,id), data, truncate(data, 4), years(d)", sc)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range spec.Fields() {
		got = append(got, f.Name+"="+f.Transform.String())
	}
	want := "ts_day=day id_bucket_16=bucket[16] data=identity data_trunc_4=truncate[4] d_year=year"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("got %s want %s", g, want)
	}
	if s, err := ParsePartitionSpec("", sc); err != nil || !s.IsUnpartitioned() {
		t.Errorf("empty spec: %v %v", s, err)
	}
	for _, tc := range []struct{ src, want string }{
		{"day(nope)", `partition source column "nope" is not in the schema`},
		{"day(data)", "transform day cannot apply to column \"data\""},
		{"bucket(0, id)", "bucket width must be positive"},
		{"frob(id)", `unknown partition transform "frob"`},
		{"data, data", `partition field "data" appears twice`},
	} {
		_, err := ParsePartitionSpec(tc.src, sc)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v want %q", tc.src, err, tc.want)
		}
	}
	_ = iceberg.PrimitiveTypes.Int32
}

func TestTimestampMeansWithZone(t *testing.T) {
	// As in Spark SQL: timestamp is an instant, timestamp_ntz a wall-clock time.
	for src, want := range map[string]iceberg.Type{
		"timestamp":     iceberg.PrimitiveTypes.TimestampTz,
		"TIMESTAMP":     iceberg.PrimitiveTypes.TimestampTz,
		"timestamptz":   iceberg.PrimitiveTypes.TimestampTz,
		"timestamp_ltz": iceberg.PrimitiveTypes.TimestampTz,
		"timestamp_ntz": iceberg.PrimitiveTypes.Timestamp,
		"timestamp_ns":  iceberg.PrimitiveTypes.TimestampNs,
	} {
		got, err := ParseType(src)
		if err != nil || !got.Equals(want) {
			t.Errorf("%s: got %v %v, want %v", src, got, err, want)
		}
	}
	// FormatType prints what ParseType reads back as the same type.
	for _, typ := range []iceberg.Type{iceberg.PrimitiveTypes.Timestamp, iceberg.PrimitiveTypes.TimestampTz,
		iceberg.PrimitiveTypes.TimestampNs, iceberg.PrimitiveTypes.TimestampTzNs, iceberg.PrimitiveTypes.Date,
		iceberg.DecimalTypeOf(10, 2), iceberg.FixedTypeOf(3), iceberg.PrimitiveTypes.UUID} {
		back, err := ParseType(FormatType(typ))
		if err != nil || !back.Equals(typ) {
			t.Errorf("%v prints as %q, which reads back as %v %v", typ, FormatType(typ), back, err)
		}
	}
}

func TestPartitionSpellings(t *testing.T) {
	sc, err := ParseSchema("id long not null, s string, ts timestamp", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{"bucket(4, id)", "bucket(id, 4)", "bucket[4](id)", "BUCKET[4](id)"} {
		f, err := ParsePartitionFields(src, sc)
		if err != nil || len(f) != 1 || f[0].Name != "id_bucket_4" || f[0].Transform.String() != "bucket[4]" {
			t.Errorf("%s: %v %v", src, f, err)
		}
	}
	f, err := ParsePartitionFields("truncate[2](s) as prefix, day(ts) AS d", sc)
	if err != nil || len(f) != 2 || f[0].Name != "prefix" || f[0].Transform.String() != "truncate[2]" || f[1].Name != "d" {
		t.Errorf("names: %v %v", f, err)
	}
	if _, err := ParsePartitionFields("bucket[4] id", sc); err == nil {
		t.Errorf("bucket[4] without (col): want an error")
	}
}

func TestParseColumn(t *testing.T) {
	c, err := ParseColumn("note string not null comment 'free ''text''' after status")
	if err != nil || c.Name() != "note" || !c.Type.Equals(iceberg.PrimitiveTypes.String) || !c.Required || c.Doc != "free 'text'" || c.After != "status" {
		t.Errorf("got %+v %v", c, err)
	}
	c, err = ParseColumn("loc.alt double first")
	if err != nil || c.Name() != "loc.alt" || !c.First {
		t.Errorf("got %+v %v", c, err)
	}
	for _, bad := range []string{"x", "x strin", "x int first after y", "x int banana"} {
		if _, err := ParseColumn(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	for src, want := range map[string][2]string{"a TO b": {"a", "b"}, "a=b": {"a", "b"}, "s.x to y": {"s.x", "y"}} {
		from, to, err := ParseNamePair(src)
		if err != nil || from != want[0] || to != want[1] {
			t.Errorf("%q: %q %q %v", src, from, to, err)
		}
	}
	if _, _, err := ParseNamePair("a b"); err == nil {
		t.Errorf("a b: want an error")
	}
}
