// Package pushdown chooses the engine that runs a build (floe's own, in
// this process, or a Spark cluster reached through Spark Connect) and
// describes the work handed to a remote engine. It holds no engine: the
// Spark engine (package sparkpush) implements Engine and is wired in by
// the program (cmd/floe sets Open), so that programs built on floe's Go
// API do not carry a Spark client unless they ask for one.
//
// floe plans, the remote engine computes, floe publishes: a pushed-down
// build names its inputs by snapshot id, its output and the watermark
// properties that must land in the same commit as the data; the engine
// returns once the output carries both, or with nothing committed.
package pushdown

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/state"
)

// Kind is how the engine of a build is chosen.
type Kind string

// Kinds of engine choice.
const (
	Local Kind = "local" // floe's engine, in this process (the default)
	Spark Kind = "spark" // Spark, through Spark Connect
	Auto  Kind = "auto"  // Spark when the planned work passes the threshold
)

// ParseKind parses "local", "spark" or "auto" ("" is local).
func ParseKind(s string) (Kind, error) {
	switch Kind(strings.ToLower(strings.TrimSpace(s))) {
	case "", Local:
		return Local, nil
	case Spark:
		return Spark, nil
	case Auto:
		return Auto, nil
	}
	return "", fmt.Errorf("engine %q: want local, spark or auto", s)
}

// EnvRemote is the environment variable naming the Spark Connect server
// (sc://HOST:PORT) when --spark-remote is not given.
const EnvRemote = "FLOE_SPARK_REMOTE"

// DefaultThreshold is auto's default: the planned work (bytes of data
// files read and rewritten) past which a build goes to Spark. On the
// machine floe is developed on (2 cores) floe's engine was faster at every
// size Spark local could run (docs/benchmarks.md, section "Spark
// push-down"), so the default is set where one floe process stops being
// the right tool for memory and time, not where Spark local overtakes it.
const DefaultThreshold int64 = 64 << 30

// Snapshot summary keys every build records.
const (
	SummaryEngine       = "floe.engine"        // local or spark
	SummaryEngineReason = "floe.engine.reason" // why (auto, or a build kept local)
	SummarySession      = "floe.spark.session-id"
	SummaryApp          = "floe.spark.app-id"
	SummaryBuildID      = "floe.commit-id"
)

// Settings configure the engine choice of one command or pipeline.
type Settings struct {
	Kind Kind
	// Remote is the Spark Connect server, sc://HOST:PORT[/;params].
	Remote string
	// Catalog is the name of floe's catalog on the Spark side, when the
	// server has it configured (a cluster). Empty: floe mounts its own
	// catalog in each Spark session, under the name "floe", from its own
	// catalog settings.
	Catalog string
	// Conf are Spark session settings set on every session floe opens.
	Conf map[string]string
	// Threshold is auto's threshold in bytes (0: DefaultThreshold).
	Threshold int64
	// Logger receives the engine's log lines.
	Logger *slog.Logger
}

// WithDefaults fills Remote from FLOE_SPARK_REMOTE and Threshold.
func (s Settings) WithDefaults() Settings {
	if s.Remote == "" {
		s.Remote = os.Getenv(EnvRemote)
	}
	if s.Threshold == 0 {
		s.Threshold = DefaultThreshold
	}
	if s.Kind == "" {
		s.Kind = Local
	}
	return s
}

// ParseBytes parses a size such as 512MiB, 8GiB, 10GB or 1048576.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want bytes such as 512MiB, 8GiB or 10GB", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatBytes renders n in binary units.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.1fTiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.1fGiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// Estimate is the planned work of a build, read from snapshot summaries
// (no data file is read).
type Estimate struct {
	// ReadBytes are the bytes of the input data and delete files the build
	// reads: the files the range's snapshots added and removed, or, on a
	// full build, the input's files.
	ReadBytes int64
	// RewriteBytes are the bytes of the output's files a copy-on-write
	// build may rewrite (its current files; 0 for merge-on-read outputs).
	RewriteBytes int64
	// ChangeRows are the rows the range's snapshots add or remove (a full
	// build: the input's rows).
	ChangeRows int64
}

// Work is the bytes the build reads and rewrites.
func (e Estimate) Work() int64 { return e.ReadBytes + e.RewriteBytes }

func (e Estimate) String() string {
	return fmt.Sprintf("%s to read, %s to rewrite, %d change rows", FormatBytes(e.ReadBytes), FormatBytes(e.RewriteBytes), e.ChangeRows)
}

// Add sums two estimates.
func (e Estimate) Add(o Estimate) Estimate {
	return Estimate{ReadBytes: e.ReadBytes + o.ReadBytes, RewriteBytes: e.RewriteBytes + o.RewriteBytes, ChangeRows: e.ChangeRows + o.ChangeRows}
}

// EstimateRange estimates reading tbl from snapshot start (exclusive; nil:
// a full read) up to head.
func EstimateRange(tbl *table.Table, head *table.Snapshot, start *int64) Estimate {
	var e Estimate
	if head == nil {
		return e
	}
	if start == nil {
		e.ReadBytes = summaryInt(head, "total-files-size")
		e.ChangeRows = summaryInt(head, "total-records")
		return e
	}
	for _, s := range state.Between(tbl.Metadata(), head, start) {
		e.ReadBytes += summaryInt(s, "added-files-size") + summaryInt(s, "removed-files-size")
		e.ChangeRows += summaryInt(s, "added-records") + summaryInt(s, "deleted-records") +
			summaryInt(s, "added-position-deletes") + summaryInt(s, "added-equality-deletes")
	}
	return e
}

// EstimateOutput estimates what a build may rewrite of an output (nil:
// missing): its current files when it is copy-on-write.
func EstimateOutput(tbl *table.Table) Estimate {
	if tbl == nil {
		return Estimate{}
	}
	s := tbl.CurrentSnapshot()
	if s == nil {
		return Estimate{}
	}
	if tbl.Properties().Get("write.merge.mode", "copy-on-write") == "merge-on-read" {
		return Estimate{}
	}
	return Estimate{RewriteBytes: summaryInt(s, "total-files-size")}
}

func summaryInt(s *table.Snapshot, key string) int64 {
	if s == nil || s.Summary == nil {
		return 0
	}
	n, _ := strconv.ParseInt(s.Summary.Properties[key], 10, 64)
	return n
}

// Decision is the engine chosen for one build, and why.
type Decision struct {
	Engine string // "local" or "spark"
	Reason string
}

// Spark reports whether the build goes to Spark.
func (d Decision) Spark() bool { return d.Engine == string(Spark) }

// Choose decides the engine of a build. unsupported, when not "", says why
// the build cannot be pushed down (it stays local; with Kind spark that is
// an error wrapping ErrNotPushable).
func (s Settings) Choose(e Estimate, unsupported string) (Decision, error) {
	s = s.WithDefaults()
	switch s.Kind {
	case Spark:
		if unsupported != "" {
			return Decision{}, fmt.Errorf("%w: %s; run it with --engine local (or auto, which keeps such builds local)", ErrNotPushable, unsupported)
		}
		return Decision{Engine: string(Spark), Reason: "--engine spark"}, nil
	case Auto:
		if unsupported != "" {
			return Decision{Engine: string(Local), Reason: "auto: kept local: " + unsupported}, nil
		}
		if e.Work() > s.Threshold {
			return Decision{Engine: string(Spark), Reason: fmt.Sprintf("auto: planned work %s is above the threshold %s (%s)", FormatBytes(e.Work()), FormatBytes(s.Threshold), e)}, nil
		}
		return Decision{Engine: string(Local), Reason: fmt.Sprintf("auto: planned work %s is within the threshold %s (%s)", FormatBytes(e.Work()), FormatBytes(s.Threshold), e)}, nil
	}
	return Decision{Engine: string(Local)}, nil
}

// Summary is the snapshot summary a build chosen by d records.
func (d Decision) Summary() map[string]string {
	engine := d.Engine
	if engine == "" {
		engine = string(Local)
	}
	m := map[string]string{SummaryEngine: engine}
	if d.Reason != "" {
		m[SummaryEngineReason] = d.Reason
	}
	return m
}

// Errors of the push-down.
var (
	// ErrNotPushable: the build cannot run on Spark (--engine spark).
	ErrNotPushable = errors.New("build cannot be pushed down to Spark")
	// ErrNotWired: this program has no Spark engine (Open is nil).
	ErrNotWired = errors.New("the Spark engine is not part of this program")
	// ErrNoRemote: --engine spark or auto without a Spark Connect server.
	ErrNoRemote = errors.New("no Spark Connect server given")
)

// JobKind says what a pushed-down build computes.
type JobKind string

// Job kinds.
const (
	JobSync   JobKind = "sync"   // keep Output = SELECT Columns FROM Source WHERE Filter, by Keys
	JobFilter JobKind = "filter" // append the rows added to Source that match Filter
	JobMerge  JobKind = "merge"  // run Statement with Source's per-key changes as {changes}
	JobSQL    JobKind = "sql"    // floe merge: run a MERGE INTO statement (Statement) as given
	JobApply  JobKind = "apply"  // floe apply: upsert and delete by Keys from the file ChangesPath
	JobDelta  JobKind = "delta"  // floe delta sync: apply a Delta table's change feed by Keys
)

// Input is one input of a job, pinned by snapshot id.
type Input struct {
	Table table.Identifier
	// Start is the last processed snapshot (exclusive); nil on a full build.
	Start *int64
	// End is the snapshot read up to; nil when the input has no snapshot.
	End *int64
}

// Job is one build handed to a remote engine.
type Job struct {
	Kind    JobKind
	Catalog *catalog.Catalog
	// Output is the table written; Branch its branch ("" main). It exists
	// (floe creates a missing output before pushing a build down).
	Output table.Identifier
	Branch string
	// Replace: the build is not incremental; the output's rows are
	// replaced by the result.
	Replace bool
	Source  Input
	Keys    []string
	Filter  string
	// Columns of the output, in order (nil: the source's).
	Columns []string
	// Statement is the MERGE INTO of JobMerge (with {destination} and
	// {changes} already replaced by the output's name and "changes") or
	// JobSQL.
	Statement string
	// ChangesPath, SequenceColumn and ChangeTypeColumn: JobApply.
	ChangesPath, SequenceColumn, ChangeTypeColumn string
	// DeltaPath, DeltaStart and DeltaEnd (inclusive versions): JobDelta.
	DeltaPath            string
	DeltaStart, DeltaEnd int64
	// SetProperties land in the same commit as the data (watermarks);
	// Expect must still hold on the output when it commits ("" = absent).
	SetProperties map[string]string
	Expect        map[string]string
	// Summary goes into the summary of every snapshot the build commits.
	Summary map[string]string
	// BuildID identifies the build (floe.commit-id); empty: a new UUID.
	BuildID string
	Logger  *slog.Logger
}

// Result is what a pushed-down build committed.
type Result struct {
	Committed   bool
	SnapshotID  int64
	RowsAdded   int64
	RowsRemoved int64
	// Attempts of floe's publishing commit.
	Attempts int
	BuildID  string
	// Remote, SessionID and AppID name where it ran.
	Remote, SessionID, AppID string
	// AnswerLost: the Spark statement's answer was lost and floe found its
	// commit by the build id.
	AnswerLost bool
	// Statements are the Spark SQL statements run, in order.
	Statements []string
	// Table is the output after the build.
	Table *table.Table
	// Metrics are Spark's MERGE metrics of the last snapshot, when known.
	Metrics iceberg.Properties
}

// Engine runs builds remotely. An Engine is opened per command or
// pipeline run and may run builds from several goroutines.
type Engine interface {
	// Run runs one build: the output ends with the data and
	// SetProperties in one commit, or with nothing committed. Its errors
	// name the output ("output NAME: ..."), so callers do not again.
	Run(ctx context.Context, job Job) (*Result, error)
	// Remote names the server.
	Remote() string
	// Close releases the engine's connections.
	Close() error
}

// Open opens the Spark engine of s for the catalog cat. It is nil until a
// program wires the Spark engine in (cmd/floe: sparkpush.Open).
var Open func(ctx context.Context, s Settings, cat *catalog.Catalog) (Engine, error)

// Connect opens the engine s asks for when its Kind is spark or auto;
// it returns nil for local.
func Connect(ctx context.Context, s Settings, cat *catalog.Catalog) (Engine, error) {
	s = s.WithDefaults()
	if s.Kind == Local {
		return nil, nil
	}
	if Open == nil {
		return nil, fmt.Errorf("--engine %s: %w (build floe with cmd/floe, or set pushdown.Open = sparkpush.Open)", s.Kind, ErrNotWired)
	}
	if s.Remote == "" {
		return nil, fmt.Errorf("--engine %s: %w: pass --spark-remote sc://HOST:PORT, set %s, or give spark: {remote: ...} in the configuration", s.Kind, ErrNoRemote, EnvRemote)
	}
	return Open(ctx, s, cat)
}
