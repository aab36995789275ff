// Package cmdline gives a Go program built with floe's transform API
// floe's command line for its transforms:
//
//	build [NAME...] [--full]                 build once, in dependency order
//	run [--once | --every D] [NAME...]       build once, or on a schedule until SIGTERM
//	status [NAME...] [--check | --history]   lag in time, freshness, watermarks, last build and error
//	serve [--http ADDR]                      the status page, without builds
//	version
//
// with floe's global flags (--warehouse, --catalog, --config, --format,
// --quiet). A transform whose input is another's output runs after it.
// Runs are recorded in .<program>.floe-history.jsonl in the working
// directory for status (--status-file moves it).
//
//	func main() { os.Exit(cmdline.Main(identityCDC(), activeOrders())) }
//
// The program gets the catalogs and object stores it imports (see package
// floe): a configuration file naming a catalog type that is not compiled in
// fails with an error that says which package to import.
package cmdline

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/floedata/floe"
	"github.com/floedata/floe/internal/cli"
)

// Main runs the command line on os.Args, named after the executable, and
// returns the exit status for os.Exit: 0; 1 when a transform failed or
// could not be run; 2 for a usage error; 3 when status --check finds an
// output past its error_after. Errors are printed on stderr, prefixed with
// the program's name; a panic in a transform is reported as an error, not
// a trace. Call it once, from main.
func Main(transforms ...*floe.Transform) int {
	prog := filepath.Base(os.Args[0])
	return Run(context.Background(), prog, transforms, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run is Main with explicit arguments and streams, for tests and for
// programs that embed the command line; prog names the program in usage
// and messages, and ctx stops builds when it is cancelled (SIGTERM and
// SIGINT do too, for run). Each call opens and closes its own catalog.
func Run(ctx context.Context, prog string, transforms []*floe.Transform, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.RunTransforms(ctx, prog, transforms, args, stdin, stdout, stderr)
}
