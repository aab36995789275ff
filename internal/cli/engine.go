package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/apache/iceberg-go/table"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/pushdown"
)

// engineFlags are the flags choosing the engine of a build: --engine,
// --spark-remote, --spark-catalog and --spark-threshold.
type engineFlags struct {
	engine, remote, catalog, threshold string
}

func (f *engineFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.engine, "engine", "", "engine of the build: local (floe, default), spark (Spark Connect) or auto (Spark past --spark-threshold); docs/spark.md")
	fl.StringVar(&f.remote, "spark-remote", "", "Spark Connect server, sc://HOST:PORT (default $FLOE_SPARK_REMOTE, or the configuration's spark: block)")
	fl.StringVar(&f.catalog, "spark-catalog", "", "name of floe's catalog on the Spark side, when the server has it configured (default: floe mounts its catalog in each session)")
	fl.StringVar(&f.threshold, "spark-threshold", "", "with --engine auto: planned bytes read and rewritten past which the build goes to Spark (default 64GiB)")
}

// sparkLayer is one source of settings, lowest priority first.
type sparkLayer struct{ engine, remote, catalog, threshold string }

// settings merges the flags over the pipeline's spark: block (base) over
// the configuration file's, with FLOE_SPARK_REMOTE between the files and
// the flags.
func (f *engineFlags) settings(a *app, base sparkLayer, conf map[string]string) (pushdown.Settings, error) {
	cfg, err := catalog.SparkSettings(a.configFile, a.catalogName)
	if err != nil {
		return pushdown.Settings{}, err
	}
	layers := []sparkLayer{{cfg.Engine, cfg.Remote, cfg.Catalog, cfg.Threshold}, base, {"", envRemote(), "", ""}, {f.engine, f.remote, f.catalog, f.threshold}}
	var m sparkLayer
	for _, l := range layers {
		if l.engine != "" {
			m.engine = l.engine
		}
		if l.remote != "" {
			m.remote = l.remote
		}
		if l.catalog != "" {
			m.catalog = l.catalog
		}
		if l.threshold != "" {
			m.threshold = l.threshold
		}
	}
	kind, err := pushdown.ParseKind(m.engine)
	if err != nil {
		return pushdown.Settings{}, usageError{fmt.Errorf("--engine: %w", err)}
	}
	s := pushdown.Settings{Kind: kind, Remote: m.remote, Catalog: m.catalog, Conf: map[string]string{}, Logger: a.logger()}
	for k, v := range cfg.Conf {
		s.Conf[k] = v
	}
	for k, v := range conf {
		s.Conf[k] = v
	}
	if m.threshold != "" {
		if s.Threshold, err = pushdown.ParseBytes(m.threshold); err != nil {
			return pushdown.Settings{}, usageError{fmt.Errorf("--spark-threshold: %w", err)}
		}
	}
	return s.WithDefaults(), nil
}

// connect opens the Spark engine when the settings may push builds down
// (nil for local).
func (a *app) connectEngine(ctx context.Context, s pushdown.Settings, cat *catalog.Catalog) (pushdown.Engine, error) {
	return pushdown.Connect(ctx, s, cat)
}

// engineNote prints which engine ran a build and why, when it was not the
// default.
func (a *app) engineNote(what string, d pushdown.Decision, session string) {
	if d.Reason == "" {
		return
	}
	msg := fmt.Sprintf("%s: engine %s (%s)", what, d.Engine, d.Reason)
	if session != "" {
		msg += ", Spark session " + session
	}
	a.infof("%s", msg)
}

func envRemote() string { return os.Getenv(pushdown.EnvRemote) }

// pushCommand decides the engine of one command's build (est: its
// planned work; unsupported: why it cannot run on Spark) and runs job on
// Spark when chosen. It returns the decision and, when Spark ran the
// build, its result; with a nil result the command runs locally, and
// records d.Summary() in its snapshot.
func (a *app) pushCommand(ctx context.Context, push pushdown.Settings, cat *catalog.Catalog, est pushdown.Estimate, unsupported string, job pushdown.Job) (pushdown.Decision, *pushdown.Result, error) {
	if push.Kind == pushdown.Local {
		return pushdown.Decision{Engine: string(pushdown.Local)}, nil, nil
	}
	d, err := push.Choose(est, unsupported)
	if err != nil {
		return d, nil, usageError{err}
	}
	if !d.Spark() {
		return d, nil, nil
	}
	eng, err := a.connectEngine(ctx, push, cat)
	if err != nil {
		return d, nil, err
	}
	defer eng.Close()
	job.Catalog = cat
	if job.Logger == nil {
		job.Logger = a.logger()
	}
	summary := d.Summary()
	for k, v := range job.Summary {
		summary[k] = v
	}
	job.Summary = summary
	res, err := eng.Run(ctx, job)
	if err != nil {
		return d, nil, err
	}
	if res.AnswerLost {
		a.infof("floe: warning: the answer of a Spark statement on %s was lost; floe found the build's commit by its id (%s=%s): it landed once",
			catalog.FormatName(job.Output), pushdown.SummaryBuildID, res.BuildID)
	}
	return d, res, nil
}

// fileSize is the size of a local file (0 when it cannot be read).
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// reportPushed prints what a build pushed down to Spark committed.
func (a *app) reportPushed(what string, d pushdown.Decision, res *pushdown.Result) error {
	f, _ := a.outputFormat()
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		out := map[string]any{"table": what, "engine": d.Engine, "engine_reason": d.Reason, "committed": res.Committed,
			"snapshot_id": nil, "rows_added": res.RowsAdded, "rows_removed": res.RowsRemoved, "attempts": res.Attempts,
			"spark_remote": res.Remote, "spark_session": res.SessionID, "spark_app": res.AppID, "build_id": res.BuildID}
		if res.SnapshotID != 0 {
			out["snapshot_id"] = res.SnapshotID
		}
		return json.NewEncoder(a.stdout).Encode(out)
	}
	snap := "no new snapshot"
	if res.SnapshotID != 0 {
		snap = fmt.Sprintf("snapshot %d", res.SnapshotID)
	}
	a.infof("%s: +%d -%d rows, %s; engine spark (%s; Spark %s, application %s, session %s)", what, res.RowsAdded, res.RowsRemoved, snap, d.Reason, res.Remote, res.AppID, res.SessionID)
	return nil
}

// deltaOnSpark runs a delta sync's change feed on Spark when the engine
// choice says so; a nil result means the sync runs locally (the first run,
// which migrates the Delta snapshot, always does).
func (a *app) deltaOnSpark(ctx context.Context, push pushdown.Settings, cat *catalog.Catalog, src *delta.Table, ident table.Identifier, keys []string, unsupported string, log *slog.Logger) (*deltasync.Result, error) {
	if push.Kind == pushdown.Local {
		return nil, nil
	}
	name := "delta sync " + catalog.FormatName(ident)
	var plan *pipeline.DeltaSparkPlan
	var err error
	if unsupported == "" {
		plan, err = pipeline.PlanDeltaSpark(ctx, cat, src, ident, keys, -1)
		switch {
		case errors.Is(err, pipeline.ErrDeltaFirstRun):
			a.engineNote(name, pushdown.Decision{Engine: string(pushdown.Local), Reason: "kept local: " + err.Error()}, "")
			return nil, nil
		case err != nil:
			return nil, err
		}
	}
	var est pushdown.Estimate
	if plan != nil {
		est = plan.Estimate
	}
	d, err := push.Choose(est, unsupported)
	if err != nil {
		return nil, usageError{err}
	}
	if !d.Spark() {
		a.engineNote(name, d, "")
		return nil, nil
	}
	eng, err := a.connectEngine(ctx, push, cat)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	res, out, err := pipeline.SparkDeltaSync(ctx, eng, cat, plan, d, log)
	if err != nil {
		return nil, err
	}
	if out != nil {
		a.infof("%s: engine spark (%s; Spark %s, application %s, session %s)", name, d.Reason, out.Remote, out.AppID, out.SessionID)
	}
	return res, nil
}

// pushNeeded returns the engine kind ("spark" or "auto") some step of a
// pipeline run may push down with, or "" when every build is local.
func pushNeeded(push pushdown.Settings, steps []*pipeline.Step) string {
	need := ""
	for _, s := range steps {
		k := push.Kind
		if s.Engine != "" {
			k = s.Engine
		}
		if k != pushdown.Local && k != "" {
			need = string(k)
		}
	}
	return need
}
