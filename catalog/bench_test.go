package catalog

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// BenchmarkOpenEmbedded measures what every command pays to open an
// existing embedded catalog, plus closing it.
func BenchmarkOpenEmbedded(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	c, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		b.Fatal(err)
	}
	c.Close()
	for b.Loop() {
		c, err := Open(ctx, Options{Warehouse: dir})
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// BenchmarkOpenLoad is opening the embedded catalog and loading a small
// table: the catalog part of a command's fixed cost.
func BenchmarkOpenLoad(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	c, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		b.Fatal(err)
	}
	ident := table.Identifier{"ns", "t"}
	if err := c.CreateNamespace(ctx, ident[:1], false); err != nil {
		b.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := c.Iceberg().CreateTable(ctx, ident, sc); err != nil {
		b.Fatal(err)
	}
	c.Close()
	for b.Loop() {
		c, err := Open(ctx, Options{Warehouse: dir})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Load(ctx, ident); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
