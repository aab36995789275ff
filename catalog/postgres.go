package catalog

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	_ "github.com/jackc/pgx/v5/stdlib" // pure-Go PostgreSQL driver "pgx"
)

// openPostgres opens a SQL catalog on PostgreSQL through iceberg-go's SQL
// catalog (Postgres dialect) and the pgx driver. iceberg-go owns the
// connection pool (Close releases it); floe's own SQLite-only records
// (path roots) are not kept there, so Register works without --path-root.
func (c *Catalog) openPostgres(ctx context.Context, dsn string, props iceberg.Properties) error {
	p := iceberg.Properties{}
	for k, v := range props {
		p[k] = v
	}
	p["type"] = "sql"
	p[sqlcat.DriverKey] = "pgx"
	p[sqlcat.DialectKey] = string(sqlcat.Postgres)
	p["uri"] = dsn
	cat, err := icecat.Load(ctx, c.name, p)
	if err != nil {
		return fmt.Errorf("open PostgreSQL catalog: %w", err)
	}
	c.ice = cat
	return nil
}
