package cli

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
)

func changelogCommand(a *app) *cobra.Command {
	var (
		startID, endID        int64
		startTS, endTS, ref   string
		idCols, columns       string
		where, perKey, output string
		computeUpdates        bool
		netChanges            bool
	)
	c := &cobra.Command{
		Use:   "changelog NS.T",
		Short: "The row-level changes of a table between two snapshots",
		Long: `Print the rows inserted, deleted and updated between two snapshots, with the
semantics of Iceberg's create_changelog_view: the start is exclusive and the end
inclusive (default: from the first snapshot to the head of the branch), replace
snapshots (compactions) report nothing, rows copied unchanged by a copy-on-write
rewrite (carry-overs) are removed, and with identifier columns a DELETE and an
INSERT of one identifier in one snapshot become UPDATE_BEFORE and UPDATE_AFTER.
Unlike the reference, tables with position deletes, equality deletes and deletion
vectors are supported.

Output: the table's columns, then _change_type, _change_ordinal (0 for the oldest
snapshot in range) and _commit_snapshot_id.

--compute-updates defaults to on when --key is given (Iceberg's identifier_columns);
the key defaults to the table's identifier fields. --per-key latest
keeps the latest action per identifier (UPDATE_BEFORE dropped); --per-key net gives
the net change per identifier from the start to the end state. --net-changes is
Iceberg's net_changes over whole rows.`,
		Example: `  floe changelog shop.orders --start-snapshot-id 3051729675574597004 --format jsonl
  floe changelog shop.orders --start-timestamp 2024-05-01T00:00:00Z --key id
  floe changelog shop.orders --per-key latest --where "status <> 'test'" --output changes.parquet`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, _, tbl, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			var o changelog.Options
			fl := cmd.Flags()
			if fl.Changed("start-snapshot-id") {
				o.StartSnapshotID = &startID
			}
			if fl.Changed("end-snapshot-id") {
				o.EndSnapshotID = &endID
			}
			if startTS != "" {
				ms, err := parseTime(startTS)
				if err != nil {
					return err
				}
				o.StartTimestampMs = &ms
			}
			if endTS != "" {
				ms, err := parseTime(endTS)
				if err != nil {
					return err
				}
				o.EndTimestampMs = &ms
			}
			o.Ref = ref
			if idCols != "" {
				o.IdentifierColumns = splitList(idCols)
			}
			if fl.Changed("compute-updates") {
				o.ComputeUpdates = &computeUpdates
			}
			o.NetChanges = netChanges
			if o.PerKey, err = changelog.ParsePerKey(perKey); err != nil {
				return usageError{err}
			}
			if columns != "" {
				o.Columns = splitList(columns)
			}
			cl, err := changelog.Open(ctx, tbl, o)
			if err != nil {
				return err
			}
			if where != "" {
				f, err := changelogFilter(cl, where)
				if err != nil {
					return err
				}
				o.RowFilter = f
				if cl, err = changelog.Open(ctx, tbl, o); err != nil {
					return err
				}
			}
			n, err := a.writeRows(output, cl.Schema(), cl.Rows(ctx))
			if err != nil {
				return err
			}
			if output != "" {
				a.infof("wrote %s to %s", plural(n, "change"), output)
			}
			return nil
		},
	}
	f := c.Flags()
	f.Int64Var(&startID, "start-snapshot-id", 0, "exclusive start snapshot")
	f.Int64Var(&endID, "end-snapshot-id", 0, "inclusive end snapshot")
	f.StringVar(&startTS, "start-timestamp", "", "start time (epoch ms or ISO-8601); a snapshot at exactly this time is excluded")
	f.StringVar(&endTS, "end-timestamp", "", "end time (epoch ms or ISO-8601)")
	f.StringVar(&ref, "ref", "", "branch or tag whose history is read (default main)")
	keyFlag(c, &idCols, "key (identifier) columns, comma-separated (default: the table's identifier fields)", "identifier-columns")
	f.BoolVar(&computeUpdates, "compute-updates", false, "pair DELETE and INSERT of one identifier into UPDATE_BEFORE/UPDATE_AFTER")
	f.BoolVar(&netChanges, "net-changes", false, "net changes over whole rows across the range")
	f.StringVar(&perKey, "per-key", "", "per-identifier view: latest or net")
	f.StringVar(&where, "where", "", "SQL predicate on the output rows (metadata columns included)")
	f.StringVar(&columns, "columns", "", "data columns to output, comma-separated")
	f.StringVar(&output, "output", "", "write to this file (--format parquet needs it)")
	return c
}

// changelogFilter compiles --where against the changelog's full rows (all
// table columns and the metadata columns).
func changelogFilter(cl *changelog.Changelog, src string) (func(context.Context, arrow.RecordBatch) (arrow.RecordBatch, error), error) {
	p, err := expr.CompileRowPredicate(cl.FullSchema(), src)
	if err != nil {
		return nil, exprError("--where", err)
	}
	return p.OnRows.Filter, nil
}
