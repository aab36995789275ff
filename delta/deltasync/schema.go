package deltasync

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/delta"
)

// IcebergType returns the Iceberg type a Delta type is stored as: string →
// string, long → long, integer, short and byte → int (Iceberg has no
// narrower integers; values are widened exactly), float → float, double →
// double, boolean → boolean, binary → binary, date → date, timestamp
// (instants) → timestamptz, timestamp_ntz (wall-clock) → timestamp,
// decimal(p,s) → decimal(p,s), struct → struct, array → list (elements
// optional when the array contains nulls), map → map (values optional when
// the map contains null values; keys are always required). Nested field IDs
// are placeholders (0): IcebergSchema assigns fresh ones.
func IcebergType(t delta.DataType) (iceberg.Type, error) {
	switch v := t.(type) {
	case delta.PrimitiveType:
		switch v {
		case delta.TypeString:
			return iceberg.PrimitiveTypes.String, nil
		case delta.TypeLong:
			return iceberg.PrimitiveTypes.Int64, nil
		case delta.TypeInteger, delta.TypeShort, delta.TypeByte:
			return iceberg.PrimitiveTypes.Int32, nil
		case delta.TypeFloat:
			return iceberg.PrimitiveTypes.Float32, nil
		case delta.TypeDouble:
			return iceberg.PrimitiveTypes.Float64, nil
		case delta.TypeBoolean:
			return iceberg.PrimitiveTypes.Bool, nil
		case delta.TypeBinary:
			return iceberg.PrimitiveTypes.Binary, nil
		case delta.TypeDate:
			return iceberg.PrimitiveTypes.Date, nil
		case delta.TypeTimestamp:
			return iceberg.PrimitiveTypes.TimestampTz, nil
		case delta.TypeTimestampNTZ:
			return iceberg.PrimitiveTypes.Timestamp, nil
		}
		return nil, fmt.Errorf("%w: Delta type %q has no Iceberg counterpart", delta.ErrUnsupportedFeature, string(v))
	case delta.DecimalType:
		if v.Precision < 1 || v.Precision > 38 || v.Scale < 0 || v.Scale > v.Precision {
			return nil, fmt.Errorf("%w: %s is not a valid Iceberg decimal", delta.ErrUnsupportedFeature, v)
		}
		return iceberg.DecimalTypeOf(v.Precision, v.Scale), nil
	case *delta.ArrayType:
		et, err := IcebergType(v.ElementType)
		if err != nil {
			return nil, err
		}
		return &iceberg.ListType{Element: et, ElementRequired: !v.ContainsNull}, nil
	case *delta.MapType:
		kt, err := IcebergType(v.KeyType)
		if err != nil {
			return nil, err
		}
		vt, err := IcebergType(v.ValueType)
		if err != nil {
			return nil, err
		}
		return &iceberg.MapType{KeyType: kt, ValueType: vt, ValueRequired: !v.ValueContainsNull}, nil
	case *delta.StructType:
		fields := make([]iceberg.NestedField, len(v.Fields))
		for i := range v.Fields {
			f := &v.Fields[i]
			ft, err := IcebergType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			fields[i] = iceberg.NestedField{Name: f.Name, Type: ft, Required: !f.Nullable}
		}
		return &iceberg.StructType{FieldList: fields}, nil
	}
	return nil, fmt.Errorf("%w: Delta type %v", delta.ErrUnsupportedFeature, t)
}

// IcebergSchema returns the Iceberg schema for a Delta schema, with fresh
// field IDs assigned as Iceberg assigns them at table creation and the
// equality columns as identifier fields. Equality columns must be top-level
// columns of a primitive, non-floating-point type; they become required
// (Delta columns are usually nullable, and a NULL key is refused when rows
// are read). Errors wrap ErrNoEqualityColumns or ErrInvalidOptions and name
// the column.
func IcebergSchema(s *delta.StructType, equality []string) (*iceberg.Schema, error) {
	if len(equality) == 0 {
		return nil, fmt.Errorf("%w: the identifier fields of a new table are the equality columns; name at least one", ErrNoEqualityColumns)
	}
	isKey := map[string]bool{}
	for _, k := range equality {
		f, _ := s.Field(k)
		if f == nil || f.Name != k {
			return nil, fmt.Errorf("%w: equality column %q is not a column of the Delta table (columns: %s)", ErrInvalidOptions, k, deltaColumns(s))
		}
		switch f.Type.(type) {
		case delta.PrimitiveType:
			if f.Type == delta.TypeFloat || f.Type == delta.TypeDouble {
				return nil, fmt.Errorf("%w: equality column %q is a floating-point column, which Iceberg does not allow as an identifier field", ErrInvalidOptions, k)
			}
		case delta.DecimalType:
		default:
			return nil, fmt.Errorf("%w: equality column %q has the nested type %s; identifier fields must be primitive", ErrInvalidOptions, k, f.Type)
		}
		isKey[k] = true
	}
	st, err := IcebergType(s)
	if err != nil {
		return nil, err
	}
	fields := st.(*iceberg.StructType).FieldList
	for i := range fields {
		if isKey[fields[i].Name] {
			fields[i].Required = true
		}
	}
	n := 0
	fresh, err := iceberg.AssignFreshSchemaIDs(iceberg.NewSchema(0, fields...), func() int { n++; return n })
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(equality))
	for _, k := range equality {
		for _, f := range fresh.Fields() {
			if f.Name == k {
				ids = append(ids, f.ID)
			}
		}
	}
	return iceberg.NewSchemaWithIdentifiers(fresh.ID, ids, fresh.Fields()...), nil
}

func deltaColumns(s *delta.StructType) string {
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// ColumnDiff is one column on which a Delta schema and an Iceberg table
// disagree.
type ColumnDiff struct {
	// Column is the dotted path of the column ("address.city"; list
	// elements, map keys and values as .element, .key, .value).
	Column string
	// Delta and Iceberg describe the column on each side ("" when absent).
	Delta, Iceberg string
	// Reason says what differs.
	Reason string
	// Addable reports a new top-level nullable Delta column, which
	// Options.EvolveSchema adds to the Iceberg table.
	Addable bool
	field   iceberg.NestedField // the Delta column as an Iceberg field, when Addable
}

// String renders the difference as error messages list it:
// `column "name": reason`.
func (d ColumnDiff) String() string {
	return fmt.Sprintf("column %q: %s", d.Column, d.Reason)
}

// CompareSchemas lists the columns on which the Iceberg schema a Delta
// schema maps to (want, from IcebergType) and an Iceberg table's schema
// (have) differ, matching columns by exact name at every level:
//
//   - a Delta column missing from the table (Addable when top-level and
//     nullable);
//   - a table column missing from Delta (dropped or renamed there);
//   - a type change, unless the table's type holds every value of Delta's
//     exactly (int into long, float into double, a decimal with the same
//     scale and a larger precision);
//   - a column required in the table but nullable in Delta, except the
//     equality columns (the identifier fields), whose NULLs are refused row
//     by row.
//
// A column optional in the table but required in Delta is fine, and so is
// a different column order.
func CompareSchemas(want, have *iceberg.Schema, equality []string) []ColumnDiff {
	isKey := map[string]bool{}
	for _, k := range equality {
		isKey[k] = true
	}
	var out []ColumnDiff
	compareFields(want.Fields(), have.Fields(), "", isKey, &out)
	return out
}

func compareFields(want, have []iceberg.NestedField, prefix string, isKey map[string]bool, out *[]ColumnDiff) {
	byName := map[string]iceberg.NestedField{}
	for _, f := range have {
		byName[f.Name] = f
	}
	seen := map[string]bool{}
	for _, w := range want {
		path := prefix + w.Name
		h, ok := byName[w.Name]
		if !ok {
			d := ColumnDiff{Column: path, Delta: describe(w), Reason: fmt.Sprintf("new in Delta (%s), not in the Iceberg table", describe(w))}
			if prefix == "" && !w.Required {
				d.Addable, d.field = true, w
			}
			*out = append(*out, d)
			continue
		}
		seen[w.Name] = true
		compareField(w, h, path, prefix == "" && isKey[w.Name], isKey, out)
	}
	var gone []string
	for _, h := range have {
		if !seen[h.Name] {
			gone = append(gone, h.Name)
		}
	}
	sort.Strings(gone)
	for _, g := range gone {
		h := byName[g]
		*out = append(*out, ColumnDiff{Column: prefix + g, Iceberg: describe(h), Reason: fmt.Sprintf("in the Iceberg table (%s), not in Delta (dropped or renamed there)", describe(h))})
	}
}

func compareField(w, h iceberg.NestedField, path string, key bool, isKey map[string]bool, out *[]ColumnDiff) {
	if h.Required && !w.Required && !key {
		*out = append(*out, ColumnDiff{Column: path, Delta: describe(w), Iceberg: describe(h), Reason: "nullable in Delta, required in the Iceberg table"})
	}
	compareTypes(w.Type, h.Type, path, isKey, out)
}

func compareTypes(wt, ht iceberg.Type, path string, isKey map[string]bool, out *[]ColumnDiff) {
	mismatch := func() {
		*out = append(*out, ColumnDiff{Column: path, Delta: wt.String(), Iceberg: ht.String(),
			Reason: fmt.Sprintf("type %s in Delta, %s in the Iceberg table", wt, ht)})
	}
	switch w := wt.(type) {
	case *iceberg.StructType:
		h, ok := ht.(*iceberg.StructType)
		if !ok {
			mismatch()
			return
		}
		compareFields(w.FieldList, h.FieldList, path+".", nil, out)
	case *iceberg.ListType:
		h, ok := ht.(*iceberg.ListType)
		if !ok {
			mismatch()
			return
		}
		if h.ElementRequired && !w.ElementRequired {
			*out = append(*out, ColumnDiff{Column: path + ".element", Delta: "optional", Iceberg: "required", Reason: "elements may be NULL in Delta, required in the Iceberg table"})
		}
		compareTypes(w.Element, h.Element, path+".element", nil, out)
	case *iceberg.MapType:
		h, ok := ht.(*iceberg.MapType)
		if !ok {
			mismatch()
			return
		}
		compareTypes(w.KeyType, h.KeyType, path+".key", nil, out)
		if h.ValueRequired && !w.ValueRequired {
			*out = append(*out, ColumnDiff{Column: path + ".value", Delta: "optional", Iceberg: "required", Reason: "values may be NULL in Delta, required in the Iceberg table"})
		}
		compareTypes(w.ValueType, h.ValueType, path+".value", nil, out)
	default:
		if !wt.Equals(ht) && !widens(wt, ht) {
			mismatch()
		}
	}
}

// widens reports whether every value of type from is stored exactly by to
// (Iceberg's allowed type promotions).
func widens(from, to iceberg.Type) bool {
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	}
	return false
}

func describe(f iceberg.NestedField) string {
	if f.Required {
		return f.Type.String() + " not null"
	}
	return f.Type.String()
}

func formatDiffs(diffs []ColumnDiff) string {
	parts := make([]string, len(diffs))
	for i, d := range diffs {
		parts[i] = d.String()
	}
	return strings.Join(parts, "; ")
}
