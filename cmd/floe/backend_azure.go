//go:build !floe_no_azure

package main

// Azure storage (abfs://, abfss://, wasb://, wasbs://): floe's Azure IO
// (package azio: iceberg-go's adls.* settings, with a request timeout, a
// connect timeout and bounded retries).
import _ "github.com/floedata/floe/azio"
