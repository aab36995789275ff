package expr

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/cockroachdb/datadriven"
)

// runIceberg converts src against the test schema turned into an Iceberg
// schema and prints the expression, whether it is exact, and its bound form
// (which checks that iceberg-go accepts the literals' types).
func runIceberg(t *testing.T, d *datadriven.TestData, schema *arrow.Schema, src string) string {
	sc := testIcebergSchema(t, schema)
	e, err := Parse(src)
	if err != nil {
		return "error: " + FormatError(src, err) + "\n"
	}
	out, exact, err := ToIceberg(e, sc)
	if err != nil {
		return "error: " + FormatError(src, err) + "\n"
	}
	if _, err := iceberg.BindExpr(sc, out, true); err != nil {
		d.Fatalf(t, "iceberg-go rejects %s: %v", out, err)
	}
	return fmt.Sprintf("%s\nexact: %v\n", sortedSets(out.String()), exact)
}

var setLiteral = regexp.MustCompile(`\{\[([^\]]*)\]\}`)

// sortedSets orders the literals of IN/NOT IN sets, which iceberg-go prints
// in map order.
func sortedSets(s string) string {
	return setLiteral.ReplaceAllStringFunc(s, func(m string) string {
		items := strings.Fields(m[2 : len(m)-2])
		slices.Sort(items)
		return "{[" + strings.Join(items, " ") + "]}"
	})
}

// testIcebergSchema maps a test Arrow schema to an Iceberg schema with
// field IDs in order.
func testIcebergSchema(t testing.TB, schema *arrow.Schema) *iceberg.Schema {
	id := 0
	var conv func(dt arrow.DataType) iceberg.Type
	field := func(f arrow.Field) iceberg.NestedField {
		id++
		myID := id
		return iceberg.NestedField{ID: myID, Name: f.Name, Type: conv(f.Type), Required: !f.Nullable}
	}
	conv = func(dt arrow.DataType) iceberg.Type {
		switch dt := dt.(type) {
		case *arrow.BooleanType:
			return iceberg.PrimitiveTypes.Bool
		case *arrow.Int8Type, *arrow.Int16Type, *arrow.Int32Type:
			return iceberg.PrimitiveTypes.Int32
		case *arrow.Int64Type:
			return iceberg.PrimitiveTypes.Int64
		case *arrow.Float32Type:
			return iceberg.PrimitiveTypes.Float32
		case *arrow.Float64Type:
			return iceberg.PrimitiveTypes.Float64
		case *arrow.Decimal128Type:
			return iceberg.DecimalTypeOf(int(dt.Precision), int(dt.Scale))
		case *arrow.StringType, *arrow.LargeStringType:
			return iceberg.PrimitiveTypes.String
		case *arrow.BinaryType, *arrow.LargeBinaryType:
			return iceberg.PrimitiveTypes.Binary
		case *arrow.FixedSizeBinaryType:
			return iceberg.FixedTypeOf(dt.ByteWidth)
		case *arrow.Date32Type:
			return iceberg.PrimitiveTypes.Date
		case *arrow.Time64Type:
			return iceberg.PrimitiveTypes.Time
		case *arrow.TimestampType:
			switch {
			case dt.Unit == arrow.Nanosecond && dt.TimeZone != "":
				return iceberg.PrimitiveTypes.TimestampTzNs
			case dt.Unit == arrow.Nanosecond:
				return iceberg.PrimitiveTypes.TimestampNs
			case dt.TimeZone != "":
				return iceberg.PrimitiveTypes.TimestampTz
			}
			return iceberg.PrimitiveTypes.Timestamp
		case *arrow.StructType:
			st := &iceberg.StructType{}
			for _, f := range dt.Fields() {
				st.FieldList = append(st.FieldList, field(f))
			}
			return st
		case *arrow.ListType:
			id++
			return &iceberg.ListType{ElementID: id, Element: conv(dt.Elem()), ElementRequired: false}
		}
		t.Fatalf("no iceberg type for %s", dt)
		return nil
	}
	var fields []iceberg.NestedField
	for _, f := range schema.Fields() {
		fields = append(fields, field(f))
	}
	return iceberg.NewSchema(0, fields...)
}
