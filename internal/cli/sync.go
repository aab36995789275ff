package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pipeline"
)

func init() { extraCommands = append(extraCommands, syncCommand) }

func syncCommand(a *app) *cobra.Command {
	var keys, filter, columns, branch string
	var full, allowKey bool
	var props []string
	var ef engineFlags
	c := &cobra.Command{
		Use:   "sync SRC DST --key COL[,COL...] [--filter EXPR] [--columns a,b]",
		Short: "Keep DST equal to SELECT columns FROM SRC WHERE filter, applying only what changed",
		Long: `Keep DST equal to SELECT columns FROM SRC WHERE filter, by key. The first run copies
the filtered source (creating DST with the keys as identifier fields); later runs read
the source's changelog since the last run and apply it: inserts and updates upsert,
deletes delete, and rows that stop matching the filter (or whose filter columns
become NULL) are deleted. DST keeps the last processed source snapshot in its
watermark property, committed with the data. Nothing new: no commit. A rollback of
the source, expired history or changed options rebuild DST in full, with the reason
printed.`,
		Example: `  floe sync shop.orders shop.active_orders --key id --filter "status = 'active'" --columns id,customer,amount
  floe sync shop.orders shop.orders_copy --key id --full`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if keys == "" {
				return usagef("--key is required")
			}
			p, err := parseProps(props)
			if err != nil {
				return err
			}
			spec := pipeline.SyncSpec{Src: args[0], Dst: args[1], Keys: splitList(keys), Filter: filter, Branch: branch, Properties: p,
				AllowNonIdentifierKey: allowKey}
			if columns != "" {
				spec.Columns = splitList(columns)
			}
			t, err := pipeline.Sync(spec)
			if err != nil {
				return usageError{err}
			}
			push, err := ef.settings(a, sparkLayer{}, nil)
			if err != nil {
				return err
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			eng, err := a.connectEngine(ctx, push, cat)
			if err != nil {
				return err
			}
			r := &transform.Runner{Catalog: cat, Full: full, Logger: a.logger(), EngineSettings: push, Engine: eng}
			res, err := r.Build(ctx, t)
			if err != nil {
				return err
			}
			return a.reportBuild(res)
		},
	}
	f := c.Flags()
	f.StringVar(&keys, "key", "", "key columns, unique in the source (checked: a duplicate fails the build, nothing committed) (required)")
	f.StringVar(&filter, "filter", "", "SQL predicate the rows of DST match")
	f.StringVar(&columns, "columns", "", "columns of DST, comma-separated (must include the keys; default all)")
	f.StringVar(&branch, "branch", "", "read the source from this branch")
	f.BoolVar(&full, "full", false, "rebuild DST from the source's current state")
	f.BoolVar(&allowKey, "allow-non-identifier-key", false, "let --key differ from the identifier fields of an existing DST (the key must still be unique in the source)")
	f.StringArrayVar(&props, "property", nil, "table property k=v for DST when it is created (repeatable)")
	ef.register(c)
	return c
}

// logger is the slog logger commands log through: text on stderr, quiet
// with --quiet.
func (a *app) logger() *slog.Logger {
	level := slog.LevelInfo
	if a.quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

func (a *app) reportBuild(res *transform.Result) error {
	f, _ := a.outputFormat()
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		// The shape floe run prints for each transform.
		kind := pipeline.OutcomeFull
		switch {
		case res.Skipped:
			kind = pipeline.OutcomeSkipped
		case res.Incremental:
			kind = pipeline.OutcomeIncremental
		}
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false) // "sync a -> b" as written
		return enc.Encode(toJSON(pipeline.Outcome{Step: res.Transform, Kind: kind, Started: res.Started, Duration: res.Duration, Result: res}))
	}
	fmt.Fprintln(a.stdout, describeBuild(res))
	return nil
}

// describeBuild says in one line what a build did.
func describeBuild(res *transform.Result) string {
	var b strings.Builder
	switch {
	case res.Skipped:
		fmt.Fprintf(&b, "%s: nothing new since the last build, nothing committed", res.Transform)
	case res.Incremental:
		fmt.Fprintf(&b, "%s: incremental build", res.Transform)
	default:
		fmt.Fprintf(&b, "%s: full build (%s)", res.Transform, res.Reason)
	}
	for _, o := range res.Outputs {
		if o.Committed {
			fmt.Fprintf(&b, "; %s: +%d -%d rows", o.Table, o.RowsAdded, o.RowsRemoved)
			if o.SnapshotID != 0 {
				fmt.Fprintf(&b, ", snapshot %d", o.SnapshotID)
			}
			if o.AnswerLost {
				b.WriteString(" (the catalog's answer was lost; found on the table)")
			}
		}
	}
	fmt.Fprintf(&b, " (%s)", res.Duration.Round(1e6))
	if res.Engine == "spark" || res.EngineReason != "" {
		fmt.Fprintf(&b, "; engine %s", res.Engine)
		if res.EngineReason != "" {
			fmt.Fprintf(&b, ": %s", res.EngineReason)
		}
		if res.SparkSession != "" {
			fmt.Fprintf(&b, " (Spark %s, application %s, session %s)", res.Remote, res.SparkApp, res.SparkSession)
		}
	}
	return b.String()
}
