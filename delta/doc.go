// Package delta reads Delta Lake tables in pure Go (no Spark, no cgo): the
// transaction log, snapshots at any retained version, and the Change Data
// Feed, all as streams of Arrow record batches read through pqarrow.
//
// # Opening a table
//
// Open takes a local path, a file:// URI or, with WithFileSystem, any URI a
// FileSystem understands; FromIcebergIO plugs in iceberg-go's file IO (and
// with it s3://, gs://, abfs://). A Table keeps no snapshot: every call lists
// _delta_log again and so sees new commits. LatestVersion, EarliestVersion,
// CommitInfo, Commits, VersionAtOrAfter and VersionAtOrBefore answer the
// questions a sync asks before reading data.
//
// # Snapshots
//
// Table.Snapshot rebuilds a version from the newest complete checkpoint at
// or before it (classic n.checkpoint.parquet, multi-part
// n.checkpoint.o.p.parquet with an incomplete set ignored, or v2
// n.checkpoint.<uuid>.json|parquet with its _sidecars) and the commits after
// it, which must all be present. _last_checkpoint is not needed since the
// log is listed, and log compaction files (x.y.compacted.json) are ignored.
// Replay follows PROTOCOL.md: the newest protocol and metaData win, and a
// data file is live while an add of its (path, deletion vector) pair has not
// been followed by a remove of the same pair.
//
// Reader versions 1 to 3 are read, with the reader features
// deletionVectors, columnMapping (name and id), timestampNtz, v2Checkpoint
// and vacuumProtocolCheck; writer-only features need nothing from a reader.
// Anything else fails with ErrUnsupportedFeature naming the feature or
// version and the table.
//
// Snapshot.Scan reads the live rows: deletion vectors applied (inline, or
// files beside the table with their size, magic and CRC checked), columns
// under logical names whatever the column mapping mode, partition values
// parsed from the add actions per the schema, and Parquet types that differ
// compatibly from the schema (INT96 or nanosecond timestamps, narrower
// integers, other decimal precisions) converted. Delta types map to Arrow as
// ArrowType describes.
//
// # Change Data Feed
//
// Table.Changes reads the change rows of a version or timestamp range with
// the columns of the end version's schema plus _change_type,
// _commit_version and _commit_timestamp. Its documentation gives the rules;
// ResolveRange gives the versions a range resolves to without reading data.
// Where the reference implementations differ, this package follows Spark,
// except for the commit timestamp:
//
//   - _commit_timestamp is the in-commit timestamp when the commit has one,
//     else commitInfo.timestamp, else the commit file's modification time.
//     Spark and kernel-rs use the file time where this package (like
//     delta-rs) uses commitInfo.timestamp, because file times are lost by
//     copies, git checkouts and object store migrations.
//   - Timestamp bounds resolve to a contiguous version range (Spark). delta-rs
//     instead filters each commit by its own timestamp.
//   - Change data must be enabled over the whole range (Spark, kernel-rs);
//     delta-rs checks only the start commit.
//   - A schema change inside the range that the end schema cannot read fails
//     (Spark's default; kernel-rs requires the start and end schemas to be
//     equal, delta-rs does not check and refuses column-mapped tables).
//   - Change types outside the protocol's four are passed through.
//
// Package deltasync (delta/deltasync) builds the Delta-to-Iceberg sync on
// this reader: Table.Metadata, LatestVersion, VersionAtOrAfter,
// VersionAtOrBefore, Snapshot.Scan and Changes are what it uses.
//
// # Errors and concurrency
//
// Errors wrap the sentinels of errors.go (test with errors.Is) and name the
// table, version, file and line or row concerned. Table and Snapshot are
// safe for concurrent use; each batch sequence is single-use and yields
// batches the caller owns and must Release. Memory stays bounded by one
// batch per open file: files are read one at a time, batch by batch.
package delta
