// Package floe is the Go API for incremental transforms on Iceberg tables:
// the seeds' @incremental transforms, in Go. A transform declares named
// inputs and outputs, a read mode and a semantic version, and a compute
// function; floe builds it incrementally when it can (reading only what
// changed since the last build, committing each output once with its
// watermarks) and in full when it must, saying why.
//
//	t := floe.NewTransform("active_orders", func(ctx *floe.Context) error {
//		src, out := ctx.Input("orders"), ctx.Output("active")
//		if !ctx.IsIncremental() {
//			rows, err := src.Filter("status = 'active'").Current()
//			if err != nil {
//				return err
//			}
//			return out.Write(rows)
//		}
//		changes, err := src.Filter("status = 'active'").Changelog("id")
//		if err != nil {
//			return err
//		}
//		return out.ApplyChangelog(changes, "id")
//	}, floe.WithInput("orders", "shop.orders"), floe.WithOutput("active", "shop.active_orders"),
//		floe.WithReadMode(floe.Changelog))
//
// A Runner builds it against a catalog (package catalog opens one):
//
//	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: "warehouse"})
//	...
//	res, err := (&floe.Runner{Catalog: cat}).Build(ctx, t)
//
// and package cmdline gives a program floe's command line for its
// transforms (build, run on a schedule, status, the status page):
//
//	func main() { os.Exit(cmdline.Main(t)) }
//
// SQL declares a transform from a SELECT (floe's sql type; it needs the
// DuckDB engine, import _ "github.com/floedata/floe/sqltx/duckdb"):
//
//	t, err := floe.SQL(floe.SQLSpec{Name: "open_orders", Keys: []string{"id"}, Dst: "shop.open_orders",
//		Query: "SELECT id, upper(customer) AS customer FROM shop.orders WHERE status = 'open'"})
//
// Package pipeline runs several in dependency order, on schedules, with
// history and metrics.
//
// # Catalogs and storage a program gets
//
// Importing floe forces no object store and neither Glue nor Hive on a
// program: it gets floe's embedded catalog (SQLite), the SQL, Hadoop and
// REST catalog types of configuration files (REST catalogs are opened with
// floe's HTTP transport, which bounds every request; it brings the AWS SDK
// for SigV4), and local files. The other catalog types and object
// stores register themselves with iceberg-go when imported, as iceberg-go's
// own do; a program blank-imports those it needs where it is assembled
// (the floe binary imports all of them in cmd/floe):
//
//	import (
//		_ "github.com/apache/iceberg-go/catalog/glue" // type: glue
//		_ "github.com/apache/iceberg-go/catalog/hive" // type: hive
//		_ "github.com/floedata/floe/s3io"             // s3://, s3a://, s3n://, oss:// (floe's S3 IO)
//		_ "github.com/floedata/floe/gcsio"            // gs:// (floe's GCS IO)
//		_ "github.com/floedata/floe/azio"             // abfs://, abfss://, wasb://, wasbs:// (floe's Azure IO)
//	)
//
// A catalog or location whose backend is not compiled in fails with an
// error that names the import.
//
// # Concurrency
//
// A Transform is read-only once declared and may be built by several
// Runners at once; one build's Context, Inputs and Outputs belong to that
// build's compute function. Two builds of one transform racing on the same
// outputs are safe: the commit of the second fails its watermark check and
// commits nothing (see Runner.Build).
package floe

import (
	"github.com/floedata/floe/internal/transform"
)

// Transform is a named computation from input tables to output tables,
// declared with NewTransform. Its fields may be set directly; Validate
// checks them.
type Transform = transform.Transform

// ComputeFunc computes a transform's outputs from its inputs. It must write
// each output at most once per build (Write, Replace, ApplyChangelog,
// Merge, Commit or Transaction); an output it does not write keeps its rows
// and gets its watermarks advanced. An error fails the build and commits
// nothing further.
type ComputeFunc = transform.ComputeFunc

// Context is what a compute function receives: the build's inputs and
// outputs, whether the build is incremental, a logger. It is a
// context.Context, cancelled when the build is stopped.
type Context = transform.Context

// Input is an input table as one build sees it: its state at the head the
// build pinned, and the range since the last build.
type Input = transform.Input

// Output is an output table as one build writes it, once.
type Output = transform.Output

// Rows is a stream of record batches, readable once as an
// array.RecordReader or with All.
type Rows = transform.Rows

// ReadMode says how inputs are read incrementally.
type ReadMode = transform.ReadMode

// Runner builds transforms against a catalog. Its methods may be called
// from several goroutines at once.
type Runner = transform.Runner

// Result describes one build: incremental or not and why, the input ranges
// read and what was committed to each output.
type Result = transform.Result

// InputRange is the range of one input a build processed.
type InputRange = transform.InputRange

// Push is what a remote engine (Spark, package pushdown) needs to run a
// transform's builds (Transform.Push): the pipeline types set it.
type Push = transform.Push

// OutputResult says what a build committed to one output.
type OutputResult = transform.OutputResult

// InputSpec declares an input (WithInput, WithInputOnBranch).
type InputSpec = transform.InputSpec

// OutputSpec declares an output (WithOutput and its OutputOptions).
type OutputSpec = transform.OutputSpec

// CommitFunc commits one output's change for a build, for writers outside
// floe's engine (see Output.Commit).
type CommitFunc = transform.CommitFunc

// CommitRequest is what a CommitFunc receives: where to commit and the
// properties its single Iceberg commit must carry and check.
type CommitRequest = transform.CommitRequest

// CommitResult is what a CommitFunc reports about its commit.
type CommitResult = transform.CommitResult

// Option configures NewTransform.
type Option = transform.Option

// OutputOption configures an output declared with WithOutput.
type OutputOption = transform.OutputOption

// Read modes.
const (
	// AppendOnly (the default) processes the rows appended since the last
	// build; any overwrite or delete in range forces a full rebuild.
	AppendOnly = transform.AppendOnly
	// Changelog processes inserts, updates and deletes incrementally.
	Changelog = transform.Changelog
)

// NewTransform declares a transform. It does not check the declaration:
// Runner.Build does (Transform.Validate), before reading anything.
func NewTransform(name string, compute ComputeFunc, opts ...Option) *Transform {
	return transform.New(name, compute, opts...)
}

// WithInput declares the input name reading table ("ns.table") on its main
// branch.
func WithInput(name, table string) Option { return transform.WithInput(name, table) }

// WithInputOnBranch declares the input name reading table on branch.
func WithInputOnBranch(name, table, branch string) Option {
	return transform.WithInputOnBranch(name, table, branch)
}

// WithOutput declares the output name writing table ("ns.table"); opts say
// how floe creates it on its first build and which branch it writes.
func WithOutput(name, table string, opts ...OutputOption) Option {
	return transform.WithOutput(name, table, opts...)
}

// WithReadMode sets the read mode (AppendOnly by default).
func WithReadMode(m ReadMode) Option { return transform.WithReadMode(m) }

// WithSemanticVersion sets the semantic version; bumping it forces a full
// rebuild, for when the logic changed and existing outputs are invalid.
func WithSemanticVersion(v int) Option { return transform.WithSemanticVersion(v) }

// PartitionBy sets the partition spec floe creates the output with, in
// Iceberg's transform syntax ("day(ts), bucket(16, id)").
func PartitionBy(spec string) OutputOption { return transform.PartitionBy(spec) }

// Identifier sets the identifier fields floe creates the output with (they
// must be non-null columns).
func Identifier(cols ...string) OutputOption { return transform.Identifier(cols...) }

// TableProperties sets the table properties floe creates the output with.
func TableProperties(p map[string]string) OutputOption { return transform.TableProperties(p) }

// OnBranch writes the output to branch b instead of main.
func OnBranch(b string) OutputOption { return transform.OnBranch(b) }
