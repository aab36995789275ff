package cli

import (
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
)

// tableRemoveOrphans is `floe table remove-orphans`.
func tableRemoveOrphans(a *app) *cobra.Command {
	var olderThan time.Duration
	var dryRun bool
	c := &cobra.Command{
		Use:   "remove-orphans NS.T [--older-than 1h] [--dry-run]",
		Short: "Delete files under a table's location that no snapshot references",
		Long: `Delete the files in a table's location that no snapshot, manifest or metadata file
references: what a writer killed before its commit leaves behind (floe removes the
files of its own failed attempts when it can). Only files older than --older-than
are touched, so files of writes still in progress are safe.`,
		Example: "  floe table remove-orphans shop.orders --dry-run\n  floe table remove-orphans shop.orders --older-than 24h",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, ident, tbl, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			res, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(olderThan), table.WithDryRun(dryRun))
			if err != nil {
				return err
			}
			cols := []column{{name: "path", typ: strType}, {name: "size_bytes", typ: i64Type}, {name: "deleted", typ: boolType}}
			deleted := map[string]bool{}
			for _, p := range res.DeletedFiles {
				deleted[p] = true
			}
			for _, f := range res.OrphanFiles {
				cols[0].values = append(cols[0].values, f.Path)
				cols[1].values = append(cols[1].values, f.SizeBytes)
				cols[2].values = append(cols[2].values, deleted[f.Path])
			}
			if err := a.printColumns(cols); err != nil {
				return err
			}
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			a.infof("%s: %s %d orphan files (%d bytes)", catalog.FormatName(ident), verb, len(res.OrphanFiles), res.TotalSizeBytes)
			return nil
		},
	}
	c.Flags().DurationVar(&olderThan, "older-than", 24*time.Hour, "only files older than this")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "list the orphan files without deleting them")
	return c
}
