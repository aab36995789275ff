package transform

import (
	"testing"

	"github.com/apache/iceberg-go"
)

// TestSameType: types that differ only in the ids of their nested fields
// are the same (a REST catalog reassigns ids when it creates a table, so an
// output it created holds the rows floe writes with fresh ids); any other
// difference is not.
func TestSameType(t *testing.T) {
	list := func(id int, elem iceberg.Type, req bool) iceberg.Type {
		return &iceberg.ListType{ElementID: id, Element: elem, ElementRequired: req}
	}
	strct := func(id int, name string, typ iceberg.Type) iceberg.Type {
		return &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: id, Name: name, Type: typ}}}
	}
	mp := func(kid, vid int, v iceberg.Type) iceberg.Type {
		return &iceberg.MapType{KeyID: kid, KeyType: iceberg.PrimitiveTypes.String, ValueID: vid, ValueType: v}
	}
	for _, c := range []struct {
		name string
		a, b iceberg.Type
		same bool
	}{
		{"primitive", iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int64, true},
		{"primitive differs", iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.Int32, false},
		{"list, other element id", list(5, iceberg.PrimitiveTypes.String, false), list(9, iceberg.PrimitiveTypes.String, false), true},
		{"list, element type differs", list(5, iceberg.PrimitiveTypes.String, false), list(5, iceberg.PrimitiveTypes.Int64, false), false},
		{"list, element required differs", list(5, iceberg.PrimitiveTypes.String, false), list(5, iceberg.PrimitiveTypes.String, true), false},
		{"map, other ids", mp(3, 4, iceberg.PrimitiveTypes.Int64), mp(7, 8, iceberg.PrimitiveTypes.Int64), true},
		{"map, value differs", mp(3, 4, iceberg.PrimitiveTypes.Int64), mp(3, 4, iceberg.PrimitiveTypes.Int32), false},
		{"struct, other ids", strct(2, "a", list(3, iceberg.PrimitiveTypes.Int64, true)), strct(6, "a", list(7, iceberg.PrimitiveTypes.Int64, true)), true},
		{"struct, other name", strct(2, "a", iceberg.PrimitiveTypes.Int64), strct(2, "b", iceberg.PrimitiveTypes.Int64), false},
		{"list against struct", list(2, iceberg.PrimitiveTypes.Int64, false), strct(2, "element", iceberg.PrimitiveTypes.Int64), false},
	} {
		if got := sameType(c.a, c.b); got != c.same {
			t.Errorf("%s: sameType = %v, want %v", c.name, got, c.same)
		}
	}
	have := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tags", Type: list(3, iceberg.PrimitiveTypes.String, false)})
	want := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "tags", Type: list(2, iceberg.PrimitiveTypes.String, false)})
	if !fits(have, want) {
		t.Error("rows with other nested ids do not fit a table of the same columns: every build would rebuild it")
	}
}
