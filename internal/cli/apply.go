package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/pushdown"
)

func init() { extraCommands = append(extraCommands, applyCommand) }

func applyCommand(a *app) *cobra.Command {
	var (
		changes, keys, seq, deleteMode, branch, changeType string
		inputFormat                                        string
		props                                              []string
		allowKey                                           bool
		budgetOpts                                         func() ([]merge.Option, error)
		ef                                                 engineFlags
	)
	c := &cobra.Command{
		Use:   "apply NS.T --changes FILE --key COL[,COL...]",
		Short: "Upsert and delete rows by key from a file of changes (apply_changelog)",
		Long: `Apply change rows to a table by key, in one snapshot. Each row carries _change_type:
INSERT and UPDATE_AFTER upsert the row, DELETE removes the key, UPDATE_BEFORE is
ignored. Other columns match the table's by name (missing nullable columns are NULL,
safe widenings are applied). At most one action per key, unless --sequence-column
orders them: then the changes of a key collapse in sequence order (ties:
UPDATE_BEFORE < DELETE < UPDATE_AFTER < INSERT), so raw CDC events apply correctly.

Rows are removed copy-on-write or merge-on-read as the table's floe.write.mode or
write.merge.mode says; --delete-mode position forces position deletes (deletion vectors
on v3), --delete-mode equality writes equality deletes without reading the table's rows
(PyIceberg 0.12 cannot read tables with equality deletes: floe warns; table compact
removes them), --delete-mode auto rewrites the touched files when the changes touch at
least floe.write.auto.rewrite-ratio (default 0.2) of their rows, else writes position
deletes or deletion vectors (the snapshot summary records the choice). --property k=v
sets table properties (watermarks) in the same commit. Past half of --memory-budget
(default 512MiB) the change rows spill to temporary files, partitioned by key.

On a table with identifier fields, --key must be them: applying by another column can
give several rows one identifier value, so it is refused unless
--allow-non-identifier-key is given.`,
		Example: `  floe changelog shop.orders --per-key latest --start-snapshot-id 305 --output changes.parquet
  floe apply shop.orders_copy --changes changes.parquet --key id --property watermark.source-snapshot-id=912
  floe apply shop.orders --changes cdc.jsonl --key id --sequence-column seq --delete-mode equality`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if changes == "" || keys == "" {
				return usagef("--changes and --key are required")
			}
			dm, err := merge.ParseDeleteMode(deleteMode)
			if err != nil {
				return usageError{err}
			}
			p, err := parseProps(props)
			if err != nil {
				return err
			}
			ident, cat, err := a.tableArg(ctx, args[0])
			if err != nil {
				return err
			}
			tbl, err := cat.Load(ctx, ident)
			if err != nil {
				return err
			}
			push, err := ef.settings(a, sparkLayer{}, nil)
			if err != nil {
				return err
			}
			unsupported := ""
			if deleteMode != "" {
				unsupported = "--delete-mode: Spark removes rows as the table's write.merge.mode says"
			}
			abs, _ := filepath.Abs(changes)
			d, pushed, err := a.pushCommand(ctx, push, cat, pushdown.Estimate{ReadBytes: fileSize(changes)}.Add(pushdown.EstimateOutput(tbl)), unsupported,
				pushdown.Job{Kind: pushdown.JobApply, Output: ident, Branch: branch, Keys: splitList(keys), ChangesPath: abs,
					SequenceColumn: seq, ChangeTypeColumn: changeType, SetProperties: p})
			if err != nil {
				return err
			}
			if pushed != nil {
				return a.reportPushed("apply "+catalog.FormatName(ident), d, pushed)
			}
			a.engineNote("apply "+catalog.FormatName(ident), d, "")
			target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
			if err != nil {
				return err
			}
			format, err := rowfile.ParseFormat(inputFormat)
			if err != nil {
				return usageError{fmt.Errorf("--input-format: %w", err)}
			}
			if changes == "-" && format == rowfile.FormatAuto {
				return usagef("--changes - (stdin) has no file name to tell its format by: pass --input-format csv, jsonl or parquet")
			}
			r, err := rowfile.Open(ctx, changes, rowfile.ReadOptions{Target: target, Format: format, Extra: merge.ChangeColumns(target, changeType, seq)})
			if err != nil {
				return err
			}
			defer r.Close()
			opts := []merge.Option{merge.WithDeleteMode(dm), merge.WithBranch(branch), merge.WithSnapshotProperties(d.Summary())}
			bo, err := budgetOpts()
			if err != nil {
				return err
			}
			opts = append(opts, bo...)
			if seq != "" {
				opts = append(opts, merge.WithSequenceColumn(seq))
			}
			if changeType != "" {
				opts = append(opts, merge.WithChangeTypeColumn(changeType))
			}
			if allowKey {
				opts = append(opts, merge.WithNonIdentifierKey())
			}
			if len(p) > 0 {
				opts = append(opts, merge.WithCommitProperties(p), merge.WithCommitEmpty())
			}
			prog := a.progress("applying")
			res, err := merge.Apply(ctx, cat, ident, r.Schema(), countRows(r.All(), prog), splitList(keys), opts...)
			prog.done()
			if err != nil {
				return err
			}
			a.answerLost(res.AnswerLost, ident, res.CommitID)
			if res.Committed && strings.Contains(res.Mode, "equality") {
				a.warnEqualityDeletes(catalog.FormatName(ident))
			}
			return a.reportApply(catalog.FormatName(ident), res)
		},
	}
	f := c.Flags()
	f.StringVar(&changes, "changes", "", "file of change rows: Parquet, CSV or JSON Lines; - for stdin (required)")
	f.StringVar(&inputFormat, "input-format", "", "format of --changes: csv, jsonl or parquet (default: from its extension; required for stdin)")
	f.StringVar(&keys, "key", "", "key columns, comma-separated: the table's identifier fields when it has some (required)")
	f.BoolVar(&allowKey, "allow-non-identifier-key", false, "apply by a --key that is not the table's identifier (its values can then repeat)")
	f.StringVar(&seq, "sequence-column", "", "collapse the changes of each key in this column's order")
	f.StringVar(&changeType, "change-type-column", "", "column holding the change type (default _change_type)")
	f.StringVar(&deleteMode, "delete-mode", "", "position, equality or auto (default: the table's floe.write.mode or write.merge.mode)")
	f.StringArrayVar(&props, "property", nil, "table property k=v committed with the changes (repeatable)")
	f.StringVar(&branch, "branch", "", "write to this branch")
	budgetOpts = memoryBudgetFlag(f)
	ef.register(c)
	return c
}

func countRows(seq func(func(arrow.RecordBatch, error) bool), p *progress) func(func(arrow.RecordBatch, error) bool) {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range seq {
			if err == nil {
				p.add(rec.NumRows())
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

func (a *app) reportApply(name string, res *merge.Result) error {
	f, _ := a.outputFormat()
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		out := map[string]any{"table": name, "upserts": res.Upserts, "deletes": res.Deletes, "matched_keys": res.Matched,
			"rows_added": res.RowsAdded, "rows_removed": res.RowsRemoved, "mode": res.Mode, "committed": res.Committed,
			"snapshot_id": nil, "attempts": res.Attempts}
		if res.SnapshotID != 0 {
			out["snapshot_id"] = res.SnapshotID
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	if !res.Committed {
		a.infof("apply %s: no changes, nothing committed", name)
		return nil
	}
	snap := "properties only"
	if res.SnapshotID != 0 {
		snap = fmt.Sprintf("snapshot %d", res.SnapshotID)
	}
	a.infof("apply %s: %d upserts, %d deletes (%d keys found), +%d -%d rows (%s), %s",
		name, res.Upserts, res.Deletes, res.Matched, res.RowsAdded, res.RowsRemoved, res.Mode, snap)
	return nil
}
