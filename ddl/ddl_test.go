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
