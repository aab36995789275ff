package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/tableops"
)

func init() { extraCommands = append(extraCommands, mergeCommand) }

func mergeCommand(a *app) *cobra.Command {
	var branch string
	var props []string
	var budgetOpts func() ([]merge.Option, error)
	var ef engineFlags
	c := &cobra.Command{
		Use:   `merge "MERGE INTO NS.T [AS t] USING SOURCE [AS s] ON ... WHEN ..."`,
		Short: "Run a SQL MERGE INTO statement (Spark SQL semantics) in one commit",
		Long: `Run a MERGE INTO statement with the semantics of Spark SQL (and Iceberg's Spark
extensions):

  MERGE INTO ns.t [AS t] USING 'file' | ns.src [AS s] ON <condition>
  WHEN MATCHED [AND <cond>] THEN DELETE | UPDATE SET * | UPDATE SET col = expr, ...
  WHEN NOT MATCHED [BY TARGET] [AND <cond>] THEN INSERT * | INSERT (cols) VALUES (exprs)
  WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN DELETE | UPDATE SET col = expr, ...

The source is a quoted file path (Parquet, CSV with a header row, JSON Lines; the
format comes from the extension) or a table of the catalog, read at its current
snapshot. It is held in memory up to half of --memory-budget (default 512MiB) and
spills to temporary files beyond. File columns named like target columns are read
with the target's types; other columns keep their Parquet types, are strings in
CSV, and take the type their JSON values have (boolean, long, double or string).

ON needs an equality between a target and a source column (the join key); the
target's candidate files are pruned by the keys' values before any row is read.
Clauses are tried in order, the first whose condition holds applies. A target row
matched by several source rows fails with MERGE_CARDINALITY_VIOLATION unless there
are only NOT MATCHED clauses or a single unconditional WHEN MATCHED THEN DELETE.
Rows are written per the table's write.merge.mode (copy-on-write by default);
the data files, delete files and --property values land in one commit (the
properties also when no row changes). On any error nothing is committed.`,
		Example: `  floe merge "MERGE INTO shop.orders t USING 'changes.parquet' s ON t.id = s.id
      WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
      WHEN MATCHED THEN UPDATE SET *
      WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *" --property watermark=42
  floe merge "MERGE INTO shop.active t USING shop.orders s ON t.id = s.id
      WHEN NOT MATCHED AND s.status = 'active' THEN INSERT *" --format json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sql := args[0]
			stmt, err := expr.ParseMerge(sql)
			if err != nil {
				return usageError{fmt.Errorf("bad MERGE statement: %s", expr.FormatError(sql, err))}
			}
			p, err := parseProps(props)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			ident := table.Identifier(stmt.Target)
			tbl, err := cat.Load(ctx, ident)
			if err != nil {
				return err
			}
			push, err := ef.settings(a, sparkLayer{}, nil)
			if err != nil {
				return err
			}
			est := pushdown.EstimateOutput(tbl)
			pushStmt := sql
			if stmt.Source.Path != "" {
				est.ReadBytes = fileSize(stmt.Source.Path)
				if abs, err := filepath.Abs(stmt.Source.Path); err == nil && abs != stmt.Source.Path {
					c := *stmt
					c.Source.Path = abs
					pushStmt = c.String()
				}
			} else if st, err := cat.Load(ctx, table.Identifier(mergeSourceTable(stmt))); err == nil {
				est = est.Add(pushdown.EstimateRange(st, st.CurrentSnapshot(), nil))
			}
			d, pushed, err := a.pushCommand(ctx, push, cat, est, "", pushdown.Job{Kind: pushdown.JobSQL, Output: ident, Branch: branch,
				Statement: pushStmt, SetProperties: p})
			if err != nil {
				return err
			}
			if pushed != nil {
				return a.reportPushed("merge "+catalog.FormatName(ident), d, pushed)
			}
			a.engineNote("merge "+catalog.FormatName(ident), d, "")
			src, closeSrc, err := merge.OpenSource(ctx, cat, stmt, tbl)
			if errors.Is(err, rowfile.ErrFormat) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			defer closeSrc()
			opts := []merge.Option{merge.WithBranch(branch), merge.WithSnapshotProperties(d.Summary())}
			bo, err := budgetOpts()
			if err != nil {
				return err
			}
			opts = append(opts, bo...)
			if len(p) > 0 {
				// Properties (watermarks) advance even when no row changes.
				opts = append(opts, merge.WithCommitProperties(p), merge.WithCommitEmpty())
			}
			res, err := merge.Merge(ctx, cat, stmt, src, opts...)
			if err != nil {
				var pe expr.Positioned
				if errors.As(err, &pe) {
					err = formattedError{msg: expr.FormatError(sql, err), err: err}
				}
				if errors.Is(err, merge.ErrBadMerge) {
					return usageError{err}
				}
				return err
			}
			a.answerLost(res.AnswerLost, ident, res.CommitID)
			return a.reportMerge(tableops.Target{Catalog: cat, Ident: ident, Branch: branch}, res)
		},
	}
	c.Flags().StringVar(&branch, "branch", "", "merge into this branch")
	c.Flags().StringArrayVar(&props, "property", nil, "table property k=v committed with the merge (repeatable)")
	budgetOpts = memoryBudgetFlag(c.Flags())
	ef.register(c)
	return c
}

// formattedError shows an error with the statement line and a caret.
type formattedError struct {
	msg string
	err error
}

func (f formattedError) Error() string { return f.msg }
func (f formattedError) Unwrap() error { return f.err }

// reportMerge prints the outcome of a merge: Spark's metrics.
func (a *app) reportMerge(t tableops.Target, r *merge.MergeResult) error {
	f, _ := a.outputFormat()
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		out := map[string]any{"table": t.String(), "operation": "merge",
			"num_affected_rows": r.NumAffectedRows, "num_updated_rows": r.NumUpdatedRows,
			"num_deleted_rows": r.NumDeletedRows, "num_inserted_rows": r.NumInsertedRows,
			"rows_added": r.RowsAdded, "rows_removed": r.RowsRemoved, "files_scanned": r.FilesScanned,
			"mode": r.Mode, "snapshot_id": nil, "attempts": r.Attempts}
		if r.SnapshotID != 0 {
			out["snapshot_id"] = r.SnapshotID
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	counts := fmt.Sprintf("%d updated, %d deleted, %d inserted", r.NumUpdatedRows, r.NumDeletedRows, r.NumInsertedRows)
	switch {
	case r.SnapshotID == 0 && r.Committed:
		a.infof("merge %s: %s; no row changed, properties committed", t, counts)
		return nil
	case r.SnapshotID == 0:
		a.infof("merge %s: %s; nothing changed, no snapshot committed", t, counts)
		return nil
	}
	a.infof("merge %s: %s (%s), snapshot %d", t, counts, r.Mode, r.SnapshotID)
	return nil
}

// mergeSourceTable is the table a MERGE reads: its USING table, or the FROM
// table of its USING subquery.
func mergeSourceTable(stmt *expr.Merge) []string {
	if q := stmt.Source.Query; q != nil {
		return q.From
	}
	return stmt.Source.Table
}
