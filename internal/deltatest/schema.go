package deltatest

import (
	"encoding/json"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/delta"
)

// SchemaString returns the Delta schema string of an Arrow schema. Field
// metadata "delta.columnMapping.id" and "delta.columnMapping.physicalName"
// are copied into the Delta field metadata.
func SchemaString(s *arrow.Schema) (string, error) {
	fields := make([]any, 0, s.NumFields())
	for _, f := range s.Fields() {
		jf, err := fieldJSON(f)
		if err != nil {
			return "", err
		}
		fields = append(fields, jf)
	}
	b, err := json.Marshal(map[string]any{"type": "struct", "fields": fields})
	return string(b), err
}

func fieldJSON(f arrow.Field) (map[string]any, error) {
	t, err := typeJSON(f.Type)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", f.Name, err)
	}
	md := map[string]any{}
	if v, ok := f.Metadata.GetValue("delta.columnMapping.physicalName"); ok {
		md["delta.columnMapping.physicalName"] = v
	}
	if v, ok := f.Metadata.GetValue("delta.columnMapping.id"); ok {
		md["delta.columnMapping.id"] = json.Number(v)
	}
	return map[string]any{"name": f.Name, "type": t, "nullable": f.Nullable, "metadata": md}, nil
}

func typeJSON(t arrow.DataType) (any, error) {
	switch x := t.(type) {
	case *arrow.StringType:
		return "string", nil
	case *arrow.Int64Type:
		return "long", nil
	case *arrow.Int32Type:
		return "integer", nil
	case *arrow.Int16Type:
		return "short", nil
	case *arrow.Int8Type:
		return "byte", nil
	case *arrow.Float32Type:
		return "float", nil
	case *arrow.Float64Type:
		return "double", nil
	case *arrow.BooleanType:
		return "boolean", nil
	case *arrow.BinaryType:
		return "binary", nil
	case *arrow.Date32Type:
		return "date", nil
	case *arrow.TimestampType:
		if x.TimeZone == "" {
			return "timestamp_ntz", nil
		}
		return "timestamp", nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("decimal(%d,%d)", x.Precision, x.Scale), nil
	case *arrow.ListType:
		et, err := typeJSON(x.Elem())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "elementType": et, "containsNull": x.ElemField().Nullable}, nil
	case *arrow.MapType:
		kt, err := typeJSON(x.KeyType())
		if err != nil {
			return nil, err
		}
		vt, err := typeJSON(x.ItemType())
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "map", "keyType": kt, "valueType": vt, "valueContainsNull": x.ItemField().Nullable}, nil
	case *arrow.StructType:
		fields := make([]any, 0, x.NumFields())
		for _, f := range x.Fields() {
			jf, err := fieldJSON(f)
			if err != nil {
				return nil, err
			}
			fields = append(fields, jf)
		}
		return map[string]any{"type": "struct", "fields": fields}, nil
	}
	return nil, fmt.Errorf("no Delta type for Arrow type %s", t)
}

// Metadata returns a metaData action for an Arrow schema.
func Metadata(s *arrow.Schema, partitionColumns []string, configuration map[string]string) (delta.Metadata, error) {
	ss, err := SchemaString(s)
	if err != nil {
		return delta.Metadata{}, err
	}
	if partitionColumns == nil {
		partitionColumns = []string{}
	}
	if configuration == nil {
		configuration = map[string]string{}
	}
	created := int64(1700000000000)
	return delta.Metadata{
		ID:               "00000000-0000-0000-0000-000000000001",
		Format:           delta.Format{Provider: "parquet", Options: map[string]string{}},
		SchemaString:     ss,
		PartitionColumns: partitionColumns,
		Configuration:    configuration,
		CreatedTime:      &created,
	}, nil
}
