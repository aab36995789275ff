// Command floe is the command line of floe: change data capture on Iceberg
// and Delta Lake tables. All behaviour lives in the cli package.
package main

import (
	"os"

	"github.com/floedata/floe/cli"
	// The SQL engine (DuckDB, cgo): only the binary links it.
	_ "github.com/floedata/floe/sqltx/duckdb"
)

func main() {
	os.Exit(cli.Main())
}
