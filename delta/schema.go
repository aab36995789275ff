package delta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DataType is a Delta Lake column type: a PrimitiveType, a DecimalType, or a
// nested ArrayType, MapType or StructType.
type DataType interface {
	// String returns the type as Delta writes it in a schema string
	// ("long", "decimal(10,2)", "array<string>", ...).
	String() string
	isDataType()
}

// PrimitiveType is a Delta primitive type name such as "string", "long",
// "integer", "short", "byte", "float", "double", "boolean", "binary", "date",
// "timestamp" or "timestamp_ntz".
type PrimitiveType string

// The primitive types this package reads.
const (
	TypeString       PrimitiveType = "string"
	TypeLong         PrimitiveType = "long"
	TypeInteger      PrimitiveType = "integer"
	TypeShort        PrimitiveType = "short"
	TypeByte         PrimitiveType = "byte"
	TypeFloat        PrimitiveType = "float"
	TypeDouble       PrimitiveType = "double"
	TypeBoolean      PrimitiveType = "boolean"
	TypeBinary       PrimitiveType = "binary"
	TypeDate         PrimitiveType = "date"
	TypeTimestamp    PrimitiveType = "timestamp"
	TypeTimestampNTZ PrimitiveType = "timestamp_ntz"
)

// String returns the type name.
func (p PrimitiveType) String() string { return string(p) }
func (PrimitiveType) isDataType()      {}

// DecimalType is decimal(Precision, Scale).
type DecimalType struct {
	Precision int // total digits, 1 to 38
	Scale     int // digits after the point, 0 to Precision
}

// String returns "decimal(p,s)".
func (d DecimalType) String() string { return fmt.Sprintf("decimal(%d,%d)", d.Precision, d.Scale) }
func (DecimalType) isDataType()      {}

// ArrayType is a list of ElementType.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool // whether elements may be NULL
}

// String returns "array<element>".
func (a *ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }
func (*ArrayType) isDataType()      {}

// MapType maps KeyType to ValueType; keys are never null.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool // whether values may be NULL
}

// String returns "map<key,value>".
func (m *MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}
func (*MapType) isDataType() {}

// StructType is an ordered list of named fields. A table schema is a
// StructType.
type StructType struct {
	Fields []StructField // in schema order
}

// String returns "struct<name:type,...>".
func (s *StructType) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}
func (*StructType) isDataType() {}

// Field returns the field with the given logical name (exact match first,
// then case-insensitive, as Delta column names are case-insensitive) and its
// index, or -1 when there is none.
func (s *StructType) Field(name string) (*StructField, int) {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i], i
		}
	}
	for i := range s.Fields {
		if strings.EqualFold(s.Fields[i].Name, name) {
			return &s.Fields[i], i
		}
	}
	return nil, -1
}

// StructField is one column (or nested struct field) of a schema. Metadata
// holds the field metadata of the schema string, including the column
// mapping keys delta.columnMapping.id and delta.columnMapping.physicalName.
type StructField struct {
	Name     string         // logical name
	Type     DataType       // column type
	Nullable bool           // whether values may be NULL
	Metadata map[string]any // field metadata as parsed from JSON (numbers as json.Number)
}

// Column mapping metadata keys and modes (PROTOCOL.md "Column Mapping").
const (
	metaColumnMappingID       = "delta.columnMapping.id"
	metaColumnMappingPhysical = "delta.columnMapping.physicalName"
)

// ColumnMappingMode is the table property delta.columnMapping.mode.
type ColumnMappingMode string

// The column mapping modes.
const (
	ColumnMappingNone ColumnMappingMode = "none"
	ColumnMappingName ColumnMappingMode = "name"
	ColumnMappingID   ColumnMappingMode = "id"
)

// PhysicalName returns the name of the field in data files: the
// delta.columnMapping.physicalName metadata under name or id mapping, the
// logical name otherwise (or when the metadata is absent).
func (f *StructField) PhysicalName(mode ColumnMappingMode) string {
	if mode == ColumnMappingName || mode == ColumnMappingID {
		if p, ok := f.Metadata[metaColumnMappingPhysical].(string); ok && p != "" {
			return p
		}
	}
	return f.Name
}

// ColumnMappingID returns the delta.columnMapping.id of the field (the
// Parquet field id under id mapping) and whether it is present.
func (f *StructField) ColumnMappingID() (int64, bool) {
	switch v := f.Metadata[metaColumnMappingID].(type) {
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		return int64(v), true
	case int64:
		return v, true
	}
	return 0, false
}

// ParseSchema parses a Delta schema string (metaData.schemaString). Unknown
// type names are kept as PrimitiveType and rejected later by ArrowType, so
// that a snapshot of a table with, say, a variant column can still be opened
// for its metadata.
func ParseSchema(schemaString string) (*StructType, error) {
	dec := json.NewDecoder(strings.NewReader(schemaString))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: schema string is not JSON: %v", ErrCorruptLog, err)
	}
	t, err := parseType(raw, "")
	if err != nil {
		return nil, err
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("%w: schema string is a %s, not a struct", ErrCorruptLog, t)
	}
	return st, nil
}

func parseType(raw any, where string) (DataType, error) {
	switch v := raw.(type) {
	case string:
		return parsePrimitive(v, where)
	case map[string]any:
		kind, _ := v["type"].(string)
		switch kind {
		case "struct":
			fields, ok := v["fields"].([]any)
			if !ok && v["fields"] != nil {
				return nil, fmt.Errorf("%w: schema %s: struct fields is not a list", ErrCorruptLog, whereOr(where))
			}
			st := &StructType{Fields: make([]StructField, 0, len(fields))}
			for i, rf := range fields {
				fm, ok := rf.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%w: schema %s: field %d is not an object", ErrCorruptLog, whereOr(where), i)
				}
				name, ok := fm["name"].(string)
				if !ok {
					return nil, fmt.Errorf("%w: schema %s: field %d has no name", ErrCorruptLog, whereOr(where), i)
				}
				path := joinWhere(where, name)
				ft, err := parseType(fm["type"], path)
				if err != nil {
					return nil, err
				}
				nullable := true
				if n, ok := fm["nullable"].(bool); ok {
					nullable = n
				}
				md, _ := fm["metadata"].(map[string]any)
				st.Fields = append(st.Fields, StructField{Name: name, Type: ft, Nullable: nullable, Metadata: md})
			}
			return st, nil
		case "array":
			et, err := parseType(v["elementType"], joinWhere(where, "element"))
			if err != nil {
				return nil, err
			}
			cn := true
			if b, ok := v["containsNull"].(bool); ok {
				cn = b
			}
			return &ArrayType{ElementType: et, ContainsNull: cn}, nil
		case "map":
			kt, err := parseType(v["keyType"], joinWhere(where, "key"))
			if err != nil {
				return nil, err
			}
			vt, err := parseType(v["valueType"], joinWhere(where, "value"))
			if err != nil {
				return nil, err
			}
			vcn := true
			if b, ok := v["valueContainsNull"].(bool); ok {
				vcn = b
			}
			return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: vcn}, nil
		}
		return nil, fmt.Errorf("%w: schema %s: unknown nested type %q", ErrCorruptLog, whereOr(where), kind)
	}
	return nil, fmt.Errorf("%w: schema %s: type is neither a name nor an object", ErrCorruptLog, whereOr(where))
}

func parsePrimitive(s, where string) (DataType, error) {
	if strings.HasPrefix(s, "decimal") {
		rest := strings.TrimSpace(strings.TrimPrefix(s, "decimal"))
		if rest == "" {
			return DecimalType{Precision: 10, Scale: 0}, nil
		}
		if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
			return nil, fmt.Errorf("%w: schema %s: bad decimal type %q", ErrCorruptLog, whereOr(where), s)
		}
		ps := strings.Split(rest[1:len(rest)-1], ",")
		if len(ps) != 2 {
			return nil, fmt.Errorf("%w: schema %s: bad decimal type %q", ErrCorruptLog, whereOr(where), s)
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(ps[0]))
		sc, err2 := strconv.Atoi(strings.TrimSpace(ps[1]))
		if err1 != nil || err2 != nil || p < 1 || p > 38 || sc < 0 || sc > p {
			return nil, fmt.Errorf("%w: schema %s: bad decimal type %q (precision 1..38, 0 <= scale <= precision)", ErrCorruptLog, whereOr(where), s)
		}
		return DecimalType{Precision: p, Scale: sc}, nil
	}
	return PrimitiveType(s), nil
}

func joinWhere(where, name string) string {
	if where == "" {
		return name
	}
	return where + "." + name
}

func whereOr(where string) string {
	if where == "" {
		return "root"
	}
	return "field " + strconv.Quote(where)
}

// Arrow types of the change data metadata columns.
var (
	arrowTimestampUTC = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	arrowTimestampNTZ = &arrow.TimestampType{Unit: arrow.Microsecond}
)

// ArrowType returns the Arrow type Delta type t reads as: string → utf8,
// long → int64, integer → int32, short → int16, byte → int8, float → float32,
// double → float64, boolean → bool, binary → binary, date → date32,
// timestamp → timestamp[us, UTC], timestamp_ntz → timestamp[us],
// decimal(p,s) → decimal128(p,s), struct → struct, array → list<element>,
// map → map. Other types fail with ErrUnsupportedFeature.
func ArrowType(t DataType) (arrow.DataType, error) {
	switch v := t.(type) {
	case PrimitiveType:
		switch v {
		case TypeString:
			return arrow.BinaryTypes.String, nil
		case TypeLong:
			return arrow.PrimitiveTypes.Int64, nil
		case TypeInteger:
			return arrow.PrimitiveTypes.Int32, nil
		case TypeShort:
			return arrow.PrimitiveTypes.Int16, nil
		case TypeByte:
			return arrow.PrimitiveTypes.Int8, nil
		case TypeFloat:
			return arrow.PrimitiveTypes.Float32, nil
		case TypeDouble:
			return arrow.PrimitiveTypes.Float64, nil
		case TypeBoolean:
			return arrow.FixedWidthTypes.Boolean, nil
		case TypeBinary:
			return arrow.BinaryTypes.Binary, nil
		case TypeDate:
			return arrow.FixedWidthTypes.Date32, nil
		case TypeTimestamp:
			return arrowTimestampUTC, nil
		case TypeTimestampNTZ:
			return arrowTimestampNTZ, nil
		}
		return nil, fmt.Errorf("%w: data type %q", ErrUnsupportedFeature, string(v))
	case DecimalType:
		return &arrow.Decimal128Type{Precision: int32(v.Precision), Scale: int32(v.Scale)}, nil
	case *ArrayType:
		et, err := ArrowType(v.ElementType)
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: et, Nullable: v.ContainsNull}), nil
	case *MapType:
		kt, err := ArrowType(v.KeyType)
		if err != nil {
			return nil, err
		}
		vt, err := ArrowType(v.ValueType)
		if err != nil {
			return nil, err
		}
		mt := arrow.MapOfWithMetadata(kt, arrow.Metadata{}, vt, arrow.Metadata{})
		mt.SetItemNullable(v.ValueContainsNull)
		return mt, nil
	case *StructType:
		fields := make([]arrow.Field, len(v.Fields))
		for i := range v.Fields {
			f, err := ArrowField(&v.Fields[i])
			if err != nil {
				return nil, err
			}
			fields[i] = f
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("%w: data type %v", ErrUnsupportedFeature, t)
}

// ArrowField returns the Arrow field of a Delta field under its logical name.
// When the field has a column mapping id, the Arrow field carries it as
// "PARQUET:field_id" metadata (the key iceberg-go and pqarrow use).
func ArrowField(f *StructField) (arrow.Field, error) {
	t, err := ArrowType(f.Type)
	if err != nil {
		return arrow.Field{}, fmt.Errorf("column %q: %w", f.Name, err)
	}
	af := arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable}
	if id, ok := f.ColumnMappingID(); ok {
		af.Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.FormatInt(id, 10)})
	}
	return af, nil
}

// ArrowSchema returns the Arrow schema of a Delta schema with logical names.
func ArrowSchema(s *StructType) (*arrow.Schema, error) {
	fields := make([]arrow.Field, len(s.Fields))
	for i := range s.Fields {
		f, err := ArrowField(&s.Fields[i])
		if err != nil {
			return nil, err
		}
		fields[i] = f
	}
	return arrow.NewSchema(fields, nil), nil
}

// typesEqual reports whether two Delta types are the same type, ignoring
// nullability and metadata.
func typesEqual(a, b DataType) bool {
	switch x := a.(type) {
	case PrimitiveType:
		y, ok := b.(PrimitiveType)
		return ok && x == y
	case DecimalType:
		y, ok := b.(DecimalType)
		return ok && x == y
	case *ArrayType:
		y, ok := b.(*ArrayType)
		return ok && typesEqual(x.ElementType, y.ElementType)
	case *MapType:
		y, ok := b.(*MapType)
		return ok && typesEqual(x.KeyType, y.KeyType) && typesEqual(x.ValueType, y.ValueType)
	case *StructType:
		y, ok := b.(*StructType)
		if !ok || len(x.Fields) != len(y.Fields) {
			return false
		}
		for i := range x.Fields {
			if x.Fields[i].Name != y.Fields[i].Name || !typesEqual(x.Fields[i].Type, y.Fields[i].Type) {
				return false
			}
		}
		return true
	}
	return false
}

// readCompatible reports why data written under schema existing cannot be
// read with schema read, following delta-spark SchemaUtils.isReadCompatible
// with forbidTightenNullability=true and no type widening, plus the column
// mapping rule of DeltaColumnMapping.hasNoColumnMappingSchemaChanges (a
// column kept by name must keep its physical name and id). It returns "" when
// compatible.
func readCompatible(existing, read *StructType, mode ColumnMappingMode) string {
	return structReadCompatible(existing, read, mode, "")
}

func structReadCompatible(existing, read *StructType, mode ColumnMappingMode, where string) string {
	for i := range existing.Fields {
		ef := &existing.Fields[i]
		rf, _ := read.Field(ef.Name)
		path := joinWhere(where, ef.Name)
		if rf == nil {
			return fmt.Sprintf("column %q was dropped or renamed", path)
		}
		if rf.Name != ef.Name {
			return fmt.Sprintf("column %q was renamed to %q", path, joinWhere(where, rf.Name))
		}
		if ef.Nullable && !rf.Nullable {
			return fmt.Sprintf("column %q became non-nullable", path)
		}
		if mode == ColumnMappingName || mode == ColumnMappingID {
			if ef.PhysicalName(mode) != rf.PhysicalName(mode) {
				return fmt.Sprintf("column %q was dropped and re-added (physical name %q, now %q)", path, ef.PhysicalName(mode), rf.PhysicalName(mode))
			}
			eid, eok := ef.ColumnMappingID()
			rid, rok := rf.ColumnMappingID()
			if eok && rok && eid != rid {
				return fmt.Sprintf("column %q was dropped and re-added (column mapping id %d, now %d)", path, eid, rid)
			}
		}
		if msg := typeReadCompatible(ef.Type, rf.Type, mode, path); msg != "" {
			return msg
		}
	}
	return ""
}

func typeReadCompatible(existing, read DataType, mode ColumnMappingMode, path string) string {
	switch e := existing.(type) {
	case *StructType:
		r, ok := read.(*StructType)
		if !ok {
			return fmt.Sprintf("column %q changed type from %s to %s", path, existing, read)
		}
		return structReadCompatible(e, r, mode, path)
	case *ArrayType:
		r, ok := read.(*ArrayType)
		if !ok {
			return fmt.Sprintf("column %q changed type from %s to %s", path, existing, read)
		}
		if e.ContainsNull && !r.ContainsNull {
			return fmt.Sprintf("elements of column %q became non-nullable", path)
		}
		return typeReadCompatible(e.ElementType, r.ElementType, mode, path+".element")
	case *MapType:
		r, ok := read.(*MapType)
		if !ok {
			return fmt.Sprintf("column %q changed type from %s to %s", path, existing, read)
		}
		if e.ValueContainsNull && !r.ValueContainsNull {
			return fmt.Sprintf("values of column %q became non-nullable", path)
		}
		if msg := typeReadCompatible(e.KeyType, r.KeyType, mode, path+".key"); msg != "" {
			return msg
		}
		return typeReadCompatible(e.ValueType, r.ValueType, mode, path+".value")
	}
	if !typesEqual(existing, read) {
		return fmt.Sprintf("column %q changed type from %s to %s", path, existing, read)
	}
	return ""
}
