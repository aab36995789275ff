package deltasync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// Table properties holding the sync state in the Iceberg table. They are
// committed in the same Iceberg commit as the rows they describe.
const (
	// PropSourceVersion is the last Delta version whose changes the
	// Iceberg table holds (the watermark).
	PropSourceVersion = "floe.delta.source-version"
	// PropSourceLocation is the location of the Delta table synced.
	PropSourceLocation = "floe.delta.source-location"
	// PropSourceTableID is the Delta table's metaData.id, which changes
	// when a table is deleted and recreated at the same location.
	PropSourceTableID = "floe.delta.source-table-id"
)

// Options configure Sync. The zero value is valid for a table that was
// synced before (its identifier fields are the equality columns); creating
// a table needs EqualityColumns.
type Options struct {
	// EqualityColumns are the key columns rows are matched by. Default: the
	// Iceberg table's identifier fields. When Sync creates the table they
	// become its identifier fields (required columns), and a table cannot
	// be created without them. Their values must be non-NULL and unique
	// among the live rows of the Delta table.
	EqualityColumns []string

	// Start is where the first run starts: the Delta snapshot at this
	// version (or at the first commit at or after this timestamp) is
	// migrated, and later runs read the changes after it. Unset: the end
	// bound when set, else the latest version. Once the table holds a
	// watermark, Start is ignored: the watermark decides, so that no
	// commit is skipped or repeated.
	Start delta.Bound
	// End is the last version (or the last commit at or before this
	// timestamp) to apply. Unset: the latest version when the run starts.
	// An end version after the latest is clamped to it.
	End delta.Bound

	// Mode is the write mode of a table Sync creates: tableops.CopyOnWrite
	// (the default) or tableops.MergeOnRead, stored as write.delete.mode,
	// write.update.mode and write.merge.mode. An existing table keeps its
	// own properties.
	Mode tableops.Mode
	// DeleteMode overrides how rows are removed at every run (see
	// merge.DeleteMode): merge.DeleteEquality writes equality deletes
	// without reading the table, as Beam's and Flink's writers do.
	DeleteMode merge.DeleteMode
	// PartitionBy is the partition spec of a table Sync creates, in `floe
	// table create --partition-by` syntax ("day(ts), bucket(16, id)", or
	// bare column names for identity partitions). Empty: unpartitioned.
	PartitionBy string
	// FormatVersion is the Iceberg format version of a table Sync creates:
	// 0 (means 2), 2 or 3.
	FormatVersion int
	// Properties are extra table properties of a table Sync creates.
	Properties map[string]string

	// EvolveSchema adds the new nullable top-level columns of the Delta
	// schema to the Iceberg table (in a commit of its own, before the rows
	// that use them). Any other schema difference fails with
	// ErrSchemaMismatch whatever this says.
	EvolveSchema bool

	// MaxVersions bounds the Delta versions applied per Iceberg commit; each
	// commit carries its own watermark, so a long backlog is applied in
	// resumable steps. 0 means all versions in one commit.
	MaxVersions int64

	// Logger receives one record per step (migration, batch, schema
	// change). Nil discards them.
	Logger *slog.Logger

	// hook, in tests, is called at each step boundary; an error it returns
	// stops the run there, as a crash would.
	hook func(step string) error
}

// Steps at which the test hook is called.
const (
	stepCreated       = "created"        // the Iceberg table exists (with the migrated snapshot where one commit creates and migrates)
	stepMigrateCommit = "migrate-commit" // migration files written, not committed
	stepMigrated      = "migrated"       // migration committed
	stepEvolved       = "evolved"        // schema change committed, rows of the batch not
	stepBatchRead     = "batch-read"     // the changes of a batch are read, nothing committed
	stepBatchDone     = "batch-done"     // a batch committed
)

func (o *Options) step(s string) error {
	if o.hook == nil {
		return nil
	}
	return o.hook(s)
}

// Result says what one Sync run did.
type Result struct {
	// Source is the Delta table's location; Table the Iceberg table's name.
	Source, Table string
	// LatestVersion is the Delta table's latest version when the run
	// started.
	LatestVersion int64
	// Created reports that the run created the Iceberg table.
	Created bool
	// Migrated reports that the run copied the Delta snapshot at
	// MigratedVersion (MigratedRows rows) into the table.
	Migrated        bool
	MigratedVersion int64
	MigratedRows    int64
	// StartWatermark and Watermark are the table's watermark (the last Delta
	// version applied) before and after the run; -1 when there was none.
	StartWatermark, Watermark int64
	// Batches lists the committed batches of changes, in order.
	Batches []Batch
	// AddedColumns are the columns EvolveSchema added.
	AddedColumns []string
	// Committed reports that the run committed anything at all.
	Committed bool
	// AnswerLost reports that the catalog's answer to one of the run's
	// commits was lost and floe found the commit on the table by its id.
	AnswerLost bool
}

// Batch is one Iceberg commit of Delta changes.
type Batch struct {
	// FromVersion and ToVersion are the Delta versions applied, inclusive.
	FromVersion, ToVersion int64
	// ChangeRows is the number of change rows read from the Change Data
	// Feed; Upserts and Deletes the per-key actions they collapsed to.
	ChangeRows, Upserts, Deletes int64
	// RowsAdded and RowsRemoved count Iceberg rows written and removed.
	RowsAdded, RowsRemoved int64
	// SnapshotID is the new Iceberg snapshot; 0 when the batch only moved
	// the watermark (commits without row changes).
	SnapshotID int64
	// Mode is how rows were removed ("copy-on-write", "merge-on-read", ...).
	Mode string
}

// Sync runs one synchronization of the Delta table src into the Iceberg
// table ident of cat and returns what it did.
//
// First run (the table is missing, or holds no watermark): the namespace and
// the table are created when missing (schema mapped by IcebergSchema, the
// equality columns as identifier fields, Options.PartitionBy and
// Options.Mode), then the Delta snapshot at the start version is copied into
// it in one commit that also sets the watermark to that version. On the
// embedded and SQL catalogs the table is created by that same commit
// (commit.Create), so no reader ever sees it empty; on other catalogs it is
// created first, with PropSourceLocation, and a run stopped before the
// migration leaves it empty without a watermark, which the next run fills.
// An existing table that holds rows but no watermark is refused
// (ErrTargetNotEmpty).
//
// Every run then applies the Change Data Feed after the watermark up to the
// end bound (the latest version by default): insert → INSERT,
// update_preimage → UPDATE_BEFORE, update_postimage → UPDATE_AFTER, delete →
// DELETE, collapsed per key in _commit_version order (ties: before-images
// and deletes first) and applied by merge.Apply. Each commit also sets the
// watermark to its last version and only succeeds when the table still
// holds the watermark the batch started from, so a repeated or concurrent
// run fails with commit.ErrWatermarkMoved instead of applying changes
// twice. A range of commits without row changes (OPTIMIZE, metadata
// changes) commits only the new watermark; no new commit means no Iceberg
// commit at all.
//
// Before each commit the Delta schema at its last version is compared with
// the table (CompareSchemas): any difference fails with ErrSchemaMismatch
// listing the columns, with nothing committed, except new nullable columns
// when Options.EvolveSchema is set, which are added first in a commit of
// their own (the rows written next need the columns' field IDs, and a table
// with an extra nullable column still reads correctly if the run stops
// there).
//
// A run stopped at any point (error, cancelled context, crash) leaves the
// table at the last committed batch, and the next run continues from its
// watermark: no Delta commit is skipped or applied twice. Source errors
// (change data not recorded over the range, history cleaned up, missing or
// corrupt files, unsupported features) are returned with nothing committed
// for the failing batch.
//
// Sync is safe to call concurrently for different tables; concurrent runs on
// one table are safe too (one wins, the others fail with
// commit.ErrWatermarkMoved).
func Sync(ctx context.Context, cat *catalog.Catalog, src *delta.Table, ident table.Identifier, opts Options) (*Result, error) {
	if opts.MaxVersions < 0 {
		return nil, fmt.Errorf("%w: MaxVersions %d is negative", ErrInvalidOptions, opts.MaxVersions)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &syncer{cat: cat, src: src, ident: ident, name: catalog.FormatName(ident), opts: &opts}
	s.res = &Result{Source: src.Location(), Table: s.name, StartWatermark: -1, Watermark: -1}
	if err := s.run(ctx); err != nil {
		return s.res, err
	}
	return s.res, nil
}

type syncer struct {
	cat   *catalog.Catalog
	src   *delta.Table
	ident table.Identifier
	name  string
	opts  *Options
	res   *Result
	keys  []string
	// tableID is the Delta table's metaData.id.
	tableID string
}

func (s *syncer) log() *slog.Logger { return s.opts.Logger }

func (s *syncer) run(ctx context.Context) error {
	latest, err := s.src.LatestVersion(ctx)
	if err != nil {
		return err
	}
	s.res.LatestVersion = latest
	tbl, err := s.cat.Load(ctx, s.ident)
	switch {
	case err == nil:
	case errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace):
		tbl = nil
	default:
		return err
	}
	watermark := int64(-1)
	if tbl != nil {
		if watermark, err = s.readState(ctx, tbl, latest); err != nil {
			return err
		}
		s.res.StartWatermark = watermark
		s.res.Watermark = watermark
	}
	if watermark < 0 {
		if watermark, err = s.firstRun(ctx, tbl, latest); err != nil {
			return err
		}
		s.res.Watermark = watermark
	} else {
		if err := s.resolveKeys(tbl); err != nil {
			return err
		}
		if s.opts.Start.IsSet() {
			s.log().Info("delta sync: start bound ignored, the table's watermark decides", "table", s.name, "start", s.opts.Start.String(), "watermark", watermark)
		}
	}
	end, err := s.resolveEnd(ctx, latest)
	if err != nil {
		return err
	}
	if end <= watermark {
		s.log().Debug("delta sync: up to date", "table", s.name, "source", s.src.Location(), "watermark", watermark, "end", end)
		return nil
	}
	for from := watermark + 1; from <= end; {
		to := end
		if s.opts.MaxVersions > 0 && from+s.opts.MaxVersions-1 < end {
			to = from + s.opts.MaxVersions - 1
		}
		if err := s.applyBatch(ctx, from, to); err != nil {
			return err
		}
		from = to + 1
	}
	return nil
}

// readState checks that an existing table is synced from this Delta table
// and returns its watermark (-1 when it has none).
func (s *syncer) readState(ctx context.Context, tbl *table.Table, latest int64) (int64, error) {
	props := tbl.Properties()
	v, ok := props[PropSourceVersion]
	if !ok {
		if loc, ok := props[PropSourceLocation]; ok && loc != s.src.Location() {
			return 0, fmt.Errorf("%w: Iceberg table %s was set up for Delta table %s, not %s", ErrSourceMismatch, s.name, loc, s.src.Location())
		}
		return -1, nil
	}
	w, err := strconv.ParseInt(v, 10, 64)
	if err != nil || w < 0 {
		return 0, fmt.Errorf("%w: Iceberg table %s: property %s is %q, not a Delta version", ErrSourceMismatch, s.name, PropSourceVersion, v)
	}
	if loc := props[PropSourceLocation]; loc != s.src.Location() {
		return 0, fmt.Errorf("%w: Iceberg table %s is synced from Delta table %s (up to version %d), not from %s", ErrSourceMismatch, s.name, loc, w, s.src.Location())
	}
	if w > latest {
		return 0, fmt.Errorf("%w: Iceberg table %s holds Delta version %d of %s, but its latest version is %d: was the Delta table deleted and recreated?",
			ErrSourceMismatch, s.name, w, s.src.Location(), latest)
	}
	meta, _, err := s.src.Metadata(ctx, latest)
	if err != nil {
		return 0, err
	}
	s.tableID = meta.ID
	if id, ok := props[PropSourceTableID]; ok && id != meta.ID {
		return 0, fmt.Errorf("%w: Iceberg table %s is synced from Delta table id %s, but %s now has id %s: it was deleted and recreated; sync it into a new table",
			ErrSourceMismatch, s.name, id, s.src.Location(), meta.ID)
	}
	return w, nil
}

// resolveKeys sets the equality columns: the options', else the table's
// identifier fields.
func (s *syncer) resolveKeys(tbl *table.Table) error {
	if len(s.opts.EqualityColumns) > 0 {
		s.keys = s.opts.EqualityColumns
		return nil
	}
	if tbl != nil {
		for _, id := range tbl.Schema().IdentifierFieldIDs {
			if n, ok := tbl.Schema().FindColumnName(id); ok {
				s.keys = append(s.keys, n)
			}
		}
	}
	if len(s.keys) == 0 {
		if tbl == nil {
			return fmt.Errorf("%w: creating Iceberg table %s needs equality columns (its identifier fields)", ErrNoEqualityColumns, s.name)
		}
		return fmt.Errorf("%w: Iceberg table %s has no identifier fields; name the equality columns", ErrNoEqualityColumns, s.name)
	}
	return nil
}

// resolveStart returns the version whose snapshot the first run migrates.
func (s *syncer) resolveStart(ctx context.Context, latest int64) (int64, error) {
	b := s.opts.Start
	if v, ok := b.Version(); ok {
		if v < 0 {
			return 0, fmt.Errorf("%w: start version %d is negative", delta.ErrInvalidRange, v)
		}
		if v > latest {
			return 0, fmt.Errorf("%w: Delta table %s: start version %d is after the latest version %d", delta.ErrVersionNotFound, s.src.Location(), v, latest)
		}
		return v, nil
	}
	if ts, ok := b.Timestamp(); ok {
		return s.src.VersionAtOrAfter(ctx, ts)
	}
	return s.resolveEnd(ctx, latest)
}

// resolveEnd returns the last version to apply.
func (s *syncer) resolveEnd(ctx context.Context, latest int64) (int64, error) {
	b := s.opts.End
	if v, ok := b.Version(); ok {
		if v < 0 {
			return 0, fmt.Errorf("%w: end version %d is negative", delta.ErrInvalidRange, v)
		}
		return min(v, latest), nil
	}
	if ts, ok := b.Timestamp(); ok {
		return s.src.VersionAtOrBefore(ctx, ts)
	}
	return latest, nil
}

// firstRun creates the table when needed and migrates the snapshot at the
// start version; it returns the new watermark.
func (s *syncer) firstRun(ctx context.Context, tbl *table.Table, latest int64) (int64, error) {
	start, err := s.resolveStart(ctx, latest)
	if err != nil {
		return 0, err
	}
	if end, err := s.resolveEnd(ctx, latest); err != nil {
		return 0, err
	} else if end < start {
		return 0, fmt.Errorf("%w: Delta table %s: end version %d is before start version %d", delta.ErrInvalidRange, s.src.Location(), end, start)
	}
	snap, err := s.src.Snapshot(ctx, start)
	if err != nil {
		return 0, err
	}
	s.tableID = snap.Metadata().ID
	if err := s.resolveKeys(tbl); err != nil {
		return 0, err
	}
	if tbl == nil {
		if done, err := s.createMigrated(ctx, snap); err != nil || done {
			return start, err
		}
		if err := s.create(ctx, snap); err != nil {
			return 0, err
		}
		if err := s.opts.step(stepCreated); err != nil {
			return 0, err
		}
	}
	if err := s.migrate(ctx, snap); err != nil {
		return 0, err
	}
	return start, nil
}

// createMigrated creates the table with the snapshot's rows and the
// watermark in one catalog commit, so that no reader ever sees the table
// empty and without a watermark. It reports false, with nothing done, when
// the catalog cannot create a table in a commit (then the table is
// created first and migrated in a second commit: a run stopped in between
// leaves an empty table, created with PropSourceLocation, that the next
// run fills) or when another run created the table first.
func (s *syncer) createMigrated(ctx context.Context, snap *delta.Snapshot) (bool, error) {
	sc, spec, props, err := s.tableSpec(snap)
	if err != nil {
		return false, err
	}
	if err := s.cat.EnsureNamespace(ctx, s.ident[:len(s.ident)-1]); err != nil {
		return false, err
	}
	m := s.migration(snap)
	out, err := commit.Create(ctx, s.cat, s.ident, sc, spec, props, m.opts, m.prepare)
	switch {
	case errors.Is(err, commit.ErrCreateUnsupported), errors.Is(err, commit.ErrTableExists):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("migrate %s into %s: %w", m.where, s.name, err)
	}
	s.res.Created = true
	s.log().Info("delta sync: created table with the migrated snapshot", "table", s.name, "source", s.src.Location(),
		"columns", len(sc.Fields()), "partition_by", s.opts.PartitionBy, "mode", s.opts.Mode.String())
	s.migrated(out, m)
	if err := s.opts.step(stepCreated); err != nil {
		return true, err
	}
	return true, s.opts.step(stepMigrated)
}

// create creates the namespace and the table for the snapshot's schema.
func (s *syncer) create(ctx context.Context, snap *delta.Snapshot) error {
	sc, spec, props, err := s.tableSpec(snap)
	if err != nil {
		return err
	}
	if err := s.cat.EnsureNamespace(ctx, s.ident[:len(s.ident)-1]); err != nil {
		return err
	}
	_, err = tableops.Create(ctx, s.cat, s.ident, sc, spec, props)
	if errors.Is(err, tableops.ErrTableExists) {
		// Another run created it first; its state is checked at the
		// migration commit.
		return nil
	}
	if err != nil {
		return err
	}
	s.res.Created = true
	s.log().Info("delta sync: created table", "table", s.name, "source", s.src.Location(), "columns", len(sc.Fields()), "partition_by", s.opts.PartitionBy, "mode", s.opts.Mode.String())
	return nil
}

// tableSpec is the schema, partition spec and properties of the table
// for the snapshot.
func (s *syncer) tableSpec(snap *delta.Snapshot) (*iceberg.Schema, iceberg.PartitionSpec, iceberg.Properties, error) {
	sc, err := IcebergSchema(snap.Schema(), s.keys)
	if err != nil {
		return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("create Iceberg table %s for Delta table %s version %d: %w", s.name, s.src.Location(), snap.Version(), err)
	}
	spec, err := ddl.ParsePartitionSpec(s.opts.PartitionBy, sc)
	if err != nil {
		return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("%w: partition spec of %s: %w", ErrInvalidOptions, s.name, err)
	}
	props := iceberg.Properties{}
	for k, v := range s.opts.Properties {
		props[k] = v
	}
	mode := s.opts.Mode.String()
	props[write.PropDeleteMode], props[write.PropUpdateMode], props[write.PropMergeMode] = mode, mode, mode
	switch s.opts.FormatVersion {
	case 0:
	case 2, 3:
		props["format-version"] = strconv.Itoa(s.opts.FormatVersion)
	default:
		return nil, iceberg.PartitionSpec{}, nil, fmt.Errorf("%w: format version %d: want 2 or 3", ErrInvalidOptions, s.opts.FormatVersion)
	}
	// NB: the source location is set at creation so that a table created
	// for one Delta table and left empty by a crash is not later filled
	// from another.
	props[PropSourceLocation] = s.src.Location()
	return sc, spec, props, nil
}

// stateProps are the properties committed with version v applied.
func (s *syncer) stateProps(v int64) map[string]string {
	return map[string]string{
		PropSourceVersion:  strconv.FormatInt(v, 10),
		PropSourceLocation: s.src.Location(),
		PropSourceTableID:  s.tableID,
	}
}
