// Package s3io registers floe's S3 file IO with iceberg-go's IO registry
// for the s3, s3a, s3n and oss schemes, in place of iceberg-go's own: its
// requests have timeouts, its transient failures are retried with jittered
// exponential backoff within a time budget (reads and writes alike), and it
// honours s3.path-style-access and a checksum setting for strict
// S3-compatible servers. Settings are the Iceberg property names (s3.*,
// client.*; see docs/storage.md).
//
// Import it for its side effect where the program is assembled, as
// iceberg-go's IO packages are imported:
//
//	import _ "github.com/floedata/floe/s3io"
//
// The floe binary does (cmd/floe, unless built with -tags floe_no_s3).
// Registration happens once, at program start; the IO is safe for
// concurrent use, and clients are shared between IOs with the same
// settings.
package s3io

import (
	// The registration lives with the IO, in its init.
	_ "github.com/floedata/floe/internal/objstore"
)
