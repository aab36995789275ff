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
//	func main() { os.Exit(floe.Main(t)) }
//
// The types are those of package transform; the engine lives there.
package floe

import (
	"github.com/floedata/floe/cli"
	"github.com/floedata/floe/transform"
)

// Main gives a program built with this API floe's command line for its
// transforms and returns the exit status for os.Exit: 0, 1 when a
// transform failed, 2 for a usage error. The commands are
//
//	build [NAME...] [--full]                 build once, in dependency order
//	run [--once | --every D] [NAME...]       build once, or on a schedule until SIGTERM
//	status [NAME...] [--check | --history]   lag in time, freshness, watermarks, last build and error
//	serve [--http ADDR]                      the status page, without builds
//
// with floe's global flags (--warehouse, --catalog, --config, --format,
// --quiet). A transform whose input is another's output runs after it.
// Runs are recorded in .<program>.floe-history.jsonl in the working
// directory for status. Call it once, from main.
func Main(transforms ...*Transform) int {
	return cli.TransformsMain(transforms)
}

// Transform is a named computation from input tables to output tables.
type Transform = transform.Transform

// Context is what a compute function receives.
type Context = transform.Context

// Input is an input table as a build sees it.
type Input = transform.Input

// Output is an output table as a build writes it.
type Output = transform.Output

// Rows is a stream of record batches (an array.RecordReader).
type Rows = transform.Rows

// ReadMode says how inputs are read incrementally.
type ReadMode = transform.ReadMode

// Runner builds transforms against a catalog.
type Runner = transform.Runner

// Result describes one build.
type Result = transform.Result

// Read modes.
const (
	AppendOnly = transform.AppendOnly
	Changelog  = transform.Changelog
)

// NewTransform declares a transform.
func NewTransform(name string, compute transform.ComputeFunc, opts ...transform.Option) *Transform {
	return transform.New(name, compute, opts...)
}

// Options of NewTransform.
var (
	WithInput           = transform.WithInput
	WithInputOnBranch   = transform.WithInputOnBranch
	WithOutput          = transform.WithOutput
	WithReadMode        = transform.WithReadMode
	WithSemanticVersion = transform.WithSemanticVersion
	PartitionBy         = transform.PartitionBy
	Identifier          = transform.Identifier
	TableProperties     = transform.TableProperties
	OnBranch            = transform.OnBranch
)
