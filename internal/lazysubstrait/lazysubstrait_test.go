package lazysubstrait_test

import (
	"testing"
	_ "unsafe" // go:linkname

	"github.com/apache/iceberg-go"
	icesubstrait "github.com/apache/iceberg-go/table/substrait"
	"github.com/substrait-io/substrait-go/v8/extensions"

	"github.com/floedata/floe/internal/lazysubstrait"
)

// eagerCollection is substrait-go's own default load (what
// GetDefaultCollection returns without this package).
//
//go:linkname eagerCollection github.com/substrait-io/substrait-go/v8/extensions.loadDefaultCollection
func eagerCollection() (*extensions.Collection, error)

const icebergURN = "extension:apache.iceberg:functions_set"

func funcIDs(c *extensions.Collection) map[string]bool {
	ids := map[string]bool{}
	for _, f := range c.GetAllScalarFunctions() {
		ids["scalar "+f.ID().URN+" "+f.CompoundName()] = true
	}
	for _, f := range c.GetAllAggregateFunctions() {
		ids["aggregate "+f.ID().URN+" "+f.CompoundName()] = true
	}
	for _, f := range c.GetAllWindowFunctions() {
		ids["window "+f.ID().URN+" "+f.CompoundName()] = true
	}
	return ids
}

// TestLoadMatchesEager: the deferral is in place in a binary that imports
// this package and iceberg-go; before Load the collection holds only
// iceberg-go's function set, and after it every function substrait-go's
// eager load has, with iceberg-go's, and filters convert.
func TestLoadMatchesEager(t *testing.T) {
	if !lazysubstrait.Active() {
		t.Fatal("the deferral is not active: substrait-go's getDefaultCollectionOnce is not linked (a new substrait-go version?)")
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	bind := func(e iceberg.BooleanExpression) iceberg.BooleanExpression {
		t.Helper()
		b, err := iceberg.BindExpr(schema, e, true)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	filter := bind(iceberg.EqualTo(iceberg.Reference("id"), int64(7)))
	got := extensions.GetDefaultCollectionWithNoError()
	before := funcIDs(got)
	for id := range before {
		if !containsURN(id, icebergURN) {
			t.Fatalf("before Load the collection holds %s", id)
		}
	}
	if len(before) == 0 {
		t.Fatal("before Load the collection lacks iceberg-go's function set: iceberg-go initialised before the deferral")
	}
	// Before Load a conversion fails with an error (the binary never asks
	// for one: see the package comment), not a panic or a wrong filter.
	if _, _, err := icesubstrait.ConvertExpr(schema, filter, true); err == nil {
		t.Fatal("a filter converted before Load: the collection was loaded eagerly")
	} else {
		t.Logf("before Load: %v", err)
	}
	if err := lazysubstrait.Load(); err != nil {
		t.Fatal(err)
	}
	if err := lazysubstrait.Load(); err != nil {
		t.Fatal(err)
	}
	eager, err := eagerCollection()
	if err != nil {
		t.Fatal(err)
	}
	want := funcIDs(eager)
	have := funcIDs(got)
	n := 0
	for id := range have {
		if containsURN(id, icebergURN) {
			n++
			continue
		}
		if !want[id] {
			t.Errorf("Load added %s, which the eager load has not", id)
		}
	}
	for id := range want {
		if !have[id] {
			t.Errorf("the eager load has %s, Load has not", id)
		}
	}
	if n == 0 || len(want) < 100 {
		t.Fatalf("%d iceberg-go functions, %d default functions", n, len(want))
	}
	for _, uri := range []string{"functions_comparison.yaml", "functions_boolean.yaml", "functions_string.yaml"} {
		if !got.URILoaded(extensions.SubstraitDefaultURIPrefix + uri) {
			t.Errorf("%s not loaded", uri)
		}
	}
	if _, _, err := icesubstrait.ConvertExpr(schema, filter, true); err != nil {
		t.Fatalf("a filter does not convert after Load: %v", err)
	}
	if _, _, err := icesubstrait.ConvertExpr(schema, bind(iceberg.IsIn(iceberg.Reference("id"), int64(1), int64(2), int64(3))), true); err != nil {
		t.Fatalf("an IN filter (iceberg-go's own is_in) does not convert after Load: %v", err)
	}
}

func containsURN(id, urn string) bool {
	for i := 0; i+len(urn) <= len(id); i++ {
		if id[i:i+len(urn)] == urn {
			return true
		}
	}
	return false
}
