package cli

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/sqltx"
)

func init() { extraCommands = append(extraCommands, queryCommand) }

func queryCommand(a *app) *cobra.Command {
	var output, storage string
	var sourceProps []string
	c := &cobra.Command{
		Use:   "query SQL",
		Short: "Run a SQL query over Iceberg tables and print or write its result",
		Long: `Run a SELECT over the current state of Iceberg tables named namespace.table and
Delta Lake tables named delta."PATH" (at their latest version), in DuckDB's SQL dialect
(docs/sql-transforms.md), and print the result in --format or write it to --output. Delta
tables are read with the catalog's storage settings, or --storage's profile, with
--source-property on top; a query of Delta tables alone needs no catalog. It needs floe
built with cgo (DuckDB).`,
		Example: `  floe query "SELECT status, count(*) AS n FROM shop.orders GROUP BY status ORDER BY n DESC"
  floe query "SELECT o.id, o.amount, l.amount AS logged FROM shop.orders o JOIN shop.orders_log l ON o.id = l.id" --output joined.parquet
  floe query 'SELECT region, count(*) AS n FROM delta."s3://lake/customers" GROUP BY region' --storage lake`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !sqltx.Available() {
				return sqltx.ErrNoEngine
			}
			props, err := parseProps(sourceProps)
			if err != nil {
				return err
			}
			// A query of Delta tables alone needs no catalog: without
			// one, it fails only if it names an Iceberg table.
			cat, err := a.Catalog(ctx)
			var noCatalog error
			if errors.Is(err, catalog.ErrNoCatalog) {
				cat, noCatalog = nil, err
			} else if err != nil {
				return err
			}
			schema, rows, done, err := sqltx.QueryWith(ctx, cat, args[0], sqltx.QueryOptions{
				Storage: storage, ConfigFile: a.configFile, SourceProperties: props, NoCatalog: noCatalog})
			if err != nil {
				return err
			}
			defer done()
			n, err := a.writeRows(output, schema, rows)
			if err != nil {
				return err
			}
			if output != "" {
				a.infof("wrote %s to %s", plural(n, "row"), output)
			}
			return nil
		},
	}
	c.Flags().StringVar(&output, "output", "", "write to this file instead of stdout (Parquet when it ends in .parquet)")
	c.Flags().StringVar(&storage, "storage", "", "read the query's Delta tables with this storage profile of the configuration file (default: the --catalog's storage settings)")
	c.Flags().StringArrayVar(&sourceProps, "source-property", nil, "storage setting k=v for reading the query's Delta tables, over the catalog's or the profile's (repeatable)")
	return c
}
