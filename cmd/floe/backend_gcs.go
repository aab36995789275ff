//go:build !floe_no_gcs

package main

// Google Cloud Storage (gs://): floe's GCS IO (package gcsio: iceberg-go's
// settings, with a request timeout and bounded retries).
import _ "github.com/floedata/floe/gcsio"
