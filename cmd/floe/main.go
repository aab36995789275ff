// Command floe is the command line of floe: change data capture on Iceberg
// and Delta Lake tables. All behaviour lives in the cli package.
package main

import (
	"os"

	"github.com/floedata/floe/cli"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/sparkpush"
)

func main() {
	// The command line pushes builds down to Spark (--engine spark|auto);
	// programs built on floe's Go API opt in the same way.
	pushdown.Open = sparkpush.Open
	os.Exit(cli.Main())
}
