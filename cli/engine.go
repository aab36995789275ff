package cli

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
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
