package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/pipeline/web"
)

// terminalWidth is the width of floe status's default table.
const terminalWidth = 100

func statusCommand(a *app, src pipelineSource) *cobra.Command {
	var statusFile string
	var check, history, wide bool
	var limit int
	var warnAfter, errorAfter time.Duration
	_, fromFile := src.(fileSource)
	example := `  floe status pipeline.yaml
  floe status pipeline.yaml --check                  # for cron and CI: exit 3 past error_after
  floe status pipeline.yaml --history --limit 50
  floe status pipeline.yaml --wide
  floe status pipeline.yaml --format jsonl`
	if !fromFile {
		prog := src.(programSource).prog
		example = fmt.Sprintf("  %s status\n  %s status --check\n  %s status --history", prog, prog, prog)
	}
	c := &cobra.Command{
		Use:   "status " + src.usage(),
		Short: "Show how far behind each output is, in time, with its watermarks, last build and last error",
		Long: `For each transform and output, the time lag first: how long the oldest change of the
sources upstream (through chains of transforms) that the output does not reflect has
waited, and its freshness against the transform's freshness: targets (ok, warn, error).
Then the snapshots behind, the last build, the last run and a note when the next build
cannot be incremental. --wide and --format jsonl|json|csv give every figure: per input
the watermark and its commit time, the head and its commit time, the snapshots and rows
not yet applied (from snapshot summaries), and the run history's last build and error.
It reads metadata only.

--history lists the recorded runs (newest first): start, outcome, duration, rows,
bytes read and written, lag after the run, error.

--check is for cron and CI: the exit status is 3 when an output is past its error_after,
1 when the lag of a transform with a target cannot be measured, 0 otherwise (warnings
on stderr). --warn-after and --error-after give targets to transforms without their own.`,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, names, err := src.load(a, args)
			if err != nil {
				return err
			}
			steps, err := p.Select(names...)
			if err != nil {
				return usageError{err}
			}
			if _, err := a.outputFormat(); err != nil {
				return err
			}
			if limit < 1 {
				return usagef("--limit %d: want 1 or more", limit)
			}
			if warnAfter < 0 || errorAfter < 0 || (warnAfter > 0 && errorAfter > 0 && warnAfter > errorAfter) {
				return usagef("--warn-after %s --error-after %s: want positive durations, warn before error", warnAfter, errorAfter)
			}
			for _, s := range steps {
				if s.WarnAfter == 0 && s.ErrorAfter == 0 {
					s.WarnAfter, s.ErrorAfter = warnAfter, errorAfter
				}
			}
			hist := historyFor(p, statusFile, a.logger())
			if history {
				if hist == nil {
					return errors.New("this pipeline keeps no run history")
				}
				d, err := hist.Read()
				if err != nil {
					return err
				}
				a.warn(d.Warnings)
				return a.printHistory(d, steps, limit, wide)
			}
			if check && !hasTargets(steps) {
				return usagef("--check: no transform has a freshness target (freshness: {error_after: D} in the pipeline file, or --error-after D)")
			}
			cat, err := a.Catalog(ctx)
			if err != nil {
				return err
			}
			runner := &pipeline.Runner{Catalog: cat, History: hist, Pipeline: p}
			rep, err := runner.Report(ctx, p, steps)
			if err != nil {
				return err
			}
			if rep.History != nil {
				a.warn(rep.History.Warnings)
			}
			if err := a.printStatus(rep, wide); err != nil {
				return err
			}
			if check {
				return a.checkFreshness(rep)
			}
			return nil
		},
	}
	if fromFile {
		c.Args = cobra.MinimumNArgs(1)
	}
	fl := c.Flags()
	fl.StringVar(&statusFile, "status-file", "", "run history file (default beside the pipeline file)")
	fl.BoolVar(&check, "check", false, "exit 3 when an output is past its error_after, 1 when a lag cannot be measured")
	fl.BoolVar(&history, "history", false, "list the recorded runs, newest first")
	fl.IntVar(&limit, "limit", 20, "with --history: how many runs")
	fl.BoolVar(&wide, "wide", false, "every column (the default table fits 100 columns)")
	fl.DurationVar(&warnAfter, "warn-after", 0, "freshness target for transforms without their own: warn past this lag")
	fl.DurationVar(&errorAfter, "error-after", 0, "freshness target for transforms without their own: error past this lag")
	return c
}

func hasTargets(steps []*pipeline.Step) bool {
	for _, s := range steps {
		if s.WarnAfter > 0 || s.ErrorAfter > 0 {
			return true
		}
	}
	return false
}

// warn prints warnings on stderr (also with --quiet: they are about
// floe's own files).
func (a *app) warn(ws []string) {
	for _, w := range ws {
		fmt.Fprintln(a.stderr, "floe: warning: "+w)
	}
}

// checkFreshness is status --check's verdict.
func (a *app) checkFreshness(rep *pipeline.Report) error {
	var stale, unknown []string
	for _, o := range rep.Outputs {
		lag := o.EndToEndLag
		if lag == nil {
			lag = o.Lag
		}
		what := fmt.Sprintf("%s (%s)", o.Transform, o.Output)
		switch o.Freshness {
		case pipeline.FreshError:
			stale = append(stale, fmt.Sprintf("%s: lag %s is past error_after %s", what, web.Duration(*lag), web.Duration(o.ErrorAfter)))
		case pipeline.FreshWarn:
			fmt.Fprintf(a.stderr, "floe: warning: %s: lag %s is past warn_after %s\n", what, web.Duration(*lag), web.Duration(o.WarnAfter))
		case pipeline.FreshUnknown:
			unknown = append(unknown, fmt.Sprintf("%s: %s", what, or(o.Note, rep.CatalogError, "the lag is not known")))
		}
	}
	switch {
	case len(stale) > 0:
		return exitError{code: ExitStale, err: fmt.Errorf("stale: %s", strings.Join(stale, "; "))}
	case len(unknown) > 0:
		return fmt.Errorf("cannot tell the freshness of %s", strings.Join(unknown, "; "))
	}
	return nil
}

func or(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func lagOf(o pipeline.OutputStatus) *time.Duration {
	if o.EndToEndLag != nil {
		return o.EndToEndLag
	}
	return o.Lag
}

func lagText(d *time.Duration) string {
	if d == nil {
		return "unknown"
	}
	return web.Duration(*d)
}

func secondsOf(d *time.Duration) any {
	if d == nil {
		return nil
	}
	return int64(d.Round(time.Second) / time.Second)
}

// ago renders how long before now t was ("" when t is zero).
func ago(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	return web.Duration(now.Sub(t)) + " ago"
}

func (a *app) printStatus(rep *pipeline.Report, wide bool) error {
	f, err := a.outputFormat()
	if err != nil {
		return err
	}
	if f == rowfile.OutputTable && !wide {
		return a.printStatusNarrow(rep)
	}
	cols := []column{
		{name: "lag_s", typ: i64Type}, {name: "own_lag_s", typ: i64Type}, {name: "freshness", typ: strType},
		{name: "transform", typ: strType}, {name: "type", typ: strType}, {name: "output", typ: strType},
		{name: "exists", typ: boolType}, {name: "snapshot_id", typ: i64Type}, {name: "built_at", typ: tsType},
		{name: "built_by", typ: strType}, {name: "watermarks", typ: strList}, {name: "watermark_times", typ: strList},
		{name: "heads", typ: strList}, {name: "head_times", typ: strList}, {name: "pending_since", typ: tsType},
		{name: "behind", typ: i64Type}, {name: "rows_behind", typ: i64Type}, {name: "stalest", typ: strType},
		{name: "warn_after", typ: strType}, {name: "error_after", typ: strType},
		{name: "last_build", typ: tsType}, {name: "last_build_outcome", typ: strType},
		{name: "last_run", typ: tsType}, {name: "last_outcome", typ: strType}, {name: "last_error_at", typ: tsType},
		{name: "last_error", typ: strType}, {name: "note", typ: strType},
		{name: "built_with", typ: strType}, {name: "spark_session", typ: strType}, {name: "spark_app", typ: strType},
	}
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	optTime := func(t time.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	optDur := func(d time.Duration) any {
		if d == 0 {
			return nil
		}
		return d.String()
	}
	for _, s := range rep.Outputs {
		var snap, builtAt any
		if s.SnapshotID != 0 {
			snap, builtAt = s.SnapshotID, s.BuiltAt
		}
		wms, wmTimes, heads, headTimes := []string{}, []string{}, []string{}, []string{}
		var pending time.Time
		for _, in := range s.Inputs {
			if in.Watermark != "" {
				wms = append(wms, in.Name+"="+in.Watermark)
			}
			if !in.WatermarkAt.IsZero() {
				wmTimes = append(wmTimes, in.Name+"="+in.WatermarkAt.Format(time.RFC3339Nano))
			}
			if in.Head != "" {
				heads = append(heads, in.Name+"="+in.Head)
			}
			if !in.HeadAt.IsZero() {
				headTimes = append(headTimes, in.Name+"="+in.HeadAt.Format(time.RFC3339Nano))
			}
			if !in.PendingSince.IsZero() && (pending.IsZero() || in.PendingSince.Before(pending)) {
				pending = in.PendingSince
			}
		}
		var lastBuild, lastBuildOutcome, lastRun, lastOutcome, lastErrAt, lastErr any
		if r := s.Run; r != nil {
			lastRun, lastOutcome = r.LastRun, r.LastOutcome
			if r.LastError != "" {
				lastErrAt, lastErr = r.LastErrorAt, r.LastError
			}
			if b := r.LastBuild; b != nil {
				lastBuild, lastBuildOutcome = b.Start, b.Outcome
			}
		}
		vals := []any{secondsOf(lagOf(s)), secondsOf(s.Lag), opt(s.Freshness), s.Transform, s.Type, s.Output, s.Exists, snap, builtAt,
			opt(s.BuiltBy), wms, wmTimes, heads, headTimes, optTime(pending), s.Behind, s.RowsBehind, opt(s.Stalest),
			optDur(s.WarnAfter), optDur(s.ErrorAfter), lastBuild, lastBuildOutcome, lastRun, lastOutcome, lastErrAt, lastErr, opt(s.Note),
			opt(s.BuiltWith), opt(s.BuiltSession), opt(s.BuiltApp)}
		for i := range cols {
			cols[i].values = append(cols[i].values, vals[i])
		}
	}
	return a.printColumns(cols)
}

// printStatusNarrow prints the default table: the lag first, one line
// per output, fitting terminalWidth columns.
func (a *app) printStatusNarrow(rep *pipeline.Report) error {
	rows := [][]string{{"LAG", "FRESH", "TRANSFORM", "OUTPUT", "BEHIND", "BUILT", "LAST RUN", "NOTE"}}
	for _, s := range rep.Outputs {
		fresh := s.Freshness
		if fresh == "" {
			fresh = "-"
		}
		behind := "?"
		if s.Behind != nil {
			behind = strconv.FormatInt(*s.Behind, 10)
		}
		built := ago(s.BuiltAt, rep.At)
		if r := s.Run; r != nil && r.LastBuild != nil {
			built = ago(r.LastBuild.End, rep.At)
		}
		if s.BuiltWith == "spark" && built != "" {
			built += " (spark)"
		}
		last, note := "", s.Note
		if r := s.Run; r != nil {
			last = r.LastOutcome + " " + ago(r.LastRun, rep.At)
			if r.LastOutcome == pipeline.OutcomeError || r.LastOutcome == pipeline.OutcomeBlocked {
				note = or(r.LastError, note)
			}
		}
		if !s.Exists && note == "" {
			note = "missing"
		}
		rows = append(rows, []string{lagText(lagOf(s)), fresh, s.Transform, s.Output, behind, or(built, "-"), or(last, "-"), note})
	}
	if rep.CatalogError != "" {
		fmt.Fprintln(a.stderr, "floe: warning: the catalog did not answer: "+rep.CatalogError)
	}
	return writeNarrow(a.stdout, rows, []int{9, 7, 18, 24, 6, 10, 16, 0}, terminalWidth)
}

// writeNarrow prints rows in columns of at most the given widths (0: the
// rest of the line), each line cut at width.
func writeNarrow(w io.Writer, rows [][]string, caps []int, width int) error {
	widths := make([]int, len(caps))
	for _, r := range rows {
		for i, c := range r {
			if caps[i] > 0 {
				widths[i] = max(widths[i], min(len([]rune(c)), caps[i]))
			}
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			if caps[i] == 0 {
				b.WriteString(oneLine(c))
				continue
			}
			c = cut(oneLine(c), widths[i])
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))))
			}
		}
		line := strings.TrimRight(cut(b.String(), width), " ")
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cut shortens s to n runes, ending it with … when cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}

// printHistory prints the recorded runs of the steps, newest first.
func (a *app) printHistory(d *pipeline.HistoryData, steps []*pipeline.Step, limit int, wide bool) error {
	want := map[string]bool{}
	for _, s := range steps {
		want[s.Name] = true
	}
	var recs []pipeline.RunRecord
	for i := len(d.Records) - 1; i >= 0 && len(recs) < limit; i-- {
		if want[d.Records[i].Transform] {
			recs = append(recs, d.Records[i])
		}
	}
	f, err := a.outputFormat()
	if err != nil {
		return err
	}
	lag := func(s *float64) *time.Duration {
		if s == nil {
			return nil
		}
		d := time.Duration(*s * float64(time.Second))
		return &d
	}
	if f == rowfile.OutputTable && !wide {
		rows := [][]string{{"START", "TRANSFORM", "OUTCOME", "TOOK", "ROWS", "LAG AFTER", "ERROR"}}
		for _, r := range recs {
			outcome, took := r.Outcome, r.End.Sub(r.Start).Round(time.Millisecond).String()
			if r.Repeat > 1 {
				outcome, took = fmt.Sprintf("%s x%d", r.Outcome, r.Repeat), "-"
			}
			rowsText := "-"
			if r.Built() {
				rowsText = fmt.Sprintf("+%d -%d", r.RowsAdded, r.RowsRemoved)
			}
			lagAfter := "-"
			if r.LagAfter != nil {
				lagAfter = lagText(lag(r.LagAfter))
			}
			rows = append(rows, []string{r.Start.UTC().Format("2006-01-02 15:04:05"), r.Transform, outcome, took, rowsText, lagAfter, r.Error})
		}
		return writeNarrow(a.stdout, rows, []int{19, 18, 14, 8, 14, 9, 0}, terminalWidth)
	}
	cols := []column{
		{name: "start", typ: tsType}, {name: "end", typ: tsType}, {name: "transform", typ: strType}, {name: "outcome", typ: strType},
		{name: "repeat", typ: i64Type}, {name: "reason", typ: strType}, {name: "rows_added", typ: i64Type}, {name: "rows_removed", typ: i64Type},
		{name: "bytes_read", typ: i64Type}, {name: "bytes_written", typ: i64Type}, {name: "commit_attempts", typ: i64Type},
		{name: "lag_before_s", typ: i64Type}, {name: "lag_after_s", typ: i64Type}, {name: "engine", typ: strType}, {name: "error", typ: strType},
	}
	opt := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	for _, r := range recs {
		vals := []any{r.Start, r.End, r.Transform, r.Outcome, int64(max(r.Repeat, 1)), opt(r.Reason), r.RowsAdded, r.RowsRemoved,
			r.BytesRead, r.BytesWritten, int64(r.CommitAttempts), secondsOf(lag(r.LagBefore)), secondsOf(lag(r.LagAfter)), opt(r.Engine), opt(r.Error)}
		for i := range cols {
			cols[i].values = append(cols[i].values, vals[i])
		}
	}
	return a.printColumns(cols)
}
