package tableops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/ddl"
)

// Alter is one schema and partition evolution of a table, committed as one
// metadata change, in the words of Spark's ALTER TABLE. Changes apply in
// this order: partition fields dropped, columns added, renamed, retyped,
// made optional and dropped, identifier fields set, partition fields added.
type Alter struct {
	AddColumns    []ddl.Column
	RenameColumns [][2]string  // {old dotted name, new name}
	AlterTypes    []ddl.Column // widen the column's type (Path and Type only)
	DropNotNull   []string     // make these columns optional
	DropColumns   []string
	// SetIdentifier, when not nil, replaces the identifier fields (empty:
	// drop them, as DROP IDENTIFIER FIELDS).
	SetIdentifier []string
	// AddPartitionFields are partition fields such as "bucket(16, id)" or
	// "day(ts)" (Spark's ADD PARTITION FIELD); DropPartitionFields name
	// fields of the current spec by name ("ts_day") or by transform
	// ("day(ts)") (DROP PARTITION FIELD).
	AddPartitionFields  []string
	DropPartitionFields []string
}

// Empty reports whether the alter changes nothing.
func (a Alter) Empty() bool {
	return len(a.AddColumns) == 0 && len(a.RenameColumns) == 0 && len(a.AlterTypes) == 0 && len(a.DropNotNull) == 0 &&
		len(a.DropColumns) == 0 && a.SetIdentifier == nil && len(a.AddPartitionFields) == 0 && len(a.DropPartitionFields) == 0
}

// AlterTable applies a to the table in one commit, checking Iceberg's rules
// first: new columns are optional (existing rows have no value), types only
// widen (int to long, float to double, decimal(P,S) to decimal(P2,S) with
// P2 >= P), columns can be made optional but not required, identifier
// fields are required primitive non-floating columns, and a column that an
// identifier field or the current partition spec uses cannot be dropped
// unless the same alter stops using it. A refused change commits nothing.
// The change goes through commit.RunTx: checked and staged again on the
// fresh table at each attempt, a lost answer resolved by the commit id.
func AlterTable(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, a Alter) (*CommitOutcome, error) {
	name := catalog.FormatName(ident)
	if a.Empty() {
		return nil, fmt.Errorf("alter %s: no change given", name)
	}
	var staged error
	out, err := commit.RunTx(ctx, cat, ident, commit.Options{}, func(_ context.Context, tbl *table.Table, tx *table.Transaction) error {
		staged = stageAlter(name, tbl, tx, a)
		return staged
	})
	if err != nil {
		if staged != nil && errors.Is(err, staged) {
			return nil, staged
		}
		return nil, fmt.Errorf("alter %s: %w", name, err)
	}
	return out, nil
}

// stageAlter checks a against tbl and stages it on tx, a transaction on
// tbl.
func stageAlter(name string, tbl *table.Table, tx *table.Transaction, a Alter) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("alter %s: %w: %s", name, ErrRefused, fmt.Sprintf(format, args...))
	}
	sc := tbl.Schema()
	spec := tbl.Spec()

	// Partition fields to drop, resolved against the current spec.
	var dropFields []iceberg.PartitionField
	for _, d := range a.DropPartitionFields {
		f, err := findPartitionField(spec, sc, d)
		if err != nil {
			return refuse("%v", err)
		}
		dropFields = append(dropFields, f)
	}

	for _, src := range a.AddPartitionFields {
		fields, err := ddl.ParsePartitionFields(src, sc)
		if err != nil {
			continue // a field on a column added by this alter: checked when it is added
		}
		for _, f := range fields {
			for _, pf := range spec.Fields() {
				dropped := slices.ContainsFunc(dropFields, func(d iceberg.PartitionField) bool { return d.FieldID == pf.FieldID })
				if !dropped && pf.SourceID() == f.SourceID && pf.Transform.String() == f.Transform.String() {
					return refuse("the partition spec already has %s", FormatPartitionField(sc, pf))
				}
			}
		}
	}

	// Column checks Iceberg's libraries report less clearly.
	for _, c := range a.AddColumns {
		if c.Required {
			return refuse("cannot add required column %s: the rows already written have no value for it; add it without NOT NULL", c.Name())
		}
		if _, ok := sc.FindFieldByName(c.Name()); ok {
			return refuse("column %s already exists", c.Name())
		}
		if len(c.Path) > 1 && (c.First || c.After != "") {
			// NB: iceberg-go cannot move a nested column added in the same
			// update ("relative to field is not a child of the parent").
			return refuse("FIRST and AFTER place top-level columns only; %s would go last in its struct: leave the placement out", c.Name())
		}
	}
	for _, c := range a.AlterTypes {
		f, ok := sc.FindFieldByName(c.Name())
		if !ok {
			return refuse("no column %s (columns: %s)", c.Name(), columnList(sc))
		}
		if err := checkWidening(c.Name(), f.Type, c.Type); err != nil {
			return refuse("%v", err)
		}
	}
	ids := identifierNames(sc)
	newIDs := ids
	if a.SetIdentifier != nil {
		newIDs = a.SetIdentifier
	}
	renamed := map[string]string{}
	for _, r := range a.RenameColumns {
		if _, ok := sc.FindFieldByName(r[0]); !ok {
			return refuse("no column %s to rename (columns: %s)", r[0], columnList(sc))
		}
		renamed[r[0]] = r[1]
	}
	for _, col := range a.DropNotNull {
		if slices.Contains(newIDs, col) {
			return refuse("column %s is an identifier field, and identifier fields must be NOT NULL; change the identifier fields first", col)
		}
	}
	for _, col := range a.DropColumns {
		f, ok := sc.FindFieldByName(col)
		if !ok {
			return refuse("no column %s to drop (columns: %s)", col, columnList(sc))
		}
		if slices.Contains(newIDs, col) {
			return refuse("column %s is an identifier field; change the identifier fields first (--set-key or --drop-key)", col)
		}
		for _, pf := range spec.Fields() {
			if pf.SourceID() != f.ID {
				continue
			}
			if !slices.ContainsFunc(dropFields, func(d iceberg.PartitionField) bool { return d.FieldID == pf.FieldID }) {
				return refuse("column %s is the source of partition field %s of the current spec; drop the partition field too (--drop-partition-field %s)", col, pf.Name, pf.Name)
			}
		}
		if len(sc.Fields()) == len(a.DropColumns) && len(a.AddColumns) == 0 {
			return refuse("a table needs at least one column")
		}
	}

	if len(dropFields) > 0 {
		us := tx.UpdateSpec(true)
		for _, f := range dropFields {
			us.RemoveField(f.Name)
		}
		if err := us.Commit(); err != nil {
			return fmt.Errorf("alter %s: drop partition fields: %w", name, err)
		}
	}
	schemaChanged := len(a.AddColumns)+len(a.RenameColumns)+len(a.AlterTypes)+len(a.DropNotNull)+len(a.DropColumns) > 0 || a.SetIdentifier != nil
	if schemaChanged {
		var opts []table.UpdateSchemaOption
		if nm := tbl.Metadata().NameMapping(); nm != nil {
			// Keep the table's name mapping in step with its columns.
			opts = append(opts, table.WithNameMapping(nm))
		}
		u := tx.UpdateSchema(true, false, opts...)
		for _, c := range a.AddColumns {
			u.AddColumn(c.Path, c.Type, c.Doc, false, nil)
			switch {
			case c.First:
				u.MoveFirst(c.Path)
			case c.After != "":
				u.MoveAfter(c.Path, []string{c.After})
			}
		}
		for _, r := range a.RenameColumns {
			u.RenameColumn(strings.Split(r[0], "."), r[1])
		}
		for _, c := range a.AlterTypes {
			u.UpdateColumn(c.Path, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: c.Type}})
		}
		for _, col := range a.DropNotNull {
			u.UpdateColumn(strings.Split(col, "."), table.ColumnUpdate{Required: iceberg.Optional[bool]{Valid: true, Val: false}})
		}
		for _, col := range a.DropColumns {
			u.DeleteColumn(strings.Split(col, "."))
		}
		if a.SetIdentifier != nil {
			paths := make([][]string, 0, len(a.SetIdentifier))
			for _, n := range a.SetIdentifier {
				if to, ok := renamed[n]; ok {
					n = to
				}
				paths = append(paths, strings.Split(n, "."))
			}
			u.SetIdentifierField(paths)
		}
		// NB: Commit applies the operations; calling Apply first would
		// apply them twice.
		if err := u.Commit(); err != nil {
			return fmt.Errorf("alter %s: %w", name, err)
		}

		staged, err := tx.StagedTable()
		if err != nil {
			return fmt.Errorf("alter %s: %w", name, err)
		}
		if err := checkIdentifierFields(staged.Schema()); err != nil {
			return refuse("%v", err)
		}
	}
	if len(a.AddPartitionFields) > 0 {
		staged, err := tx.StagedTable()
		if err != nil {
			return err
		}
		us := tx.UpdateSpec(true)
		for _, src := range a.AddPartitionFields {
			fields, err := ddl.ParsePartitionFields(src, staged.Schema())
			if err != nil {
				return fmt.Errorf("alter %s: --add-partition-field: %w", name, err)
			}
			for _, f := range fields {
				us.AddField(f.SourceName, f.Transform, f.Name)
			}
		}
		if err := us.Commit(); err != nil {
			return fmt.Errorf("alter %s: add partition fields: %w", name, err)
		}
	}
	return nil
}

// findPartitionField finds a field of spec by its name or by a transform
// expression such as "day(ts)".
func findPartitionField(spec iceberg.PartitionSpec, sc *iceberg.Schema, ref string) (iceberg.PartitionField, error) {
	var names []string
	for _, f := range spec.Fields() {
		if f.Name == ref {
			return f, nil
		}
		names = append(names, FormatPartitionField(sc, f))
	}
	if parsed, err := ddl.ParsePartitionFields(ref, sc); err == nil && len(parsed) == 1 {
		for _, f := range spec.Fields() {
			if f.SourceID() == parsed[0].SourceID && f.Transform.String() == parsed[0].Transform.String() {
				return f, nil
			}
		}
	}
	if len(names) == 0 {
		return iceberg.PartitionField{}, fmt.Errorf("the table is not partitioned, so it has no partition field %q", ref)
	}
	return iceberg.PartitionField{}, fmt.Errorf("no partition field %q in the current spec (fields: %s)", ref, strings.Join(names, ", "))
}

// FormatPartitionField renders a partition field the way `floe table
// create --partition-by` and --add-partition-field take it: "bucket(16, id)",
// "day(ts)", or the bare column for identity, with " as NAME" when the field's
// name is not the default one.
func FormatPartitionField(sc *iceberg.Schema, f iceberg.PartitionField) string {
	src, ok := sc.FindColumnName(f.SourceID())
	if !ok {
		src = fmt.Sprintf("<dropped column %d>", f.SourceID())
	}
	var s string
	switch t := f.Transform.(type) {
	case iceberg.IdentityTransform:
		s = src
	case iceberg.BucketTransform:
		s = fmt.Sprintf("bucket(%d, %s)", t.NumBuckets, src)
	case iceberg.TruncateTransform:
		s = fmt.Sprintf("truncate(%d, %s)", t.Width, src)
	default:
		s = fmt.Sprintf("%s(%s)", t, src)
	}
	if parsed, err := ddl.ParsePartitionFields(s, sc); err == nil && len(parsed) == 1 && parsed[0].Name == f.Name {
		return s
	}
	return s + " as " + f.Name
}

func identifierNames(sc *iceberg.Schema) []string {
	var out []string
	for _, id := range sc.IdentifierFieldIDs {
		if n, ok := sc.FindColumnName(id); ok {
			out = append(out, n)
		}
	}
	return out
}

func columnList(sc *iceberg.Schema) string {
	names := make([]string, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// checkWidening applies Iceberg's type promotion rules.
func checkWidening(col string, from, to iceberg.Type) error {
	if from.Equals(to) {
		return fmt.Errorf("column %s already has type %s", col, ddl.FormatType(from))
	}
	ok := false
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok = to.(iceberg.Int64Type)
	case iceberg.Float32Type:
		_, ok = to.(iceberg.Float64Type)
	case iceberg.DecimalType:
		if t, isDec := to.(iceberg.DecimalType); isDec {
			ok = t.Scale() == f.Scale() && t.Precision() >= f.Precision()
		}
	}
	if !ok {
		return fmt.Errorf("cannot change column %s from %s to %s: Iceberg only widens int to long, float to double and decimal(P,S) to decimal(P2,S) with P2 > P", col, ddl.FormatType(from), ddl.FormatType(to))
	}
	return nil
}

func checkIdentifierFields(sc *iceberg.Schema) error {
	for _, id := range sc.IdentifierFieldIDs {
		f, ok := sc.FindFieldByID(id)
		name, _ := sc.FindColumnName(id)
		if !ok {
			continue
		}
		if !f.Required {
			return fmt.Errorf("identifier field %s must be NOT NULL (it is optional)", name)
		}
		if _, ok := f.Type.(iceberg.PrimitiveType); !ok {
			return fmt.Errorf("identifier field %s must have a primitive type, not %s", name, ddl.FormatType(f.Type))
		}
		switch f.Type.(type) {
		case iceberg.Float32Type, iceberg.Float64Type:
			return fmt.Errorf("identifier field %s cannot be a floating-point column", name)
		}
	}
	return nil
}
