package catalog

import (
	"context"
	"errors"
	"log/slog"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// CreateTable creates a table in the catalog, retrying transient
// failures. When a retry finds the table already there, the earlier call
// created it and its answer was lost: the table is taken as the one
// created when it has no snapshot and the schema asked for (the same
// column names, types and nullability); otherwise the error wraps
// ErrTableExists.
func (c *Catalog) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...icecat.CreateTableOpt) (*table.Table, error) {
	var tbl *table.Table
	var lost error
	err := c.retry(ctx, "create table "+FormatName(ident), func(ctx context.Context) error {
		var err error
		tbl, err = c.ice.CreateTable(ctx, ident, sc, opts...)
		if err != nil && !errors.Is(err, icecat.ErrTableAlreadyExists) {
			lost = err
		}
		return err
	})
	if err == nil || lost == nil || !errors.Is(err, icecat.ErrTableAlreadyExists) {
		return tbl, err
	}
	got, lerr := c.Load(ctx, ident)
	if lerr != nil {
		return nil, err
	}
	if len(got.Metadata().Snapshots()) > 0 || !sameColumns(got.Schema(), sc) {
		return nil, err
	}
	slog.Default().Warn("catalog: the answer to creating the table was lost; the table is there, as created",
		"catalog", c.name, "table", FormatName(ident), "error", lost)
	return got, nil
}

// sameColumns reports whether a and b have the same columns (names, types
// and nullability, in order), whatever their field ids.
func sameColumns(a, b *iceberg.Schema) bool {
	fa, fb := a.Fields(), b.Fields()
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i].Name != fb[i].Name || fa[i].Required != fb[i].Required || typeString(fa[i].Type) != typeString(fb[i].Type) {
			return false
		}
	}
	return true
}

// typeString renders a type without field ids.
func typeString(t iceberg.Type) string {
	switch t := t.(type) {
	case *iceberg.StructType:
		s := "struct<"
		for i, f := range t.FieldList {
			if i > 0 {
				s += ","
			}
			s += f.Name + ":" + typeString(f.Type)
			if f.Required {
				s += " not null"
			}
		}
		return s + ">"
	case *iceberg.ListType:
		s := "list<" + typeString(t.Element)
		if t.ElementRequired {
			s += " not null"
		}
		return s + ">"
	case *iceberg.MapType:
		s := "map<" + typeString(t.KeyType) + "," + typeString(t.ValueType)
		if t.ValueRequired {
			s += " not null"
		}
		return s + ">"
	}
	return t.String()
}
