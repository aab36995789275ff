//go:build !floe_no_s3

package main

// floe's S3 file IO for s3://, s3a://, s3n:// and oss:// (timeouts, retries, path style, checksums).
import _ "github.com/floedata/floe/s3io"
