package cli

import (
	"github.com/spf13/cobra"

	"github.com/floedata/floe/sqltx"
)

func init() { extraCommands = append(extraCommands, queryCommand) }

func queryCommand(a *app) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "query SQL",
		Short: "Run a SQL query over Iceberg tables and print or write its result",
		Long: `Run a SELECT over the current state of Iceberg tables named namespace.table and
Delta Lake tables named delta."PATH" (at their latest version), in DuckDB's SQL dialect
(docs/sql-transforms.md), and print the result in --format or write it to --output. It
needs floe built with cgo (DuckDB).`,
		Example: `  floe query "SELECT status, count(*) AS n FROM shop.orders GROUP BY status ORDER BY n DESC"
  floe query "SELECT o.id, o.amount, l.amount AS logged FROM shop.orders o JOIN shop.orders_log l ON o.id = l.id" --output joined.parquet`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if !sqltx.Available() {
				return sqltx.ErrNoEngine
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			schema, rows, done, err := sqltx.Query(ctx, cat, args[0])
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
	return c
}
