package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/tableops"
)

func tableCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "table",
		Short: "Create, inspect, read and change Iceberg tables",
		Example: `  floe table create shop.orders --schema "id long not null, status string, ts timestamptz" --key id --partition-by "day(ts)"
  floe table append shop.orders orders.parquet
  floe table scan shop.orders --where "status = 'open'" --format jsonl`,
	}
	cmd.AddCommand(tableCreate(a), tableList(a), tableDescribe(a), tableSnapshots(a), tableScan(a),
		tableAppend(a), tableDelete(a), tableUpdate(a), tableOverwrite(a), tableCompact(a),
		tableBranch(a), tableRollback(a), tableSetCurrent(a), tableRegister(a), tableRemoveOrphans(a))
	cmd.AddCommand(lifecycleCommands(a)...)
	return cmd
}

func tableCreate(a *app) *cobra.Command {
	var schema, identifier, partition string
	var formatVersion int
	var props []string
	c := &cobra.Command{
		Use:   "create NS.T --schema COLUMNS",
		Short: "Create a table",
		Long: `Create a table. COLUMNS is a comma-separated list of "name type [not null]"; types:
boolean, int, long, float, double, decimal(p,s), date, time, timestamp (with zone, as in
Spark SQL; also timestamptz), timestamp_ntz (without zone), timestamp_ns, timestamptz_ns,
string, uuid, binary, fixed(n), list<T>, map<K,V>, struct<name: T, ...>. Row-level changes are copy-on-write unless the table sets
Iceberg's write.delete.mode / write.update.mode / write.merge.mode to merge-on-read.`,
		Example: `  floe table create shop.orders --schema "id long not null, data string, price decimal(10,2), ts timestamptz, tags list<string>" \
      --key id --partition-by "day(ts), bucket(16,id)" --format-version 3 \
      --property write.delete.mode=merge-on-read`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ident, err := catalog.ParseTableName(args[0])
			if err != nil {
				return usageError{err}
			}
			if schema == "" {
				return usagef("--schema is required")
			}
			var ids []string
			if identifier != "" {
				for _, s := range strings.Split(identifier, ",") {
					ids = append(ids, strings.TrimSpace(s))
				}
			}
			sc, err := ddl.ParseSchema(schema, ids)
			if err != nil {
				return usageError{fmt.Errorf("--schema: %w", err)}
			}
			spec, err := ddl.ParsePartitionSpec(partition, sc)
			if err != nil {
				return usageError{fmt.Errorf("--partition-by: %w", err)}
			}
			p, err := parseProps(props)
			if err != nil {
				return err
			}
			if formatVersion != 0 {
				if formatVersion < 1 || formatVersion > 3 {
					return usagef("--format-version %d: want 1, 2 or 3", formatVersion)
				}
				p["format-version"] = fmt.Sprint(formatVersion)
			}
			cat, err := a.Catalog(cmd.Context())
			if err != nil {
				return err
			}
			tbl, err := tableops.Create(cmd.Context(), cat, ident, sc, spec, p)
			if err != nil {
				return err
			}
			a.infof("created table %s (format v%d) at %s", catalog.FormatName(ident), tbl.Metadata().Version(), tbl.Location())
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&schema, "schema", "", "column definitions (required)")
	keyFlag(c, &identifier, "key columns: the table's identifier fields, comma-separated (must be not null)", "identifier")
	f.StringVar(&partition, "partition-by", "", `partition fields: columns and transforms such as "day(ts), bucket(16,id)"`)
	f.IntVar(&formatVersion, "format-version", 0, "Iceberg format version: 2 (default) or 3")
	f.StringArrayVar(&props, "property", nil, "table property k=v (repeatable)")
	return c
}

func parseProps(kvs []string) (iceberg.Properties, error) {
	p := iceberg.Properties{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("--property %q: want key=value", kv)
		}
		p[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return p, nil
}

func tableList(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "list NS",
		Short:   "List the tables of a namespace",
		Example: "  floe table list shop",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := catalog.ParseNamespace(args[0])
			if err != nil {
				return usageError{err}
			}
			cat, err := a.Catalog(cmd.Context())
			if err != nil {
				return err
			}
			ids, err := cat.ListTables(cmd.Context(), ns)
			if err != nil {
				return err
			}
			var names []any
			for _, id := range ids {
				names = append(names, catalog.FormatName(id))
			}
			sort.Slice(names, func(i, j int) bool { return names[i].(string) < names[j].(string) })
			return a.printColumns([]column{{name: "table", typ: strType, values: names}})
		},
	}
}

// headsOf maps snapshot ids to the names of the refs that point at them.
func headsOf(meta table.Metadata) map[int64][]string {
	out := map[int64][]string{}
	for name, ref := range meta.Refs() {
		out[ref.SnapshotID] = append(out[ref.SnapshotID], name)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

func tableDescribe(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "describe NS.T",
		Short:   "Show a table's schema, identifier fields, partition spec, properties, current snapshot and refs",
		Example: "  floe table describe shop.orders\n  floe table describe shop.orders --format json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, ident, tbl, err := a.loadTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.describe(ident, tbl)
		},
	}
}

type describedColumn struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`
	Doc      string `json:"doc,omitempty"`
}

type describedRef struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	SnapshotID int64  `json:"snapshot_id"`
}

type description struct {
	Table            string            `json:"table"`
	Location         string            `json:"location"`
	FormatVersion    int               `json:"format_version"`
	UUID             string            `json:"uuid"`
	Schema           []describedColumn `json:"schema"`
	Identifier       []string          `json:"identifier_fields"`
	Partition        []string          `json:"partition_spec"`
	Properties       map[string]string `json:"properties"`
	CurrentSnapshot  *int64            `json:"current_snapshot_id"`
	CurrentOperation string            `json:"current_operation,omitempty"`
	CurrentTime      string            `json:"current_snapshot_time,omitempty"`
	Refs             []describedRef    `json:"refs"`
	MetadataLocation string            `json:"metadata_location"`
}

func (a *app) describe(ident table.Identifier, tbl *table.Table) error {
	meta := tbl.Metadata()
	sc := tbl.Schema()
	d := description{
		Table: catalog.FormatName(ident), Location: tbl.Location(), FormatVersion: meta.Version(),
		UUID: meta.TableUUID().String(), Properties: map[string]string{}, MetadataLocation: tbl.MetadataLocation(),
		Identifier: []string{}, Partition: []string{}, Refs: []describedRef{},
	}
	for _, f := range sc.Fields() {
		d.Schema = append(d.Schema, describedColumn{f.ID, f.Name, ddl.FormatType(f.Type), f.Required, f.Doc})
	}
	for _, id := range sc.IdentifierFieldIDs {
		if n, ok := sc.FindColumnName(id); ok {
			d.Identifier = append(d.Identifier, n)
		}
	}
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		d.Partition = append(d.Partition, tableops.FormatPartitionField(sc, f))
	}
	for k, v := range tbl.Properties() {
		d.Properties[k] = v
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		d.CurrentSnapshot = &id
		if s.Summary != nil {
			d.CurrentOperation = string(s.Summary.Operation)
		}
		d.CurrentTime = fmtTime(s.TimestampMs)
	}
	for name, ref := range meta.Refs() {
		d.Refs = append(d.Refs, describedRef{name, string(ref.SnapshotRefType), ref.SnapshotID})
	}
	sort.Slice(d.Refs, func(i, j int) bool { return d.Refs[i].Name < d.Refs[j].Name })
	f, err := a.outputFormat()
	if err != nil {
		return err
	}
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		enc := json.NewEncoder(a.stdout)
		if f == rowfile.OutputJSON {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(d)
	}
	w := a.stdout
	fmt.Fprintf(w, "table       %s\nlocation    %s\nformat      v%d\nuuid        %s\n", d.Table, d.Location, d.FormatVersion, d.UUID)
	fmt.Fprintf(w, "schema\n")
	for _, c := range d.Schema {
		req := ""
		if c.Required {
			req = " not null"
		}
		fmt.Fprintf(w, "  %3d  %-20s %s%s\n", c.ID, c.Name, c.Type, req)
	}
	fmt.Fprintf(w, "identifier  %s\n", orNone(strings.Join(d.Identifier, ", ")))
	fmt.Fprintf(w, "partition   %s\n", orNone(strings.Join(d.Partition, ", ")))
	fmt.Fprintf(w, "properties\n")
	keys := make([]string, 0, len(d.Properties))
	for k := range d.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "  %s = %s\n", k, d.Properties[k])
	}
	if d.CurrentSnapshot != nil {
		fmt.Fprintf(w, "current     snapshot %d (%s at %s)\n", *d.CurrentSnapshot, d.CurrentOperation, d.CurrentTime)
	} else {
		fmt.Fprintf(w, "current     no snapshot\n")
	}
	fmt.Fprintf(w, "refs\n")
	for _, r := range d.Refs {
		fmt.Fprintf(w, "  %-12s %-6s %d\n", r.Name, r.Type, r.SnapshotID)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func tableSnapshots(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "snapshots NS.T",
		Short: "List every snapshot of a table, on every branch",
		Long: `List the table's snapshots in commit order: snapshot_id, parent_id, operation,
timestamp_ms, the refs whose head each one is, and its summary.`,
		Example: "  floe table snapshots shop.orders\n  floe table snapshots shop.orders --format jsonl",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, _, tbl, err := a.loadTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			meta := tbl.Metadata()
			snaps := append([]table.Snapshot(nil), meta.Snapshots()...)
			sort.SliceStable(snaps, func(i, j int) bool {
				if snaps[i].SequenceNumber != snaps[j].SequenceNumber {
					return snaps[i].SequenceNumber < snaps[j].SequenceNumber
				}
				return snaps[i].TimestampMs < snaps[j].TimestampMs
			})
			heads := headsOf(meta)
			cols := []column{
				{name: "snapshot_id", typ: i64Type}, {name: "parent_id", typ: i64Type},
				{name: "operation", typ: strType}, {name: "timestamp_ms", typ: i64Type},
				{name: "committed_at", typ: tsType}, {name: "heads", typ: strList},
				{name: "summary", typ: strMapType},
			}
			for _, s := range snaps {
				var op any
				summary := map[string]string{}
				if s.Summary != nil {
					op = string(s.Summary.Operation)
					for k, v := range s.Summary.Properties {
						summary[k] = v
					}
				}
				h := heads[s.SnapshotID]
				if h == nil {
					h = []string{}
				}
				vals := []any{s.SnapshotID, s.ParentSnapshotID, op, s.TimestampMs, time.UnixMilli(s.TimestampMs), h, summary}
				for i := range cols {
					cols[i].values = append(cols[i].values, vals[i])
				}
			}
			return a.printColumns(cols)
		},
	}
}

func tableScan(a *app) *cobra.Command {
	var snapshot int64
	var ref, asOf, where, columns, output string
	var limit int64
	c := &cobra.Command{
		Use:   "scan NS.T",
		Short: "Read a table's rows (deletes applied), optionally at a snapshot, ref or time",
		Example: `  floe table scan shop.orders --where "status = 'open' AND price > 10" --columns id,price --limit 20
  floe table scan shop.orders --snapshot 3051729675574597004 --format jsonl
  floe table scan shop.orders --ref audit --format csv
  floe table scan shop.orders --as-of 2024-05-01T00:00:00Z --format csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			_, _, tbl, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			opts := scan.Options{Limit: limit}
			if cmd.Flags().Changed("snapshot") {
				opts.At.SnapshotID = &snapshot
			}
			opts.At.Ref = ref
			if asOf != "" {
				ms, err := parseTime(asOf)
				if err != nil {
					return err
				}
				opts.At.AsOfMs = &ms
			}
			if columns != "" {
				opts.Columns = splitList(columns)
			}
			if where != "" {
				if err := rowFilter(tbl, where, &opts); err != nil {
					return err
				}
			}
			schema, seq, err := scan.Rows(ctx, tbl, opts)
			if err != nil {
				return err
			}
			n, err := a.writeRows(output, schema, seq)
			if err != nil {
				return err
			}
			if output != "" {
				a.infof("wrote %s to %s", plural(n, "row"), output)
			}
			return nil
		},
	}
	f := c.Flags()
	f.Int64Var(&snapshot, "snapshot", 0, "read this snapshot")
	f.StringVar(&ref, "ref", "", "read the head of this branch or tag")
	f.StringVar(&asOf, "as-of", "", "read the snapshot current at this time (epoch ms or ISO-8601)")
	f.StringVar(&where, "where", "", "SQL predicate rows must match")
	f.StringVar(&columns, "columns", "", "columns to output, comma-separated")
	f.Int64Var(&limit, "limit", 0, "at most this many rows")
	f.StringVar(&output, "output", "", "write to this file instead of stdout (--format parquet needs it)")
	return c
}

// rowFilter sets an exact row filter (and a pruning expression) from a
// --where expression on scan options.
func rowFilter(tbl *table.Table, where string, opts *scan.Options) error {
	p, err := predicate(tbl, where)
	if err != nil {
		return err
	}
	opts.Filter = p.Iceberg
	opts.FilterColumns = p.Columns
	read := opts.Columns
	if read == nil {
		for _, f := range tbl.Schema().Fields() {
			read = append(read, f.Name)
		}
	}
	seen := map[string]bool{}
	var all []string
	for _, c := range append(append([]string{}, read...), p.Columns...) {
		if !seen[c] {
			seen[c] = true
			all = append(all, c)
		}
	}
	opts.FilterColumns = all[len(read):]
	opts.RowFilter = func(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
		idx := make([]int, len(p.Columns))
		fields := make([]arrow.Field, len(p.Columns))
		for i, c := range p.Columns {
			j := rec.Schema().FieldIndices(c)
			if len(j) == 0 {
				return nil, fmt.Errorf("column %s missing", c)
			}
			idx[i] = j[0]
			fields[i] = rec.Schema().Field(j[0])
		}
		sub := projectRec(rec, arrow.NewSchema(fields, nil), idx)
		defer sub.Release()
		keep, err := p.Match(ctx, sub)
		if err != nil {
			return nil, err
		}
		return selectRows(ctx, rec, keep)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// writeRows writes a stream of batches in --format to stdout or a file.
func (a *app) writeRows(output string, schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error]) (int64, error) {
	f, err := a.outputFormat()
	if err != nil {
		return 0, err
	}
	out := a.stdout
	if output != "" {
		file, err := createFile(output)
		if err != nil {
			return 0, err
		}
		defer file.Close()
		out = file
		if !a.formatSet {
			// --output picks the format from its extension unless --format
			// names one.
			if g, ok := outputFormatOf(output); ok {
				f = g
			}
		}
	} else if f == rowfile.OutputParquet {
		return 0, usagef("--format parquet needs --output FILE")
	}
	w, err := rowfile.NewWriter(out, f, schema)
	if err != nil {
		return 0, err
	}
	fail := func(err error) (int64, error) {
		// NB: no Close: it would print a table's trailer or finish a
		// Parquet file as if the rows were complete.
		if output != "" {
			os.Remove(output)
		}
		return 0, err
	}
	var n int64
	for rec, err := range seq {
		if err != nil {
			return fail(err)
		}
		n += rec.NumRows()
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return fail(err)
		}
	}
	return n, w.Close()
}

// inputFiles returns a producer reading the files into the table's schema,
// one after another, counting rows on p.
func inputFiles(ctx context.Context, tbl *table.Table, files []string, inputFormat string, p *progress) (func() iter.Seq2[arrow.RecordBatch, error], error) {
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	format, err := rowfile.ParseFormat(inputFormat)
	if err != nil {
		return nil, usageError{fmt.Errorf("--input-format: %w", err)}
	}
	for _, f := range files {
		if f == "-" && len(files) > 1 {
			return nil, usagef("stdin (-) must be the only input")
		}
		if f == "-" && format == rowfile.FormatAuto {
			return nil, usagef("stdin (-) has no file name to tell its format by: pass --input-format csv, jsonl or parquet")
		}
	}
	return func() iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) {
			for _, path := range files {
				r, err := rowfile.Open(ctx, path, rowfile.ReadOptions{Target: target, Format: format})
				if err != nil {
					yield(nil, err)
					return
				}
				for rec, err := range r.All() {
					if err != nil {
						r.Close()
						yield(nil, err)
						return
					}
					p.add(rec.NumRows())
					if !yield(rec, nil) {
						r.Close()
						return
					}
				}
				r.Close()
			}
		}
	}, nil
}

func (a *app) target(ctx context.Context, name, branch string) (tableops.Target, *table.Table, error) {
	cat, ident, tbl, err := a.loadTable(ctx, name)
	if err != nil {
		return tableops.Target{}, nil, err
	}
	if branch != "" {
		if _, err := write.BranchHead(tbl, branch); err != nil {
			return tableops.Target{}, nil, err
		}
	}
	return tableops.Target{Catalog: cat, Ident: ident, Branch: branch}, tbl, nil
}

// report prints the outcome of a DML command.
func (a *app) report(verb string, t tableops.Target, o *tableops.Outcome) error {
	a.answerLost(o.AnswerLost, t.Ident, o.CommitID)
	f, _ := a.outputFormat()
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		out := map[string]any{"table": t.String(), "operation": verb, "rows_added": o.RowsAdded, "rows_removed": o.RowsRemoved,
			"mode": o.Mode.String(), "snapshot_id": nil, "attempts": o.Attempts}
		if o.SnapshotID != 0 {
			out["snapshot_id"] = o.SnapshotID
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	if o.SnapshotID == 0 {
		a.infof("%s %s: nothing changed, no snapshot committed", verb, t)
		return nil
	}
	a.infof("%s %s: +%d -%d rows (%s), snapshot %d", verb, t, o.RowsAdded, o.RowsRemoved, o.Mode, o.SnapshotID)
	return nil
}

func tableAppend(a *app) *cobra.Command {
	var branch, commitID, inputFormat string
	c := &cobra.Command{
		Use:   "append NS.T FILE...",
		Short: "Append rows from Parquet, CSV or JSON Lines files in one snapshot",
		Long: `Append rows from files (Parquet, CSV with a header row, JSON Lines; "-" reads stdin,
in the --input-format given). Columns match by name; missing nullable columns are NULL;
values are converted to the column types. One bad value fails the whole command,
naming file, line and column, and nothing is committed.`,
		Example: "  floe table append shop.orders orders-1.parquet orders-2.csv\n  cat new.jsonl | floe table append shop.orders - --input-format jsonl",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, tbl, err := a.target(ctx, args[0], branch)
			if err != nil {
				return err
			}
			p := a.progress("appending")
			defer p.done()
			recs, err := inputFiles(ctx, tbl, args[1:], inputFormat, p)
			if err != nil {
				return err
			}
			t.CommitID = commitID
			o, err := tableops.Append(ctx, t, recs)
			if err != nil {
				return err
			}
			p.done()
			return a.report("append", t, o)
		},
	}
	c.Flags().StringVar(&branch, "branch", "", "write to this branch")
	c.Flags().StringVar(&commitID, "commit-id", "", "the commit's id (floe.commit-id); rerun with the id an unknown outcome named: nothing is appended twice")
	c.Flags().StringVar(&inputFormat, "input-format", "", "format of the input: csv, jsonl or parquet (default: from each file's extension; required for stdin)")
	return c
}

func tableDelete(a *app) *cobra.Command {
	var branch, where string
	c := &cobra.Command{
		Use:     "delete NS.T --where EXPR",
		Short:   "Delete the rows matching a predicate in one snapshot",
		Example: "  floe table delete shop.orders --where \"status = 'cancelled' AND ts < TIMESTAMP '2024-01-01 00:00:00'\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if where == "" {
				return usagef("--where is required (use --where true to delete every row)")
			}
			ctx := cmd.Context()
			t, tbl, err := a.target(ctx, args[0], branch)
			if err != nil {
				return err
			}
			p, err := predicate(tbl, where)
			if err != nil {
				return err
			}
			o, err := tableops.Delete(ctx, t, p)
			if err != nil {
				return err
			}
			return a.report("delete", t, o)
		},
	}
	c.Flags().StringVar(&where, "where", "", "SQL predicate of the rows to delete (required)")
	c.Flags().StringVar(&branch, "branch", "", "write to this branch")
	return c
}

func tableUpdate(a *app) *cobra.Command {
	var branch, where, set string
	c := &cobra.Command{
		Use:     "update NS.T --set \"col = expr, ...\" [--where EXPR]",
		Short:   "Update the rows matching a predicate in one snapshot",
		Example: "  floe table update shop.orders --set \"status = 'shipped', price = price * 0.9\" --where \"id IN (1, 2, 3)\"",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if set == "" {
				return usagef("--set is required")
			}
			ctx := cmd.Context()
			t, tbl, err := a.target(ctx, args[0], branch)
			if err != nil {
				return err
			}
			if where == "" {
				where = "TRUE"
			}
			p, err := predicate(tbl, where)
			if err != nil {
				return err
			}
			assign, err := assignments(tbl, set)
			if err != nil {
				return err
			}
			o, err := tableops.Update(ctx, t, p, assign)
			if err != nil {
				return err
			}
			return a.report("update", t, o)
		},
	}
	c.Flags().StringVar(&set, "set", "", "assignments col = expr, ... (required)")
	c.Flags().StringVar(&where, "where", "", "SQL predicate of the rows to update (default: every row)")
	c.Flags().StringVar(&branch, "branch", "", "write to this branch")
	return c
}

func tableOverwrite(a *app) *cobra.Command {
	var branch, where, inputFormat string
	c := &cobra.Command{
		Use:     "overwrite NS.T FILE... [--where EXPR]",
		Short:   "Replace the rows matching a predicate (or all rows) with the files' rows in one snapshot",
		Example: "  floe table overwrite shop.orders day-2024-05-01.parquet --where \"ts >= TIMESTAMP '2024-05-01 00:00:00' AND ts < TIMESTAMP '2024-05-02 00:00:00'\"",
		Args:    cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, tbl, err := a.target(ctx, args[0], branch)
			if err != nil {
				return err
			}
			var p *tableops.Predicate
			if where != "" {
				if p, err = predicate(tbl, where); err != nil {
					return err
				}
			}
			prog := a.progress("overwriting")
			defer prog.done()
			recs, err := inputFiles(ctx, tbl, args[1:], inputFormat, prog)
			if err != nil {
				return err
			}
			o, err := tableops.Overwrite(ctx, t, p, recs)
			if err != nil {
				return err
			}
			prog.done()
			return a.report("overwrite", t, o)
		},
	}
	c.Flags().StringVar(&where, "where", "", "SQL predicate of the rows to replace (default: every row)")
	c.Flags().StringVar(&branch, "branch", "", "write to this branch")
	c.Flags().StringVar(&inputFormat, "input-format", "", "format of the input: csv, jsonl or parquet (default: from each file's extension; required for stdin)")
	return c
}

func tableCompact(a *app) *cobra.Command {
	var branch string
	var auto bool
	c := &cobra.Command{
		Use:   "compact NS.T",
		Short: "Rewrite the data files with their deletes applied, in one replace snapshot",
		Long: `Rewrite the data files with their deletes applied, in one replace snapshot
(changelogs and incremental readers see no change). With --auto only the
files the table's floe.compaction.* thresholds select are rewritten, and a
large file with few rows deleted keeps its data file and has its position
delete files rewritten into one (see docs/pipelines.md, "Compaction").`,
		Example: "  floe table compact shop.orders\n  floe table compact --auto shop.orders",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			t, _, err := a.target(ctx, args[0], branch)
			if err != nil {
				return err
			}
			o, err := tableops.CompactWith(ctx, t, tableops.CompactOptions{Auto: auto})
			if err != nil {
				return err
			}
			if o.SnapshotID == 0 {
				a.infof("compact %s: nothing to compact", t)
				return nil
			}
			a.infof("compact %s: snapshot %d (replace)", t, o.SnapshotID)
			return nil
		},
	}
	c.Flags().StringVar(&branch, "branch", "", "compact this branch")
	c.Flags().BoolVar(&auto, "auto", false, "rewrite only the files over the table's floe.compaction.* thresholds")
	return c
}

// tableArg parses arg, a command's NS.T argument (a usage error when it is
// not a table name), and opens the catalog the command line names.
func (a *app) tableArg(ctx context.Context, arg string) (table.Identifier, *catalog.Catalog, error) {
	ident, err := catalog.ParseTableName(arg)
	if err != nil {
		return nil, nil, usageError{err}
	}
	cat, err := a.Catalog(ctx)
	if err != nil {
		return nil, nil, err
	}
	return ident, cat, nil
}
