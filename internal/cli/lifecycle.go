package cli

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/tableops"
)

// lifecycleCommands are the table commands that drop, rename, evolve,
// tag, expire and inspect tables.
func lifecycleCommands(a *app) []*cobra.Command {
	cmds := []*cobra.Command{tableDrop(a), tableRename(a), tableProperties(a), tableAlter(a), tableTag(a), tableExpire(a)}
	for _, what := range tableops.MetaTables {
		cmds = append(cmds, tableMeta(a, what))
	}
	return cmds
}

// printJSON prints v as one JSON document when --format is json or jsonl
// and reports whether it did.
func (a *app) printJSON(v any) (bool, error) {
	f, err := a.outputFormat()
	if err != nil {
		return false, err
	}
	if f != rowfile.OutputJSON && f != rowfile.OutputJSONL {
		return false, nil
	}
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	if f == rowfile.OutputJSON {
		enc.SetIndent("", "  ")
	}
	return true, enc.Encode(v)
}

func tableDrop(a *app) *cobra.Command {
	var purge, ifExists bool
	c := &cobra.Command{
		Use:   "drop NS.T [--purge]",
		Short: "Drop a table (DROP TABLE); --purge deletes its files too",
		Long: `Remove a table from the catalog, as Spark's DROP TABLE. Its data and metadata files
stay where they are unless --purge (DROP TABLE ... PURGE) deletes every file its
metadata references and the folders left empty. Tables registered with --path-root
are never purged.`,
		Example: "  floe table drop shop.orders_old\n  floe table drop shop.scratch --purge",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, cat, err := a.tableArg(ctx, args[0])
			if err != nil {
				return err
			}
			if ifExists {
				if ok, err := cat.Iceberg().CheckTableExists(ctx, ident); err == nil && !ok {
					a.infof("table %s does not exist; nothing dropped", catalog.FormatName(ident))
					return nil
				}
			}
			o, err := tableops.Drop(ctx, cat, ident, purge)
			if err != nil {
				return err
			}
			if o.AnswerLost {
				a.warnf("the catalog's answer to the drop of %s was lost; floe reloaded it and found the table gone: it was dropped", catalog.FormatName(ident))
			}
			if o.PurgeErr != nil {
				a.warnf("%v", o.PurgeErr)
			}
			if ok, err := a.printJSON(map[string]any{"table": catalog.FormatName(ident), "dropped": true, "purged": o.Purged, "location": o.Location}); ok || err != nil {
				return err
			}
			if o.Purged {
				a.infof("dropped table %s and deleted its files under %s", catalog.FormatName(ident), o.Location)
			} else {
				a.infof("dropped table %s (its files stay under %s)", catalog.FormatName(ident), o.Location)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&purge, "purge", false, "delete the table's data and metadata files too")
	c.Flags().BoolVar(&ifExists, "if-exists", false, "succeed when the table does not exist")
	return c
}

func tableRename(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "rename NS.T NEW",
		Short:   "Rename a table (ALTER TABLE ... RENAME TO); NEW is ns.t, or t in the same namespace",
		Example: "  floe table rename shop.orders shop.orders_2024\n  floe table rename shop.orders_2024 archive.orders",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			from, err := catalog.ParseTableName(args[0])
			if err != nil {
				return usageError{err}
			}
			parts, err := catalog.ParseName(args[1])
			if err != nil {
				return usageError{err}
			}
			to := table.Identifier(parts)
			if len(parts) == 1 {
				to = append(append(table.Identifier{}, from[:len(from)-1]...), parts[0])
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			o, err := tableops.Rename(ctx, cat, from, to)
			if err != nil {
				return err
			}
			if o.AnswerLost {
				a.warnf("the catalog's answer to the rename of %s was lost; floe reloaded it and found the table under %s: it was renamed", catalog.FormatName(from), catalog.FormatName(to))
			}
			if ok, err := a.printJSON(map[string]any{"table": catalog.FormatName(from), "renamed_to": catalog.FormatName(to)}); ok || err != nil {
				return err
			}
			a.infof("renamed table %s to %s", catalog.FormatName(from), catalog.FormatName(to))
			return nil
		},
	}
}

func namespaceDrop(a *app) *cobra.Command {
	var cascade, ifExists bool
	c := &cobra.Command{
		Use:     "drop NS [--cascade]",
		Short:   "Drop a namespace (DROP NAMESPACE); --cascade drops its tables first",
		Example: "  floe namespace drop scratch\n  floe namespace drop staging --cascade",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ns, err := catalog.ParseNamespace(args[0])
			if err != nil {
				return usageError{err}
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			if ifExists {
				if ok, err := cat.Iceberg().CheckNamespaceExists(ctx, ns); err == nil && !ok {
					a.infof("namespace %s does not exist; nothing dropped", catalog.FormatName(ns))
					return nil
				}
			}
			dropped, err := tableops.DropNamespace(ctx, cat, ns, cascade)
			for _, t := range dropped {
				a.infof("dropped table %s", catalog.FormatName(t))
			}
			if err != nil {
				return err
			}
			names := []string{}
			for _, t := range dropped {
				names = append(names, catalog.FormatName(t))
			}
			if ok, err := a.printJSON(map[string]any{"namespace": catalog.FormatName(ns), "dropped": true, "tables_dropped": names}); ok || err != nil {
				return err
			}
			a.infof("dropped namespace %s", catalog.FormatName(ns))
			return nil
		},
	}
	c.Flags().BoolVar(&cascade, "cascade", false, "drop the namespace's tables too (their files stay)")
	c.Flags().BoolVar(&ifExists, "if-exists", false, "succeed when the namespace does not exist")
	return c
}

func tableProperties(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "properties",
		Short: "List, set and unset table properties (SET/UNSET TBLPROPERTIES)",
		Example: `  floe table properties list shop.orders
  floe table properties set shop.orders write.delete.mode=merge-on-read commit.retry.num-retries=10
  floe table properties unset shop.orders commit.retry.num-retries`,
	}
	list := &cobra.Command{
		Use:     "list NS.T",
		Short:   "List a table's properties",
		Example: "  floe table properties list shop.orders --format jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, _, tbl, err := a.loadTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printProperties(tbl)
		},
	}
	set := &cobra.Command{
		Use:   "set NS.T KEY=VALUE...",
		Short: "Set table properties in one commit (format-version=N upgrades the table)",
		Example: `  floe table properties set shop.orders write.delete.mode=merge-on-read
  floe table properties set shop.orders format-version=3`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, err := catalog.ParseTableName(args[0])
			if err != nil {
				return usageError{err}
			}
			props, err := parseKVs(args[1:])
			if err != nil {
				return err
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			o, err := tableops.SetProperties(ctx, cat, ident, props)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			keys := make([]string, 0, len(props))
			for k := range props {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			a.infof("set %s on %s", strings.Join(keys, ", "), catalog.FormatName(ident))
			return nil
		},
	}
	var ifExists bool
	unset := &cobra.Command{
		Use:     "unset NS.T KEY...",
		Short:   "Remove table properties in one commit",
		Example: "  floe table properties unset shop.orders commit.retry.num-retries",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, cat, err := a.tableArg(ctx, args[0])
			if err != nil {
				return err
			}
			o, err := tableops.UnsetProperties(ctx, cat, ident, args[1:], ifExists)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			a.infof("removed %s from %s", strings.Join(args[1:], ", "), catalog.FormatName(ident))
			return nil
		},
	}
	unset.Flags().BoolVar(&ifExists, "if-exists", false, "ignore keys the table does not have")
	cmd.AddCommand(list, set, unset)
	return cmd
}

func parseKVs(kvs []string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("%q: want key=value", kv)
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func (a *app) printProperties(tbl *table.Table) error {
	keys := make([]string, 0, len(tbl.Properties()))
	for k := range tbl.Properties() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	cols := []column{{name: "key", typ: strType}, {name: "value", typ: strType}}
	for _, k := range keys {
		cols[0].values = append(cols[0].values, k)
		cols[1].values = append(cols[1].values, tbl.Properties()[k])
	}
	return a.printColumns(cols)
}

func tableAlter(a *app) *cobra.Command {
	var (
		add, drop, rename, alterType, dropNotNull []string
		setID                                     string
		dropID                                    bool
		addPart, dropPart                         []string
	)
	c := &cobra.Command{
		Use:   "alter NS.T [changes]",
		Short: "Evolve a table's schema and partition spec in one commit (ALTER TABLE)",
		Long: `Change a table's schema and partition spec in one commit, with Iceberg's rules (the
data files are not rewritten):

  --add-column "name type [not null] [comment 'text'] [first | after col]"
                          ADD COLUMN; "parent.name type" adds a field to a struct.
                          New columns must be nullable: written rows have no value.
  --drop-column col       DROP COLUMN (not an identifier field, not a source of the
                          current partition spec unless that field is dropped too)
  --rename-column "a TO b" RENAME COLUMN (a=b works too)
  --alter-type "col type" ALTER COLUMN col TYPE type: widening only (int to long,
                          float to double, decimal(P,S) to decimal(P2,S), P2 > P)
  --drop-not-null col     ALTER COLUMN col DROP NOT NULL (make it optional)
  --set-key a,b           SET IDENTIFIER FIELDS: the key (required, primitive, not float)
  --drop-key              DROP IDENTIFIER FIELDS
  --add-partition-field "bucket(16, id)"   ADD PARTITION FIELD (new data only)
  --drop-partition-field "day(ts)"         DROP PARTITION FIELD (by transform or name)

Every flag repeats. A change Iceberg does not allow is refused with the reason, and
nothing is committed.`,
		Example: `  floe table alter shop.orders --add-column "note string comment 'free text' after status"
  floe table alter shop.orders --alter-type "qty long" --drop-not-null customer
  floe table alter shop.orders --rename-column "amount TO total" --drop-column legacy
  floe table alter shop.orders --set-key id,region
  floe table alter shop.orders --add-partition-field "bucket(16, id)" --drop-partition-field "day(ts)"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, err := catalog.ParseTableName(args[0])
			if err != nil {
				return usageError{err}
			}
			var alt tableops.Alter
			for _, s := range add {
				col, err := ddl.ParseColumn(s)
				if err != nil {
					return usageError{fmt.Errorf("--add-column: %w", err)}
				}
				alt.AddColumns = append(alt.AddColumns, col)
			}
			for _, s := range rename {
				from, to, err := ddl.ParseNamePair(s)
				if err != nil {
					return usageError{fmt.Errorf("--rename-column: %w", err)}
				}
				alt.RenameColumns = append(alt.RenameColumns, [2]string{from, to})
			}
			for _, s := range alterType {
				col, err := ddl.ParseColumn(s)
				if err != nil {
					return usageError{fmt.Errorf("--alter-type: %w", err)}
				}
				alt.AlterTypes = append(alt.AlterTypes, col)
			}
			for _, s := range dropNotNull {
				alt.DropNotNull = append(alt.DropNotNull, splitList(s)...)
			}
			for _, s := range drop {
				alt.DropColumns = append(alt.DropColumns, splitList(s)...)
			}
			switch {
			case dropID && setID != "":
				return usagef("give --set-key or --drop-key, not both")
			case dropID:
				alt.SetIdentifier = []string{}
			case setID != "":
				alt.SetIdentifier = splitList(setID)
			}
			alt.AddPartitionFields = addPart
			alt.DropPartitionFields = dropPart
			if alt.Empty() {
				return usagef("no change given (see floe table alter --help)")
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			o, err := tableops.AlterTable(ctx, cat, ident, alt)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			tbl := o.Table
			if ok, err := a.printJSON(map[string]any{"table": catalog.FormatName(ident), "schema_id": tbl.Schema().ID, "spec_id": tbl.Metadata().DefaultPartitionSpec()}); ok || err != nil {
				return err
			}
			a.infof("altered %s: schema %d, partition spec %d", catalog.FormatName(ident), tbl.Schema().ID, tbl.Metadata().DefaultPartitionSpec())
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVar(&add, "add-column", nil, `add a column: "name type [not null] [comment 'text'] [first|after col]"`)
	f.StringArrayVar(&drop, "drop-column", nil, "drop a column")
	f.StringArrayVar(&rename, "rename-column", nil, `rename a column: "old TO new" or old=new`)
	f.StringArrayVar(&alterType, "alter-type", nil, `widen a column's type: "col type"`)
	f.StringArrayVar(&dropNotNull, "drop-not-null", nil, "make a column optional")
	f.StringVar(&setID, "set-key", "", "set the key (the identifier fields), comma-separated")
	f.BoolVar(&dropID, "drop-key", false, "drop the key (the identifier fields)")
	f.StringArrayVar(&addPart, "add-partition-field", nil, `add a partition field such as "bucket(16, id)" or "day(ts)"`)
	f.StringArrayVar(&dropPart, "drop-partition-field", nil, `drop a partition field, by transform ("day(ts)") or name ("ts_day")`)
	return c
}

func tableTag(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "tag",
		Short:   "Create, list and drop tags (named snapshots)",
		Example: "  floe table tag create shop.orders eom-2024-05\n  floe table tag list shop.orders\n  floe table tag drop shop.orders eom-2024-05",
	}
	var snapshot int64
	var retain string
	create := &cobra.Command{
		Use:   "create NS.T NAME [--snapshot ID] [--retain DURATION]",
		Short: "Tag a snapshot (default: the current one), as CREATE TAG ... AS OF VERSION ... RETAIN",
		Example: `  floe table tag create shop.orders eom-2024-05
  floe table tag create shop.orders audit-1 --snapshot 3051729675574597004 --retain 30d`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, err := catalog.ParseTableName(args[0])
			if err != nil {
				return usageError{err}
			}
			var keep time.Duration
			if retain != "" {
				if keep, err = parseDuration(retain); err != nil {
					return usagef("--retain %q: %v", retain, err)
				}
			}
			var at *int64
			if cmd.Flags().Changed("snapshot") {
				at = &snapshot
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			o, err := tableops.CreateTag(ctx, cat, ident, args[1], at, keep)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			a.infof("created tag %s of %s at snapshot %d", args[1], catalog.FormatName(ident), o.SnapshotID)
			return nil
		},
	}
	create.Flags().Int64Var(&snapshot, "snapshot", 0, "snapshot to tag")
	create.Flags().StringVar(&retain, "retain", "", "let snapshot expiry drop the tag once it is this old (e.g. 30d, 12h)")
	list := &cobra.Command{
		Use:     "list NS.T",
		Short:   "List a table's tags",
		Example: "  floe table tag list shop.orders --format jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, _, tbl, err := a.loadTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			type tag struct {
				name string
				id   int64
				age  *int64
			}
			var tags []tag
			for n, r := range tbl.Metadata().Refs() {
				if r.SnapshotRefType == table.TagRef {
					tags = append(tags, tag{n, r.SnapshotID, r.MaxRefAgeMs})
				}
			}
			sort.Slice(tags, func(i, j int) bool { return tags[i].name < tags[j].name })
			cols := []column{{name: "name", typ: strType}, {name: "snapshot_id", typ: i64Type}, {name: "max_ref_age_ms", typ: i64Type}}
			for _, t := range tags {
				cols[0].values = append(cols[0].values, t.name)
				cols[1].values = append(cols[1].values, t.id)
				cols[2].values = append(cols[2].values, t.age)
			}
			return a.printColumns(cols)
		},
	}
	var ifExists bool
	drop := &cobra.Command{
		Use:     "drop NS.T NAME",
		Short:   "Drop a tag (DROP TAG)",
		Example: "  floe table tag drop shop.orders eom-2024-05",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, cat, err := a.tableArg(ctx, args[0])
			if err != nil {
				return err
			}
			o, err := tableops.DropTag(ctx, cat, ident, args[1], ifExists)
			if err != nil {
				return err
			}
			if o != nil {
				a.answerLost(o.AnswerLost, ident, o.CommitID)
				a.infof("dropped tag %s of %s", args[1], catalog.FormatName(ident))
			} else {
				a.infof("table %s has no tag %s; nothing dropped", catalog.FormatName(ident), args[1])
			}
			return nil
		},
	}
	drop.Flags().BoolVar(&ifExists, "if-exists", false, "succeed when the tag does not exist")
	cmd.AddCommand(create, list, drop)
	return cmd
}

// parseDuration parses a Go duration or a number of days ("30d").
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n float64
		if _, err := fmt.Sscanf(d, "%g", &n); err == nil && n >= 0 {
			return time.Duration(n * float64(24*time.Hour)), nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration such as 30d, 12h or 90m")
	}
	return d, nil
}

func tableExpire(a *app) *cobra.Command {
	var olderThan string
	var retainLast int
	var force, dryRun bool
	c := &cobra.Command{
		Use:   "expire-snapshots NS.T [--older-than T] [--retain-last N]",
		Short: "Remove old snapshots and the files only they use (expire_snapshots)",
		Long: `Remove snapshots that no branch or tag references, committed before --older-than
(a time, or an age such as 7d; default: the table's history.expire.max-snapshot-age-ms,
5 days), keeping at least --retain-last ancestors of each branch head (default: the
table's history.expire.min-snapshots-to-keep, 1), then delete the files only they
referenced.

A snapshot that a watermark of a known output still needs (a table of the same
catalog that floe built from this one, whose next incremental build reads it) is
kept, and floe says which output holds it; --force expires it anyway (that output's
next build then rebuilds in full). --dry-run only reports.`,
		Example: `  floe table expire-snapshots shop.orders --older-than 7d --retain-last 10
  floe table expire-snapshots shop.orders --older-than 2024-05-01T00:00:00Z --dry-run
  floe table expire-snapshots shop.orders --retain-last 1 --older-than 0s --force`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, err := catalog.ParseTableName(args[0])
			if err != nil {
				return usageError{err}
			}
			var o tableops.ExpireOptions
			o.Force, o.DryRun = force, dryRun
			if olderThan != "" {
				if d, err := parseDuration(olderThan); err == nil {
					o.OlderThan = time.Now().Add(-d)
				} else {
					ms, err := parseTime(olderThan)
					if err != nil {
						return usagef("--older-than %q: want a time (ISO-8601 or epoch ms) or an age such as 7d", olderThan)
					}
					o.OlderThan = time.UnixMilli(ms)
				}
			}
			if cmd.Flags().Changed("retain-last") {
				if retainLast < 1 {
					return usagef("--retain-last %d: want at least 1", retainLast)
				}
				o.RetainLast = retainLast
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			out, err := tableops.ExpireSnapshots(ctx, cat, ident, o)
			if err != nil {
				return err
			}
			a.answerLost(out.AnswerLost, ident, out.CommitID)
			return a.reportExpire(catalog.FormatName(ident), o, out)
		},
	}
	f := c.Flags()
	f.StringVar(&olderThan, "older-than", "", "expire snapshots committed before this time or older than this age (7d, 12h)")
	f.IntVar(&retainLast, "retain-last", 0, "keep at least this many ancestors of each branch head")
	f.BoolVar(&force, "force", false, "expire snapshots that watermarks of known outputs still need")
	f.BoolVar(&dryRun, "dry-run", false, "report what would be expired, change nothing")
	return c
}

type holdJSON struct {
	Output    string  `json:"output"`
	Transform string  `json:"transform,omitempty"`
	Watermark string  `json:"watermark"`
	Needs     []int64 `json:"needs_snapshot_ids"`
}

func holdsJSON(hs []tableops.Hold) []holdJSON {
	out := []holdJSON{}
	for _, h := range hs {
		out = append(out, holdJSON{h.Output, h.Transform, h.Watermark, h.Needs})
	}
	return out
}

func (a *app) reportExpire(name string, o tableops.ExpireOptions, out *tableops.ExpireOutcome) error {
	ids := func(v []int64) []int64 {
		if v == nil {
			return []int64{}
		}
		return v
	}
	refs := out.RefsRemoved
	if refs == nil {
		refs = []string{}
	}
	if ok, err := a.printJSON(map[string]any{"table": name, "dry_run": o.DryRun, "expired_snapshot_ids": ids(out.Expired),
		"kept_snapshot_ids": ids(out.Kept), "kept_for": holdsJSON(out.KeptFor), "forced": holdsJSON(out.Forced), "refs_removed": refs}); ok || err != nil {
		return err
	}
	verb := "expired"
	if o.DryRun {
		verb = "would expire"
	}
	a.infof("%s %s of %s", verb, plural(int64(len(out.Expired)), "snapshot"), name)
	for _, id := range out.Expired {
		fmt.Fprintln(a.stdout, id)
	}
	for _, r := range out.RefsRemoved {
		a.infof("%s ref %s (past its max-ref-age)", map[bool]string{true: "would drop", false: "dropped"}[o.DryRun], r)
	}
	if out.FilesKept && len(out.Expired) > 0 && !o.DryRun {
		a.infof("the expired snapshots' files stay: %s", out.FilesKeptWhy)
	}
	if out.CleanupErr != nil {
		a.warnf("%v", out.CleanupErr)
	}
	if len(out.Kept) > 0 {
		a.warnf("kept %s that watermarks still need (--force expires them; those outputs then rebuild in full): %s",
			plural(int64(len(out.Kept)), "snapshot"), tableops.DescribeHolds(out.KeptFor, out.Kept))
	}
	if len(out.Forced) > 0 {
		a.warnf("expired snapshots that watermarks needed; their next builds rebuild in full: %s", tableops.DescribeHolds(out.Forced, out.Expired))
	}
	return nil
}

// warnf prints a warning on stderr, also with --quiet.
func (a *app) warnf(format string, args ...any) {
	fmt.Fprintf(a.stderr, "warning: "+format+"\n", args...)
}

func tableMeta(a *app, what string) *cobra.Command {
	var all bool
	var output, columns string
	short := map[string]string{
		tableops.MetaFiles:      "List the live data and delete files of the current snapshot (t.files)",
		tableops.MetaManifests:  "List the manifests of the current snapshot (t.manifests)",
		tableops.MetaHistory:    "List every snapshot that was current, when, and whether it is an ancestor of the current one (t.history)",
		tableops.MetaPartitions: "List partitions with their row, file and delete counts (t.partitions)",
	}[what]
	c := &cobra.Command{
		Use:   what + " NS.T",
		Short: short,
		Example: fmt.Sprintf("  floe table %s shop.orders\n  floe table %s shop.orders --format jsonl", what, what) + map[string]string{
			tableops.MetaFiles:      "\n  floe table files shop.orders --columns content,file_path,record_count",
			tableops.MetaManifests:  "\n  floe table manifests shop.orders --columns path,added_data_files_count",
			tableops.MetaHistory:    "\n  floe table history shop.orders --columns snapshot_id,is_current_ancestor",
			tableops.MetaPartitions: "\n  floe table partitions shop.orders --columns partition,record_count,file_count",
		}[what],
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, _, tbl, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			schema, seq, err := tableops.Inspect(ctx, tbl, what, all, splitList(columns)...)
			if err != nil {
				return err
			}
			_, err = a.writeRows(output, schema, seq)
			return err
		},
	}
	if what == tableops.MetaFiles || what == tableops.MetaManifests {
		c.Flags().BoolVar(&all, "all-columns", false, "include the per-column statistics and partition summaries")
	}
	c.Flags().StringVar(&output, "output", "", "write to this file (format from its extension unless --format)")
	c.Flags().StringVar(&columns, "columns", "", "columns to output, comma-separated")
	return c
}
