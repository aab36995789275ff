package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/merge"
)

func init() { extraCommands = append(extraCommands, deltaCommand) }

func deltaCommand(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "delta",
		Short: "Read a Delta Lake table's Change Data Feed and sync it into Iceberg",
		Long: `Commands on Delta Lake tables, read in pure Go from their transaction log: the Change
Data Feed between two versions or timestamps, and a sync that keeps an Iceberg table
equal to a Delta table by applying that feed by key.

PATH is a local folder, a file:// URI, or an object store URI (s3://, gs://, abfs://)
read with the storage settings of the catalog chosen with --catalog (its s3.*, gcs.*,
adls.* keys), or of the storage profile --storage NAME of the configuration file;
--source-property k=v overrides single settings. See docs/storage.md.`,
		Example: `  floe delta changes ./events --start-version 3
  floe delta sync ./events lake.events --key id`,
	}
	c.AddCommand(deltaChangesCommand(a), deltaSyncCommand(a))
	return c
}

// deltaRange holds the bound flags shared by the delta commands.
type deltaRange struct {
	startVersion, endVersion int64
	startTS, endTS           string
	sourceProps              []string
	storage                  string
}

func (r *deltaRange) flags(c *cobra.Command, startHelp string) {
	f := c.Flags()
	f.Int64Var(&r.startVersion, "start-version", 0, startHelp)
	f.StringVar(&r.startTS, "start-timestamp", "", "start at the first commit at or after this time (epoch ms or ISO-8601)")
	f.Int64Var(&r.endVersion, "end-version", 0, "last version, inclusive (default: the latest)")
	f.StringVar(&r.endTS, "end-timestamp", "", "end at the last commit at or before this time (epoch ms or ISO-8601)")
	f.StringArrayVar(&r.sourceProps, "source-property", nil, "storage setting k=v for reading PATH, over the catalog's or the profile's (repeatable)")
	f.StringVar(&r.storage, "storage", "", "read PATH with this storage profile of the configuration file (default: the --catalog's storage settings)")
}

// bounds parses the bound flags; a bound given both ways is a usage error.
func (r *deltaRange) bounds(c *cobra.Command) (start, end delta.Bound, err error) {
	fl := c.Flags()
	parse := func(name, vflag, tflag string, v int64, ts string) (delta.Bound, error) {
		switch {
		case fl.Changed(vflag) && ts != "":
			return delta.Bound{}, usagef("give the %s as --%s or --%s, not both", name, vflag, tflag)
		case fl.Changed(vflag):
			if v < 0 {
				return delta.Bound{}, usagef("--%s %d: versions are not negative", vflag, v)
			}
			return delta.AtVersion(v), nil
		case ts != "":
			ms, err := parseTime(ts)
			if err != nil {
				return delta.Bound{}, err
			}
			return delta.AtTimestamp(time.UnixMilli(ms).UTC()), nil
		}
		return delta.Bound{}, nil
	}
	if start, err = parse("start", "start-version", "start-timestamp", r.startVersion, r.startTS); err != nil {
		return
	}
	end, err = parse("end", "end-version", "end-timestamp", r.endVersion, r.endTS)
	return
}

// openDelta opens the Delta table at path: local paths directly, URIs with
// another scheme through iceberg-go's file IO, with the storage settings of
// --storage, else of the --catalog, and --source-property on top.
func (r *deltaRange) openDelta(ctx context.Context, a *app, path string) (*delta.Table, error) {
	props, err := parseProps(r.sourceProps)
	if err != nil {
		return nil, err
	}
	scheme, _, ok := strings.Cut(path, "://")
	if !ok || scheme == "file" {
		if len(props) > 0 || r.storage != "" {
			return nil, usagef("--source-property and --storage are for object store locations; %s is local", path)
		}
		return delta.Open(ctx, path)
	}
	var cat *catalog.Catalog
	if a.catalogName != "" {
		if cat, err = a.Catalog(ctx); err != nil {
			return nil, err
		}
	}
	settings, err := catalog.SourceStorage(cat, a.configFile, r.storage, props)
	if err != nil {
		return nil, err
	}
	return delta.OpenLocation(ctx, path, settings)
}

func deltaChangesCommand(a *app) *cobra.Command {
	var (
		r       deltaRange
		columns string
		output  string
	)
	c := &cobra.Command{
		Use:   "changes PATH",
		Short: "Print the Change Data Feed of a Delta table",
		Long: `Print the row-level changes a Delta table recorded between two versions or timestamps
(both inclusive), as Spark's table_changes gives them: the table's columns (schema of
the end version) plus _change_type (insert, update_preimage, update_postimage,
delete), _commit_version and _commit_timestamp.

The table must have delta.enableChangeDataFeed set over the whole range. A start
timestamp resolves to the first commit at or after it, an end timestamp to the last
commit at or before it. Without a start, the feed is read from the oldest version
the log still holds; without an end, up to the latest version.`,
		Example: `  floe delta changes ./events --start-version 3 --format jsonl
  floe delta changes ./events --start-timestamp 2024-01-01T00:00:00Z --end-version 3 --columns id,name,_change_type
  floe delta changes s3://bucket/events --catalog lake --start-version 0 --output changes.parquet
  floe delta changes s3://bucket/events --storage lake --source-property s3.region=eu-west-1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			start, end, err := r.bounds(cmd)
			if err != nil {
				return err
			}
			src, err := r.openDelta(ctx, a, args[0])
			if err != nil {
				return err
			}
			if !start.IsSet() {
				v, err := src.EarliestVersion(ctx)
				if err != nil {
					return err
				}
				start = delta.AtVersion(v)
			}
			schema, seq, err := src.Changes(ctx, delta.ChangesOptions{Start: start, End: end, Columns: splitList(columns)})
			if err != nil {
				return err
			}
			n, err := a.writeRows(output, schema, seq)
			if err != nil {
				return err
			}
			if output != "" {
				a.infof("wrote %s to %s", plural(n, "change"), output)
			}
			return nil
		},
	}
	r.flags(c, "first version, inclusive (default: the oldest the log holds)")
	f := c.Flags()
	f.StringVar(&columns, "columns", "", "columns to output, comma-separated (table and _change_type, _commit_version, _commit_timestamp)")
	f.StringVar(&output, "output", "", "write to this file (Parquet when it ends in .parquet)")
	return c
}

func deltaSyncCommand(a *app) *cobra.Command {
	var (
		r                      deltaRange
		keys, mode, deleteMode string
		partitionBy            string
		props                  []string
		formatVersion          int
		maxVersions            int64
		evolve                 bool
		every                  time.Duration
		logFormat, metricsAddr string
		ef                     engineFlags
	)
	c := &cobra.Command{
		Use:   "sync PATH NS.T --key COL[,COL...]",
		Short: "Keep an Iceberg table equal to a Delta table through its Change Data Feed",
		Long: `Sync the Delta table at PATH into the Iceberg table NS.T.

The first run copies the Delta snapshot at the start (--start-version or
--start-timestamp; default: the end bound, else the latest version) into the table,
creating the namespace and the table when missing: Delta types mapped to Iceberg
types, the key columns as identifier fields, --partition-by as the partition
spec and --mode as the table's write mode. Every run then applies the Change Data
Feed after the last applied version up to the end bound (default: the latest
version): changes are collapsed per key in commit order and applied in one Iceberg
commit that also records the Delta version reached (table property
floe.delta.source-version). A rerun after a failure continues from there, never
skipping or repeating a Delta commit; with nothing new, nothing is committed.

The Delta schema must match the Iceberg table; differences are listed and nothing
is committed. --evolve-schema adds new nullable columns; anything else needs you.

--every runs forever, one sync per interval (with 10% jitter), logging each run on
stderr (--log-format text|json), with the metrics of floe run at --metrics-addr
(transform="NS.T"). SIGINT or SIGTERM lets the current run finish and exits; a
second signal aborts the run before its commit.`,
		Example: `  floe delta sync ./events shop.events --key id
  floe delta sync ./events shop.events --key id --start-version 2 --mode merge-on-read --partition-by "bucket(4, id)"
  floe delta sync ./events shop.events --evolve-schema --max-versions 100
  floe delta sync s3://bucket/events shop.events --key id --every 15m`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			start, end, err := r.bounds(cmd)
			if err != nil {
				return err
			}
			ident, err := catalog.ParseTableName(args[1])
			if err != nil {
				return usageError{err}
			}
			wm, err := write.ParseMode(mode, "--mode")
			if err != nil {
				return usageError{err}
			}
			dm, err := merge.ParseDeleteMode(deleteMode)
			if err != nil {
				return usageError{err}
			}
			p, err := parseProps(props)
			if err != nil {
				return err
			}
			if every < 0 {
				return usagef("--every %s: want a positive interval", every)
			}
			if maxVersions < 0 {
				return usagef("--max-versions %d: want 0 (all) or more", maxVersions)
			}
			src, err := r.openDelta(ctx, a, args[0])
			if err != nil {
				return err
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			opts := deltasync.Options{EqualityColumns: splitList(keys), Start: start, End: end, Mode: wm, DeleteMode: dm,
				PartitionBy: partitionBy, FormatVersion: formatVersion, Properties: p, EvolveSchema: evolve, MaxVersions: maxVersions}
			push, err := ef.settings(a, sparkLayer{}, nil)
			if err != nil {
				return err
			}
			unsupported := ""
			switch {
			case end.IsSet() || maxVersions > 0 || evolve || deleteMode != "":
				unsupported = "--end-version, --end-timestamp, --max-versions, --evolve-schema and --delete-mode run on floe's engine"
			}
			run := func(ctx context.Context, log *slog.Logger) (*deltasync.Result, error) {
				opts.Logger = log
				if res, err := a.deltaOnSpark(ctx, push, cat, src, ident, splitList(keys), unsupported, log); res != nil || err != nil {
					return res, err
				}
				res, err := deltasync.Sync(ctx, cat, src, ident, opts)
				if err == nil && res.Committed && dm == merge.DeleteEquality {
					a.warnEqualityDeletes(catalog.FormatName(ident))
				}
				return res, err
			}
			if every == 0 {
				return a.syncOnce(ctx, run)
			}
			log, err := a.pipelineLogger(logFormat)
			if err != nil {
				return err
			}
			obs, stop, err := serveDeltaMetrics(ctx, cat, src.Location(), catalog.FormatName(ident), metricsAddr, log)
			if err != nil {
				return err
			}
			defer stop()
			return a.syncEvery(ctx, every, obs.wrap(run), log)
		},
	}
	r.flags(c, "first run: migrate the snapshot at this version (default: the end bound, else the latest)")
	f := c.Flags()
	keyFlag(c, &keys, "key columns, comma-separated (default: the table's identifier fields; required to create it)", "equality-columns")
	f.StringVar(&mode, "mode", "copy-on-write", "write mode of a table the sync creates: copy-on-write or merge-on-read")
	f.StringVar(&deleteMode, "delete-mode", "", "how rows are removed: position, equality or auto (default: as the table's floe.write.mode or write.merge.mode says)")
	f.StringVar(&partitionBy, "partition-by", "", `partition spec of a table the sync creates, e.g. "region, day(ts)"`)
	f.IntVar(&formatVersion, "format-version", 0, "Iceberg format version of a table the sync creates: 2 (default) or 3")
	f.StringArrayVar(&props, "property", nil, "table property k=v of a table the sync creates (repeatable)")
	f.BoolVar(&evolve, "evolve-schema", false, "add new nullable Delta columns to the Iceberg table")
	f.Int64Var(&maxVersions, "max-versions", 0, "Delta versions per Iceberg commit (default 0: all in one)")
	f.DurationVar(&every, "every", 0, "run forever, one sync per interval (e.g. 15m)")
	f.StringVar(&logFormat, "log-format", "text", "with --every: log format on stderr, text or json")
	ef.register(c)
	f.StringVar(&metricsAddr, "metrics-addr", "", "with --every: serve Prometheus metrics, /healthz and /readyz on this address (a port alone, :9090, binds 127.0.0.1)")
	return c
}

type syncRun func(ctx context.Context, log *slog.Logger) (*deltasync.Result, error)

// syncSignals makes the first SIGINT/SIGTERM close stop (finish the current
// run, then exit) and the second cancel the run's context (abort it before
// its commit). The returned function releases the signal handler.
func syncSignals(ctx context.Context, log *slog.Logger) (runCtx context.Context, stop <-chan struct{}, release func()) {
	runCtx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stopCh := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer safe.Recover(nil)
		n := 0
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				n++
				if n == 1 {
					log.Info("delta sync: signal received, finishing the current run", "signal", s.String())
					close(stopCh)
				} else {
					log.Warn("delta sync: second signal, aborting the current run before its commit", "signal", s.String())
					cancel()
				}
			}
		}
	}()
	return runCtx, stopCh, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

func (a *app) syncLogger() *slog.Logger {
	level := slog.LevelInfo
	if a.quiet {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// syncOnce runs one sync and reports it.
func (a *app) syncOnce(ctx context.Context, run syncRun) error {
	log := slog.New(slog.DiscardHandler)
	runCtx, _, release := syncSignals(ctx, a.syncLogger())
	defer release()
	res, err := run(runCtx, log)
	if err != nil {
		if res != nil && len(res.Batches) > 0 {
			a.reportSync(res)
		}
		return err
	}
	return a.reportSync(res)
}

// syncEvery runs a sync per interval until a signal, logging each run.
func (a *app) syncEvery(ctx context.Context, every time.Duration, run syncRun, log *slog.Logger) error {
	runCtx, stop, release := syncSignals(ctx, log)
	defer release()
	log.Info("delta sync: starting", "every", every.String())
	for {
		res, err := run(runCtx, log)
		switch {
		case err != nil && runCtx.Err() != nil:
			log.Warn("delta sync: run aborted", "error", err)
			return nil
		case errors.Is(err, deltasync.ErrInvalidOptions) || errors.Is(err, deltasync.ErrNoEqualityColumns):
			return err // the command line needs fixing: retrying cannot help
		case err != nil:
			// NB: keep going: the cause (a schema change waiting for a
			// person, a source being rewritten) may be fixed by the next
			// interval, and nothing was committed for the failed batch.
			log.Error("delta sync: run failed", "error", err)
		default:
			log.Info("delta sync: run done", "table", res.Table, "watermark", res.Watermark, "batches", len(res.Batches), "committed", res.Committed)
		}
		wait := every + time.Duration(rand.Int64N(int64(every)/5+1)) - every/10
		select {
		case <-stop:
			log.Info("delta sync: stopped")
			return nil
		case <-runCtx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// reportSync prints what a sync did: a line for people on stderr, or the
// result as JSON with --format json/jsonl.
func (a *app) reportSync(res *deltasync.Result) error {
	f := a.format
	if f == "json" || f == "jsonl" {
		type batch struct {
			From        int64  `json:"from_version"`
			To          int64  `json:"to_version"`
			ChangeRows  int64  `json:"change_rows"`
			Upserts     int64  `json:"upserts"`
			Deletes     int64  `json:"deletes"`
			RowsAdded   int64  `json:"rows_added"`
			RowsRemoved int64  `json:"rows_removed"`
			SnapshotID  *int64 `json:"snapshot_id"`
			Mode        string `json:"mode"`
		}
		out := struct {
			Source          string   `json:"source"`
			Table           string   `json:"table"`
			LatestVersion   int64    `json:"latest_version"`
			Created         bool     `json:"created"`
			MigratedVersion *int64   `json:"migrated_version"`
			MigratedRows    int64    `json:"migrated_rows"`
			StartWatermark  *int64   `json:"start_watermark"`
			Watermark       *int64   `json:"watermark"`
			Batches         []batch  `json:"batches"`
			AddedColumns    []string `json:"added_columns"`
			Committed       bool     `json:"committed"`
		}{Source: res.Source, Table: res.Table, LatestVersion: res.LatestVersion, Created: res.Created,
			MigratedRows: res.MigratedRows, Batches: []batch{}, AddedColumns: append([]string{}, res.AddedColumns...), Committed: res.Committed}
		opt := func(v int64) *int64 {
			if v < 0 {
				return nil
			}
			return &v
		}
		if res.Migrated {
			out.MigratedVersion = &res.MigratedVersion
		}
		out.StartWatermark, out.Watermark = opt(res.StartWatermark), opt(res.Watermark)
		for _, b := range res.Batches {
			ob := batch{From: b.FromVersion, To: b.ToVersion, ChangeRows: b.ChangeRows, Upserts: b.Upserts, Deletes: b.Deletes,
				RowsAdded: b.RowsAdded, RowsRemoved: b.RowsRemoved, Mode: b.Mode}
			if b.SnapshotID != 0 {
				id := b.SnapshotID
				ob.SnapshotID = &id
			}
			out.Batches = append(out.Batches, ob)
		}
		enc := json.NewEncoder(a.stdout)
		if f == "json" {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(out)
	}
	if res.Created {
		a.infof("delta sync %s: created the table", res.Table)
	}
	if res.Migrated {
		a.infof("delta sync %s: migrated version %d of %s (%s)", res.Table, res.MigratedVersion, res.Source, plural(res.MigratedRows, "row"))
	}
	if len(res.AddedColumns) > 0 {
		a.infof("delta sync %s: added columns %s", res.Table, strings.Join(res.AddedColumns, ", "))
	}
	for _, b := range res.Batches {
		what := fmt.Sprintf("%s -> %d upserts, %d deletes, +%d -%d rows (%s)", plural(b.ChangeRows, "change"), b.Upserts, b.Deletes, b.RowsAdded, b.RowsRemoved, b.Mode)
		if b.SnapshotID == 0 {
			what = "no row changes, watermark only"
		}
		a.infof("delta sync %s: %s: %s", res.Table, versionSpan(b.FromVersion, b.ToVersion), what)
	}
	switch {
	case !res.Committed && res.Watermark >= 0:
		a.infof("delta sync %s: up to date at version %d (latest %d), nothing committed", res.Table, res.Watermark, res.LatestVersion)
	case res.Watermark >= 0:
		a.infof("delta sync %s: at version %d (latest %d)", res.Table, res.Watermark, res.LatestVersion)
	}
	return nil
}

func versionSpan(from, to int64) string {
	if from == to {
		return fmt.Sprintf("version %d", from)
	}
	return fmt.Sprintf("versions %d-%d", from, to)
}
