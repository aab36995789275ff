//go:build !floe_no_gcs

package main

// Google Cloud Storage (gs://), iceberg-go's IO.
import _ "github.com/apache/iceberg-go/io/gocloud/gcs"
