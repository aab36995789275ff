package rowfile

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// typeName spells an Arrow type the way Iceberg spells the type it came from
// (long, decimal(10,2), timestamptz, list<string>), falling back to Arrow's
// own name for types Iceberg does not have.
func typeName(dt arrow.DataType) string {
	switch t := dt.(type) {
	case *extensions.UUIDType:
		return "uuid"
	case *arrow.BooleanType:
		return "boolean"
	case *arrow.Int32Type:
		return "int"
	case *arrow.Int64Type:
		return "long"
	case *arrow.Float32Type:
		return "float"
	case *arrow.Float64Type:
		return "double"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case *arrow.Decimal256Type:
		return fmt.Sprintf("decimal(%d,%d)", t.Precision, t.Scale)
	case *arrow.Date32Type:
		return "date"
	case *arrow.Time64Type:
		if t.Unit == arrow.Microsecond {
			return "time"
		}
		return "time(" + t.Unit.String() + ")"
	case *arrow.Time32Type:
		return "time(" + t.Unit.String() + ")"
	case *arrow.Date64Type:
		return "date64"
	case *arrow.TimestampType:
		name := "timestamp"
		if t.TimeZone != "" {
			name = "timestamptz"
		}
		switch t.Unit {
		case arrow.Microsecond:
			return name
		case arrow.Nanosecond:
			return name + "_ns"
		}
		return fmt.Sprintf("%s(%s)", name, t.Unit)
	case *arrow.StringType, *arrow.LargeStringType:
		return "string"
	case *arrow.BinaryType, *arrow.LargeBinaryType:
		return "binary"
	case *arrow.FixedSizeBinaryType:
		return fmt.Sprintf("fixed[%d]", t.ByteWidth)
	case *arrow.NullType:
		return "unknown"
	case *arrow.ListType:
		return "list<" + typeName(t.Elem()) + ">"
	case *arrow.LargeListType:
		return "list<" + typeName(t.Elem()) + ">"
	case *arrow.MapType:
		return "map<" + typeName(t.KeyType()) + ", " + typeName(t.ItemType()) + ">"
	case *arrow.StructType:
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			parts[i] = f.Name + ": " + typeName(f.Type)
		}
		return "struct<" + strings.Join(parts, ", ") + ">"
	}
	return dt.String()
}
