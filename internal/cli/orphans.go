package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/tableops"
)

// tableRemoveOrphans is `floe table remove-orphans`.
func tableRemoveOrphans(a *app) *cobra.Command {
	var olderThan time.Duration
	var dryRun bool
	c := &cobra.Command{
		Use:   "remove-orphans NS.T [--older-than 1h] [--dry-run]",
		Short: "Delete files in a table's data and metadata folders that no snapshot references",
		Long: `Delete the files in a table's data and metadata folders that no snapshot, manifest or
metadata file references: what a writer killed before its commit leaves behind (floe
removes the files of its own failed attempts when it can). Only files older than
--older-than are touched, so files of writes still in progress are safe.

It never reaches outside the table: it refuses a table whose location holds the
warehouse, the catalog file or another table, and never deletes the catalog's files,
files under another table's location or files another table references.`,
		Example: "  floe table remove-orphans shop.orders --dry-run\n  floe table remove-orphans shop.orders --older-than 24h",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, cat, err := a.tableArg(ctx, args[0])
			if err != nil {
				return err
			}
			res, err := tableops.RemoveOrphans(ctx, cat, ident, tableops.OrphanOptions{OlderThan: olderThan, DryRun: dryRun})
			if res != nil {
				cols := []column{{name: "path", typ: strType}, {name: "size_bytes", typ: i64Type}, {name: "deleted", typ: boolType}}
				for _, f := range res.Files {
					cols[0].values = append(cols[0].values, f.Path)
					cols[1].values = append(cols[1].values, f.SizeBytes)
					cols[2].values = append(cols[2].values, f.Deleted)
				}
				if perr := a.printColumns(cols); perr != nil && err == nil {
					err = perr
				}
			}
			if err != nil {
				return err
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			a.infof("%s: %s %d orphan files (%d bytes)", catalog.FormatName(ident), verb, len(res.Files), res.TotalBytes)
			return nil
		},
	}
	c.Flags().DurationVar(&olderThan, "older-than", 24*time.Hour, "only files older than this")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list the orphan files without deleting them")
	return c
}
