package deltasync

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
)

// allTypes has a column of every Delta primitive type and nested types.
var allTypes = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "b", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "s", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "d", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "bo", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "str", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ntz", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "dec", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "big", Type: &arrow.Decimal128Type{Precision: 38, Scale: 6}, Nullable: false},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: false}), Nullable: true},
	{Name: "arr", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.PrimitiveTypes.Int64, Nullable: true}), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32), Nullable: true},
	{Name: "ls", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int16, Nullable: true}), Nullable: false}), Nullable: true},
}, nil)

// TestSyncTypes syncs every Delta type and checks the Iceberg schema and
// the values after a migration, an update of every column and a delete.
func TestSyncTypes(t *testing.T) {
	r1 := row{"id": 1, "b": -128, "s": 32767, "i": -2147483648, "f": 1.5, "d": -2.25, "bo": true, "str": "héllo",
		"bin": "AAEC", "dt": "2024-02-29", "ts": "2024-05-01T10:11:12.123456Z", "ntz": "2024-05-01T10:11:12.654321",
		"dec": "12345678.90", "big": "12345678901234567890123456789012.123456",
		"st": map[string]any{"a": 7, "b": "x"}, "arr": []any{1, nil, 3},
		"m":  []any{map[string]any{"key": "k", "value": 1}, map[string]any{"key": "n", "value": nil}},
		"ls": []any{map[string]any{"x": 1}, map[string]any{"x": nil}}}
	r2 := row{"id": 2, "big": "0.000001"} // NULL everywhere else
	r1b := row{"id": 1, "b": 127, "s": -32768, "i": 2147483647, "f": -0.5, "d": 1e300, "bo": false, "str": "",
		"bin": "", "dt": "1970-01-01", "ts": "1969-12-31T23:59:59.999999Z", "ntz": "2262-01-01T00:00:00",
		"dec": "-0.01", "big": "-1", "st": map[string]any{"a": nil, "b": ""}, "arr": []any{},
		"m": []any{}, "ls": []any{}}
	g := newGen(t, allTypes, "")
	f1 := g.data(r1, r2)
	g.commit("WRITE", actions(f1)...) // v1
	f2 := g.data(r1b, r2)
	g.commit("UPDATE", actions(remove(f1[0]), f2, g.cdc(
		mergeRow(r1, "_change_type", "update_preimage"), mergeRow(r1b, "_change_type", "update_postimage")))...) // v2
	a3, rm3 := g.withDV(f2[0], 1)
	g.commit("DELETE", rm3, a3) // v3: deletes id 2
	src := g.open()
	for _, m := range syncModes {
		t.Run(m.name, func(t *testing.T) {
			cat := openCatalog(t)
			ident := table.Identifier{"db", "types"}
			opts := Options{EqualityColumns: []string{"id"}, Mode: m.mode, DeleteMode: m.del, FormatVersion: m.version, Start: delta.AtVersion(1)}
			syncTo(t, cat, ident, src, opts, 1)
			tbl, err := cat.Load(context.Background(), ident)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"id": "long", "b": "int", "s": "int", "i": "int", "f": "float", "d": "double",
				"bo": "boolean", "str": "string", "bin": "binary", "dt": "date", "ts": "timestamptz", "ntz": "timestamp",
				"dec": "decimal(10, 2)", "big": "decimal(38, 6)"}
			for name, typ := range want {
				f, ok := tbl.Schema().FindFieldByName(name)
				if !ok {
					t.Fatalf("no column %s", name)
				}
				if f.Type.String() != typ {
					t.Errorf("column %s: Iceberg type %s, want %s", name, f.Type, typ)
				}
			}
			for name, typ := range map[string]string{"st.a": "int", "st.b": "string", "arr.element": "long",
				"m.key": "string", "m.value": "int", "ls.element.x": "int"} {
				f, ok := tbl.Schema().FindFieldByName(name)
				if !ok || f.Type.String() != typ {
					t.Errorf("nested field %s: %v (found %v), want %s", name, f.Type, ok, typ)
				}
			}
			if st, _ := tbl.Schema().FindFieldByName("st.b"); !st.Required {
				t.Error("st.b (not null in Delta) is optional")
			}
			if f, _ := tbl.Schema().FindFieldByName("ls"); !f.Type.(*iceberg.ListType).ElementRequired {
				t.Error("ls elements (containsNull false in Delta) are optional")
			}
			if f, _ := tbl.Schema().FindFieldByName("arr"); f.Type.(*iceberg.ListType).ElementRequired {
				t.Error("arr elements (containsNull true in Delta) are required")
			}
			if f, _ := tbl.Schema().FindFieldByName("id"); !f.Required {
				t.Error("the equality column id is optional")
			}
			if f, _ := tbl.Schema().FindFieldByName("big"); !f.Required {
				t.Error("big (not null in Delta) is optional")
			}
			if ids := tbl.Schema().IdentifierFieldIDs; len(ids) != 1 {
				t.Errorf("identifier fields %v", ids)
			}
			opts.Start = delta.Bound{}
			syncTo(t, cat, ident, src, opts, 2)
			syncTo(t, cat, ident, src, opts, 3)
		})
	}
}

func mergeRow(r row, k string, v any) row {
	out := row{k: v}
	for a, b := range r {
		out[a] = b
	}
	return out
}
