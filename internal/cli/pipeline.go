package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/pushdown"
)

func init() {
	extraCommands = append(extraCommands,
		func(a *app) *cobra.Command { return runCommand(a, fileSource{}) },
		func(a *app) *cobra.Command { return statusCommand(a, fileSource{}) },
		func(a *app) *cobra.Command { return serveCommand(a, fileSource{}) })
}

// pipelineSource is where the transforms of run, build and status come
// from: a pipeline file named by the first argument (floe), or the
// transforms a program was built with (package cmdline).
type pipelineSource interface {
	// load returns the pipeline and the arguments left (transform names).
	load(a *app, args []string) (*pipeline.Pipeline, []string, error)
	// usage is the command line after the command's name.
	usage() string
}

type fileSource struct{}

func (fileSource) usage() string { return "PIPELINE.yaml [NAME...]" }

func (fileSource) load(a *app, args []string) (*pipeline.Pipeline, []string, error) {
	if len(args) == 0 {
		return nil, nil, usagef("a pipeline file is required")
	}
	f, err := pipeline.Load(args[0])
	if err != nil {
		return nil, nil, err
	}
	for _, w := range f.Warnings {
		a.warnf("%s", w)
	}
	if a.warehouse == "" && a.catalogName == "" {
		o := f.CatalogOptions()
		a.warehouse, a.catalogName = o.Warehouse, o.Name
		if a.configFile == "" {
			a.configFile = o.ConfigFile
		}
	}
	p, err := f.Pipeline()
	if err != nil {
		return nil, nil, err
	}
	return p, args[1:], nil
}

type programSource struct {
	prog       string
	transforms []*transform.Transform
}

func (programSource) usage() string { return "[NAME...]" }

func (s programSource) load(_ *app, args []string) (*pipeline.Pipeline, []string, error) {
	p, err := pipeline.FromTransforms(s.prog, s.transforms)
	if err != nil {
		return nil, nil, err
	}
	p.StatusFile = "." + s.prog + ".floe-history.jsonl"
	return p, args, nil
}

// pipelineFlags are the options of run and build.
type pipelineFlags struct {
	once       bool
	every      time.Duration
	full       bool
	explain    bool
	logFormat  string
	statusFile string
	serve      serveFlags
	engine     engineFlags
}

func (f *pipelineFlags) addRun(c *cobra.Command, scheduled bool) {
	fl := c.Flags()
	if scheduled {
		fl.BoolVar(&f.once, "once", false, "run every transform once, in dependency order, and exit")
		fl.DurationVar(&f.every, "every", 0, "run each transform on this schedule (transforms' own every: or target_lag: wins), until SIGTERM or SIGINT")
		f.serve.add(c, false)
	}
	fl.BoolVar(&f.full, "full", false, "rebuild the outputs from their inputs' current state (with --once)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	fl.StringVar(&f.statusFile, "status-file", "", "run history file read by status (default beside the pipeline file)")
	f.engine.register(c)
}

func runCommand(a *app, src pipelineSource) *cobra.Command {
	var f pipelineFlags
	_, fromFile := src.(fileSource)
	long := `Run the transforms of a pipeline in dependency order: a transform whose source is
another's destination runs after it. With --once each runs once and the exit status
is 1 if any failed (the others still run, except those downstream of a failure).
With --every D (or the transforms' own every:) floe keeps running them, each on its
schedule with up to 10% random jitter, never two runs of one transform at a time,
dependants after their sources. SIGTERM or SIGINT stops scheduling; a build in
progress stops before it commits (or finishes the commit it is in), and floe exits 0.
A transform with target_lag: is built when its lag would pass it instead.
A run that finds another process built the transform first ("superseded") is not
a failure. Every run is recorded for status; logs are structured (--log-format
text|json). --metrics-addr serves Prometheus metrics (/metrics, /healthz, /readyz)
and --http the status page; both bind 127.0.0.1 unless given another host, and
have no authentication: they show table names, snapshot ids, times, row counts
and error messages, never data rows. --explain prints what floe explain prints and
builds nothing.`
	example := `  floe run pipeline.yaml --once
  floe run pipeline.yaml --explain
  floe run pipeline.yaml active_orders --once --full
  floe run pipeline.yaml --every 15m --log-format json --metrics-addr 127.0.0.1:9090 --http 127.0.0.1:8080`
	if !fromFile {
		prog := src.(programSource).prog
		long = strings.ReplaceAll(long, "floe", prog)
		example = fmt.Sprintf("  %s run --once\n  %s run --every 15m --metrics-addr 127.0.0.1:9090", prog, prog)
	}
	c := &cobra.Command{
		Use:     "run " + src.usage() + " [--once | --every D]",
		Short:   "Run the pipeline's transforms once or on a schedule",
		Long:    long,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.explain {
				if f.every != 0 {
					return usagef("--explain builds nothing: use it without --every")
				}
				return a.explain(cmd.Context(), args[0], args[1:], f.full)
			}
			return runPipeline(cmd.Context(), a, src, args, f, true)
		},
	}
	if fromFile {
		c.Args = cobra.MinimumNArgs(1)
		c.Flags().BoolVar(&f.explain, "explain", false, "print what floe explain prints (per transform: incremental or full, the rule, why) and build nothing")
	}
	f.addRun(c, true)
	return c
}

// buildCommand is the build command of programs built with package cmdline:
// run once, in dependency order.
func buildCommand(a *app, src pipelineSource) *cobra.Command {
	var f pipelineFlags
	prog := src.(programSource).prog
	c := &cobra.Command{
		Use:   "build " + src.usage() + " [--full]",
		Short: "Build the transforms (all, or the named ones) once, in dependency order",
		Long: `Build each transform once, in dependency order: incrementally when its outputs'
watermarks allow, in full otherwise (the reason is printed). The exit status is 1 if
any failed; the others still run, except those downstream of a failure.`,
		Example: fmt.Sprintf("  %s build\n  %s build NAME --full", prog, prog),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.once = true
			return runPipeline(cmd.Context(), a, src, args, f, false)
		},
	}
	f.addRun(c, false)
	return c
}

func runPipeline(ctx context.Context, a *app, src pipelineSource, args []string, f pipelineFlags, scheduled bool) error {
	if f.once && f.every != 0 {
		return usagef("--once and --every exclude each other")
	}
	if f.every < 0 {
		return usagef("--every %s: want a positive duration", f.every)
	}
	if f.full && !f.once {
		return usagef("--full rebuilds once: use it with --once")
	}
	if err := f.serve.check(); err != nil {
		return err
	}
	sigctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		defer safe.Recover(nil)
		// A second signal gets the default behaviour: stop at once.
		<-sigctx.Done()
		stop()
	}()
	log, err := a.pipelineLogger(f.logFormat)
	if err != nil {
		return err
	}
	p, names, err := src.load(a, args)
	if err != nil {
		return err
	}
	steps, err := p.Select(names...)
	if err != nil {
		return usageError{err}
	}
	var sched *pipeline.Scheduler
	if !f.once {
		sched = &pipeline.Scheduler{Pipeline: p, Steps: steps, Every: f.every, Logger: log}
		if _, err := sched.Intervals(); err != nil {
			return usageError{fmt.Errorf("%w: give --every D, or use --once", err)}
		}
	}
	cat, err := a.Catalog(sigctx)
	if err != nil {
		return err
	}
	push, err := f.engine.settings(a, sparkLayer{p.Spark.Engine, p.Spark.Remote, p.Spark.Catalog, p.Spark.Threshold}, p.Spark.Conf)
	if err != nil {
		return err
	}
	push.Logger = log
	runner := &pipeline.Runner{Catalog: cat, Logger: log, Full: f.full, History: historyFor(p, f.statusFile, log),
		Pipeline: p, Engine: "floe " + Version, Push: push}
	if remote := pushNeeded(push, steps); remote != "" {
		s := push
		s.Kind = pushdown.Kind(remote)
		eng, err := a.connectEngine(sigctx, s, cat)
		if err != nil {
			return err
		}
		defer eng.Close()
		runner.Remote = eng
	}
	if f.serve.any() {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		runner.Metrics = pipeline.NewMetrics(reg)
		mon := &pipeline.Monitor{Pipeline: p, Runner: runner, Every: f.serve.statusEvery, Metrics: runner.Metrics, Logger: log}
		shutdown, err := f.serve.start(sigctx, mon, reg, log)
		if err != nil {
			return err
		}
		defer shutdown()
	}
	if f.once {
		outcomes, err := runner.RunOnce(sigctx, p, steps)
		if perr := a.reportOutcomes(outcomes); perr != nil {
			return perr
		}
		if err != nil && sigctx.Err() != nil && ctx.Err() == nil {
			return errors.New(stoppedMessage(outcomes, len(steps)))
		}
		return err
	}
	sched.RunStep, sched.Blocked, sched.Pending = runner.RunStep, runner.Blocked, runner.PendingSince
	log.Info("running on a schedule; stop with SIGTERM or SIGINT", "pipeline", p.Name, "transforms", len(steps))
	return sched.Run(sigctx)
}

// stoppedMessage says how far a run --once stopped by a signal got: the
// transforms that finished (the one in progress stopped before
// committing, and is not counted).
func stoppedMessage(outcomes []pipeline.Outcome, total int) string {
	done := 0
	for _, o := range outcomes {
		if o.Kind != pipeline.OutcomeAborted {
			done++
		}
	}
	msg := fmt.Sprintf("stopped by a signal after %d of %d transforms", done, total)
	if done < len(outcomes) {
		msg += " (the build in progress stopped before committing)"
	}
	return msg
}

func historyFor(p *pipeline.Pipeline, flag string, log *slog.Logger) *pipeline.History {
	path := p.StatusFile
	if flag != "" {
		path = flag
	}
	if path == "" {
		return nil
	}
	h := pipeline.OpenHistory(path)
	h.Pipeline, h.Logger = p.Name, log
	return h
}

// pipelineLogger is the structured logger of run and build: text or JSON
// on stderr, warnings only with --quiet.
func (a *app) pipelineLogger(format string) (*slog.Logger, error) {
	level := slog.LevelInfo
	if a.quiet {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(a.stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(a.stderr, opts)), nil
	}
	return nil, usagef("--log-format %q: want text or json", format)
}

// outcomeJSON is how --format json and jsonl print an outcome.
type outcomeJSON struct {
	Transform  string       `json:"transform"`
	Outcome    string       `json:"outcome"`
	Reason     string       `json:"reason,omitempty"`
	Error      string       `json:"error,omitempty"`
	Started    time.Time    `json:"started"`
	DurationMS float64      `json:"duration_ms"`
	Inputs     []inputJSON  `json:"inputs,omitempty"`
	Outputs    []outputJSON `json:"outputs,omitempty"`
}

type inputJSON struct {
	Name      string `json:"name"`
	Table     string `json:"table"`
	Start     string `json:"start,omitempty"`
	End       string `json:"end"`
	Snapshots int    `json:"snapshots"`
}

type outputJSON struct {
	Name        string `json:"name"`
	Table       string `json:"table"`
	Operation   string `json:"operation"`
	Committed   bool   `json:"committed"`
	SnapshotID  int64  `json:"snapshot_id,omitempty"`
	RowsAdded   int64  `json:"rows_added"`
	RowsRemoved int64  `json:"rows_removed"`
	AnswerLost  bool   `json:"answer_lost,omitempty"`
}

func toJSON(o pipeline.Outcome) outcomeJSON {
	j := outcomeJSON{Transform: o.Step, Outcome: o.Kind, Started: o.Started.UTC(),
		DurationMS: float64(o.Duration.Microseconds()) / 1000}
	if o.Err != nil {
		j.Error = o.Err.Error()
	}
	if r := o.Result; r != nil {
		j.Reason = r.Reason
		for _, in := range r.Inputs {
			j.Inputs = append(j.Inputs, inputJSON{Name: in.Name, Table: in.Table, Start: in.Start, End: in.End, Snapshots: in.Snapshots})
		}
		for _, out := range r.Outputs {
			j.Outputs = append(j.Outputs, outputJSON{Name: out.Name, Table: out.Table, Operation: out.Operation,
				Committed: out.Committed, SnapshotID: out.SnapshotID, RowsAdded: out.RowsAdded, RowsRemoved: out.RowsRemoved, AnswerLost: out.AnswerLost})
		}
	}
	return j
}

func (a *app) reportOutcomes(outcomes []pipeline.Outcome) error {
	f, err := a.outputFormat()
	if err != nil {
		return err
	}
	if f == rowfile.OutputJSON || f == rowfile.OutputJSONL {
		all := []outcomeJSON{}
		for _, o := range outcomes {
			all = append(all, toJSON(o))
		}
		enc := json.NewEncoder(a.stdout)
		if f == rowfile.OutputJSON {
			return enc.Encode(all)
		}
		for _, j := range all {
			if err := enc.Encode(j); err != nil {
				return err
			}
		}
		return nil
	}
	for _, o := range outcomes {
		switch {
		case o.Result != nil && !o.Failed() && o.Kind != pipeline.OutcomeAborted && o.Kind != pipeline.OutcomeSuperseded:
			fmt.Fprintln(a.stdout, describeBuild(o.Result))
		case o.Kind == pipeline.OutcomeBlocked:
			fmt.Fprintf(a.stdout, "%s: not run: %v\n", o.Step, o.Err)
		case o.Kind == pipeline.OutcomeAborted:
			fmt.Fprintf(a.stdout, "%s: stopped before committing\n", o.Step)
		case o.Kind == pipeline.OutcomeSuperseded:
			fmt.Fprintf(a.stdout, "%s: built by another run meanwhile, nothing left to build\n", o.Step)
		default:
			fmt.Fprintf(a.stdout, "%s: failed: %v\n", o.Step, o.Err)
		}
	}
	return nil
}

// RunTransforms runs the command line of a program built with floe's Go
// API (package cmdline) with args and streams and returns its exit status:
// 0, 1 for a failure, 2 for a usage error, 3 when status --check finds an
// output past its error_after; prog names the program in usage and
// messages.
func RunTransforms(ctx context.Context, prog string, transforms []*transform.Transform, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	src := programSource{prog: prog, transforms: transforms}
	var names []string
	for _, t := range transforms {
		names = append(names, t.Name)
	}
	root := &cobra.Command{
		Use:   prog,
		Short: "Incremental transforms on Iceberg tables, built with floe",
		Long: fmt.Sprintf(`%s runs incremental transforms written with floe's Go API: %s.
Each build reads only what changed in its inputs since the last one when it can,
and commits each output once with its watermarks.`, prog, strings.Join(names, ", ")),
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPostRun: func(*cobra.Command, []string) { a.close() },
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	a.addGlobalFlags(root)
	root.AddCommand(buildCommand(a, src), runCommand(a, src), statusCommand(a, src), serveCommand(a, src), versionCommand(a))
	setArgsUsage(root)
	return execute(ctx, root, prog, args, stderr)
}
