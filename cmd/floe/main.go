// Command floe is the command line of floe: change data capture on Iceberg
// and Delta Lake tables. All behaviour lives in the cli package; this
// package assembles the binary: main, and the catalogs and object stores
// compiled in, one file per backend (backend_*.go), each left out by its
// build tag:
//
//	floe_no_glue   AWS Glue catalogs (type: glue)
//	floe_no_hive   Hive Metastore catalogs (type: hive)
//	floe_no_s3     s3://, s3a://, s3n://, oss:// (floe's S3 IO, package s3io)
//	floe_no_gcs    gs:// (floe's GCS IO, package gcsio)
//	floe_no_azure  abfs://, abfss://, wasb://, wasbs:// (floe's Azure IO, package azio)
//
// The embedded catalog (SQLite), sql, hadoop and rest catalogs and local files
// are always there. floe version lists what a binary has. The smallest
// build:
//
//	go build -tags floe_no_glue,floe_no_hive,floe_no_s3,floe_no_gcs,floe_no_azure ./cmd/floe
package main

import (
	"os"

	"github.com/floedata/floe/internal/cli"
	// Substrait's default extension collection is never loaded: iceberg-go
	// uses it only to evaluate a row filter that it is given, and floe
	// gives it none (see package lazysubstrait).
	_ "github.com/floedata/floe/internal/lazysubstrait"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/sparkpush"
	// The SQL engine (DuckDB, cgo): only the binary links it.
	_ "github.com/floedata/floe/sqltx/duckdb"
)

func main() {
	// The command line pushes builds down to Spark (--engine spark|auto);
	// programs built on floe's Go API opt in the same way.
	pushdown.Open = sparkpush.Open
	os.Exit(cli.Main())
}
