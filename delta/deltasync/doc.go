// Package deltasync keeps an Iceberg table in sync with a Delta Lake table
// through the Delta Change Data Feed, without Spark: Sync migrates the Delta
// snapshot at a start version into the Iceberg table (created when missing,
// with the equality columns as identifier fields), then applies each later
// range of commits by key with merge.Apply, committing the last applied Delta
// version as a watermark in the same Iceberg commit as the rows. A rerun
// after a crash neither skips nor repeats a Delta commit, and a run with
// nothing new commits nothing.
//
// The package sits above package delta (the reader) and package merge (the
// apply engine); nothing below imports it. The CLI (`floe delta sync`) and
// pipelines call Sync.
//
// # Semantics
//
//   - Types: IcebergType maps every Delta type (byte and short widen to
//     int, timestamp to timestamptz, timestamp_ntz to timestamp, decimals,
//     binary, dates, nested struct, array and map).
//   - Change types: insert → INSERT, update_preimage → UPDATE_BEFORE,
//     update_postimage → UPDATE_AFTER, delete → DELETE, collapsed per key by
//     _commit_version and kind (UPDATE_BEFORE < DELETE < UPDATE_AFTER <
//     INSERT at equal versions), so an update that changes the key deletes
//     the old key and writes the new one, and one that moves the row to
//     another partition removes it from the old one. Other change types fail
//     with ErrUnknownChangeType.
//   - Keys: the equality columns must be non-NULL (ErrNullKey) and unique
//     among the live Delta rows. Uniqueness is checked in the migrated
//     snapshot, within each Delta commit, and across commits
//     (ErrDuplicateKey, with merge.ErrCardinality for the latter): an insert
//     (or an update that changes a key) of a key that an earlier commit left
//     in the table, synced before or in the same batch, fails with nothing
//     committed, since Delta then holds two rows with it (merge's
//     WithInsertsMustBeNew). Beam's CDC writer upserts such an insert and
//     keeps one of the two rows.
//   - Schema: the Delta schema at the end of each batch must match the
//     Iceberg table (CompareSchemas); Options.EvolveSchema adds new nullable
//     top-level columns, anything else fails with ErrSchemaMismatch listing
//     the columns, with nothing committed.
//   - State: the table properties floe.delta.source-version (watermark),
//     floe.delta.source-location and floe.delta.source-table-id, all
//     committed with the rows. A table synced from another Delta table, or
//     from a Delta table recreated at the same place, fails with
//     ErrSourceMismatch.
//
// # Concurrency
//
// Sync may run concurrently on different tables. Concurrent runs on one
// table are safe: every commit is conditional on the watermark it started
// from, so all but one fail with commit.ErrWatermarkMoved.
package deltasync
