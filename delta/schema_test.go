package delta

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

const nestedSchema = `{"type":"struct","fields":[
 {"name":"id","type":"long","nullable":false,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}},
 {"name":"price","type":"decimal(10,2)","nullable":true,"metadata":{}},
 {"name":"tags","type":{"type":"array","elementType":"string","containsNull":false},"nullable":true,"metadata":{}},
 {"name":"attrs","type":{"type":"map","keyType":"string","valueType":"integer","valueContainsNull":true},"nullable":true,"metadata":{}},
 {"name":"addr","type":{"type":"struct","fields":[
   {"name":"city","type":"string","nullable":true,"metadata":{"delta.columnMapping.id":3,"delta.columnMapping.physicalName":"col-3"}}]},"nullable":true,"metadata":{}},
 {"name":"at","type":"timestamp","nullable":true,"metadata":{}},
 {"name":"local","type":"timestamp_ntz","nullable":true,"metadata":{}}]}`

func TestParseSchema(t *testing.T) {
	s, err := ParseSchema(nestedSchema)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.String(); got != "struct<id:long,price:decimal(10,2),tags:array<string>,attrs:map<string,integer>,addr:struct<city:string>,at:timestamp,local:timestamp_ntz>" {
		t.Fatalf("schema %s", got)
	}
	id, _ := s.Field("ID")
	if id == nil || id.Name != "id" {
		t.Fatal("Field must match names ignoring case")
	}
	if got := id.PhysicalName(ColumnMappingName); got != "col-1" {
		t.Errorf("physical name under name mapping %q", got)
	}
	if got := id.PhysicalName(ColumnMappingNone); got != "id" {
		t.Errorf("physical name without mapping %q", got)
	}
	if n, ok := id.ColumnMappingID(); !ok || n != 1 {
		t.Errorf("column mapping id %d %v", n, ok)
	}
	as, err := ArrowSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"id: type=int64\n    metadata: [\"PARQUET:field_id\": \"1\"]",
		"price: type=decimal(10, 2), nullable",
		"tags: type=list<element: utf8>, nullable",
		"attrs: type=map<utf8, int32, items_nullable>, nullable",
		"addr: type=struct<city: utf8 nullable>, nullable",
		"at: type=timestamp[us, tz=UTC], nullable",
		"local: type=timestamp[us], nullable",
	}
	for i, f := range as.Fields() {
		if got := f.String(); got != want[i] {
			t.Errorf("field %d: %s, want %s", i, got, want[i])
		}
	}
}

func TestParseSchemaErrors(t *testing.T) {
	tests := []struct{ schema, want string }{
		{`{"type":"struct","fields":[{"name":"a","type":"decimal(40,2)"}]}`, "bad decimal"},
		{`{"type":"struct","fields":[{"type":"long"}]}`, "has no name"},
		{`{"type":"struct","fields":[{"name":"a","type":{"type":"union"}}]}`, `unknown nested type "union"`},
		{`{"type":"struct"`, "not JSON"},
		{`"long"`, "not JSON"},
	}
	for _, tc := range tests {
		_, err := ParseSchema(tc.schema)
		if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want ErrCorruptLog mentioning %q", tc.schema, err, tc.want)
		}
	}
	s, err := ParseSchema(`{"type":"struct","fields":[{"name":"v","type":"variant","nullable":true}]}`)
	if err != nil {
		t.Fatalf("an unknown type must parse (and fail when read): %v", err)
	}
	if _, err := ArrowSchema(s); !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "variant") {
		t.Errorf("variant column: got %v", err)
	}
}

func TestArrowTypeOfPrimitives(t *testing.T) {
	tests := []struct {
		dt   DataType
		want arrow.DataType
	}{
		{TypeString, arrow.BinaryTypes.String},
		{TypeLong, arrow.PrimitiveTypes.Int64},
		{TypeInteger, arrow.PrimitiveTypes.Int32},
		{TypeShort, arrow.PrimitiveTypes.Int16},
		{TypeByte, arrow.PrimitiveTypes.Int8},
		{TypeFloat, arrow.PrimitiveTypes.Float32},
		{TypeDouble, arrow.PrimitiveTypes.Float64},
		{TypeBoolean, arrow.FixedWidthTypes.Boolean},
		{TypeBinary, arrow.BinaryTypes.Binary},
		{TypeDate, arrow.FixedWidthTypes.Date32},
		{TypeTimestamp, &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{TypeTimestampNTZ, &arrow.TimestampType{Unit: arrow.Microsecond}},
		{DecimalType{Precision: 38, Scale: 0}, &arrow.Decimal128Type{Precision: 38}},
	}
	for _, tc := range tests {
		got, err := ArrowType(tc.dt)
		if err != nil || !arrow.TypeEqual(got, tc.want) {
			t.Errorf("%s: got %v, %v; want %s", tc.dt, got, err, tc.want)
		}
	}
}

func TestReadCompatible(t *testing.T) {
	parse := func(s string) *StructType {
		st, err := ParseSchema(s)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	base := `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true},{"name":"b","type":"string","nullable":true}]}`
	tests := []struct {
		name     string
		existing string
		read     string
		mode     ColumnMappingMode
		want     string
	}{
		{"same", base, base, ColumnMappingNone, ""},
		{"added column", base, `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true},{"name":"b","type":"string","nullable":true},{"name":"c","type":"integer","nullable":true}]}`, ColumnMappingNone, ""},
		{"dropped column", base, `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true}]}`, ColumnMappingNone, `"b" was dropped`},
		{"type change", base, `{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true},{"name":"b","type":"string","nullable":true}]}`, ColumnMappingNone, "changed type from long to integer"},
		{"tightened nullability", base, `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false},{"name":"b","type":"string","nullable":true}]}`, ColumnMappingNone, "became non-nullable"},
		{"relaxed nullability", `{"type":"struct","fields":[{"name":"a","type":"long","nullable":false}]}`, `{"type":"struct","fields":[{"name":"a","type":"long","nullable":true}]}`, ColumnMappingNone, ""},
		{"case-only rename", base, `{"type":"struct","fields":[{"name":"A","type":"long","nullable":true},{"name":"b","type":"string","nullable":true}]}`, ColumnMappingNone, `renamed to "A"`},
		{"re-added under column mapping",
			`{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":1,"delta.columnMapping.physicalName":"col-1"}}]}`,
			`{"type":"struct","fields":[{"name":"a","type":"long","nullable":true,"metadata":{"delta.columnMapping.id":2,"delta.columnMapping.physicalName":"col-2"}}]}`,
			ColumnMappingName, "dropped and re-added"},
		{"nested element nullability",
			`{"type":"struct","fields":[{"name":"l","type":{"type":"array","elementType":"long","containsNull":true},"nullable":true}]}`,
			`{"type":"struct","fields":[{"name":"l","type":{"type":"array","elementType":"long","containsNull":false},"nullable":true}]}`,
			ColumnMappingNone, "elements of column \"l\" became non-nullable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := readCompatible(parse(tc.existing), parse(tc.read), tc.mode)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
