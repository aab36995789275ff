// Package changelog computes the row-level changes of an Iceberg table
// between two snapshots, with the semantics of Iceberg's Spark procedure
// create_changelog_view (start exclusive, end inclusive, carry-over
// removal, update images from identifier columns, net changes, ordinals)
// and beyond it: tables with position deletes, equality deletes and
// deletion vectors, any branch, and per-key changes (the latest action per
// identifier, or the net change per identifier). Results stream as Arrow
// batches; grouping spills to disk past a memory budget.
//
// Errors wrap the sentinels of errors.go (test with errors.Is) and name the
// table and snapshot. A Changelog holds only its resolved range and
// options: each range over Rows computes the changes anew with its own
// memory budget and spill folder, so one Changelog may be read several
// times, also from several goroutines at once. Reading commits nothing.
package changelog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// Change types, as Iceberg names them.
const (
	Insert       = "INSERT"
	Delete       = "DELETE"
	UpdateBefore = "UPDATE_BEFORE"
	UpdateAfter  = "UPDATE_AFTER"
)

// Metadata column names appended to the table's columns.
const (
	ChangeTypeColumn     = "_change_type"
	ChangeOrdinalColumn  = "_change_ordinal"
	CommitSnapshotColumn = "_commit_snapshot_id"
)

// PerKey selects a per-identifier view of the changes.
type PerKey int

const (
	// PerKeyNone reports every change, as create_changelog_view does.
	PerKeyNone PerKey = iota
	// PerKeyLatest reports the latest action per identifier over the
	// range, UPDATE_BEFORE rows dropped (Foundry's changelog(keys)).
	PerKeyLatest
	// PerKeyNet reports, per identifier, the net change from the start
	// state to the end state: INSERT, DELETE, an UPDATE_BEFORE and
	// UPDATE_AFTER pair, or nothing when the row ended as it began.
	PerKeyNet
)

// ParsePerKey parses "latest", "net" or "" (none).
func ParsePerKey(s string) (PerKey, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return PerKeyNone, nil
	case "latest":
		return PerKeyLatest, nil
	case "net":
		return PerKeyNet, nil
	}
	return 0, fmt.Errorf("%w: --per-key %q: want latest or net", ErrInvalidOptions, s)
}

// Options select the range and shape of a changelog. The zero value reads
// every change of the main branch's history.
type Options struct {
	StartSnapshotID  *int64 // exclusive
	EndSnapshotID    *int64 // inclusive
	StartTimestampMs *int64
	EndTimestampMs   *int64
	Ref              string // branch or tag whose history is read; "" = main

	// IdentifierColumns override the schema's identifier fields. Giving
	// them turns ComputeUpdates on unless it is set, as in Iceberg.
	IdentifierColumns []string
	ComputeUpdates    *bool
	NetChanges        bool
	PerKey            PerKey

	// Columns projects the output's data columns (nil = all). Changes are
	// computed on every column first, as the reference view is.
	Columns []string
	// RowFilter keeps the output rows that match (applied last, on the
	// full rows with metadata columns).
	RowFilter func(context.Context, arrow.RecordBatch) (arrow.RecordBatch, error)

	// MemoryBudget bounds the rows held while grouping (0 = 256 MiB); the
	// rest spills to TempDir ("" = the system's). A snapshot that rewrites
	// files also holds up to a quarter of it in recent rows of the old and
	// new files while it pairs their identical rows, so the rows held stay
	// under 1.25 times the budget (plus the batches being read). The
	// grouped rows are processed up to GOMAXPROCS partitions at once; when
	// they spilled, the partitions in flight stay within the budget, but
	// for one partition larger than every one before it.
	MemoryBudget int64
	TempDir      string
}

// Changelog is a prepared changelog read.
type Changelog struct {
	tbl      *table.Table
	opts     Options
	rng      *Range
	reader   *scan.Reader
	dataSch  *arrow.Schema // all table columns
	full     *arrow.Schema // data + metadata columns
	meta     *metaColumns  // builds the metadata columns of full
	out      *arrow.Schema // projected data + metadata columns
	outCols  []int
	idCols   []int // identifier column indexes in data
	idNames  []string
	updates  bool
	dataCols []int
}

// Open validates the options against the table and resolves the range.
// Errors for invalid options come back here, before any data is read.
func Open(ctx context.Context, tbl *table.Table, o Options) (*Changelog, error) {
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return nil, err
	}
	dataSch, ice, err := reader.ArrowSchema(nil)
	if err != nil {
		return nil, err
	}
	c := &Changelog{tbl: tbl, opts: o, reader: reader, dataSch: dataSch}
	for i := range dataSch.Fields() {
		c.dataCols = append(c.dataCols, i)
	}
	// Identifier columns: the option, else the schema's identifier fields.
	idNames := o.IdentifierColumns
	explicit := len(idNames) > 0
	if !explicit {
		for _, id := range ice.IdentifierFieldIDs {
			if n, ok := ice.FindColumnName(id); ok {
				idNames = append(idNames, n)
			}
		}
	}
	for _, n := range idNames {
		idx := -1
		for i, f := range dataSch.Fields() {
			if f.Name == n {
				idx = i
			}
		}
		if idx < 0 {
			for i, f := range dataSch.Fields() {
				if strings.EqualFold(f.Name, n) {
					idx = i
				}
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("%w: identifier column %q is not a column of %s (columns: %s)", ErrInvalidOptions, n, scan.FormatIdent(tbl.Identifier()), fieldNames(dataSch))
		}
		c.idCols = append(c.idCols, idx)
		c.idNames = append(c.idNames, dataSch.Field(idx).Name)
	}
	if len(c.idCols) == 0 {
		var unorderable []string
		for _, f := range dataSch.Fields() {
			if !orderable(f.Type) {
				unorderable = append(unorderable, f.Name)
			}
		}
		if len(unorderable) > 0 {
			return nil, fmt.Errorf("%w: Identifier field is required as table contains unorderable columns: [%s]", ErrInvalidOptions, strings.Join(unorderable, ", "))
		}
	}
	c.updates = explicit
	if o.ComputeUpdates != nil {
		c.updates = *o.ComputeUpdates
	}
	if c.updates {
		if o.NetChanges {
			return nil, fmt.Errorf("%w: Not support net changes with update images", ErrInvalidOptions)
		}
		if len(c.idCols) == 0 {
			return nil, fmt.Errorf("%w: Cannot compute the update images because identifier columns are not set", ErrInvalidOptions)
		}
	}
	if o.PerKey != PerKeyNone {
		if o.NetChanges {
			return nil, fmt.Errorf("%w: --per-key and --net-changes are different views; choose one", ErrInvalidOptions)
		}
		if len(c.idCols) == 0 {
			return nil, fmt.Errorf("%w: --per-key needs identifier columns: give --key or set the table's identifier fields", ErrInvalidOptions)
		}
		// Per-key views are built from update images.
		c.updates = true
	}
	// The range is resolved after the options are validated: the reference
	// checks the options when the view is created and the range only when
	// it is read, so an invalid combination is reported first.
	if c.rng, err = resolveRange(tbl, &c.opts); err != nil {
		return nil, err
	}
	meta := []arrow.Field{
		{Name: ChangeTypeColumn, Type: arrow.BinaryTypes.String},
		{Name: ChangeOrdinalColumn, Type: arrow.PrimitiveTypes.Int32},
		{Name: CommitSnapshotColumn, Type: arrow.PrimitiveTypes.Int64},
	}
	c.full = arrow.NewSchema(append(append([]arrow.Field{}, dataSch.Fields()...), meta...), nil)
	c.meta = newMetaColumns(c.full)
	var outFields []arrow.Field
	if o.Columns == nil {
		c.outCols = append([]int{}, c.dataCols...)
	} else {
		proj, err := scan.SelectColumns(ice, o.Columns)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
		}
		for _, f := range proj.Fields() {
			for i, df := range dataSch.Fields() {
				if df.Name == f.Name {
					c.outCols = append(c.outCols, i)
				}
			}
		}
	}
	n := dataSch.NumFields()
	for _, i := range c.outCols {
		outFields = append(outFields, dataSch.Field(i))
	}
	c.outCols = append(c.outCols, n, n+1, n+2)
	c.out = arrow.NewSchema(append(outFields, meta...), nil)
	return c, nil
}

// Schema is the Arrow schema of the rows Rows yields.
func (c *Changelog) Schema() *arrow.Schema { return c.out }

// FullSchema is the schema RowFilter sees: every table column, then the
// metadata columns.
func (c *Changelog) FullSchema() *arrow.Schema { return c.full }

// Range is the resolved snapshot range.
func (c *Changelog) Range() *Range { return c.rng }

// IdentifierColumns are the identifier columns in use (possibly none).
func (c *Changelog) IdentifierColumns() []string { return c.idNames }

func fieldNames(s *arrow.Schema) string {
	names := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// orderable mirrors Spark's OrderUtils.isOrderable: maps (anywhere) are not.
func orderable(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.MapType:
		return false
	case *arrow.ListType:
		return orderable(t.Elem())
	case *arrow.LargeListType:
		return orderable(t.Elem())
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if !orderable(f.Type) {
				return false
			}
		}
	}
	return true
}

// Scan is Open followed by Rows.
func Scan(ctx context.Context, tbl *table.Table, o Options) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	c, err := Open(ctx, tbl, o)
	if err != nil {
		return nil, nil, err
	}
	return c.Schema(), c.Rows(ctx), nil
}

// Rows streams the changes. The caller releases each batch.
func (c *Changelog) Rows(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		emit := func(rec arrow.RecordBatch) bool {
			out, err := c.finish(ctx, rec)
			rec.Release()
			if err != nil {
				return yield(nil, err)
			}
			if out.NumRows() == 0 {
				out.Release()
				return true
			}
			return yield(out, nil)
		}
		if err := c.run(ctx, emit); err != nil && !errors.Is(err, errStopped) {
			yield(nil, err)
		}
	}
}

// finish applies the row filter and the projection.
func (c *Changelog) finish(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if c.opts.RowFilter != nil {
		f, err := c.opts.RowFilter(ctx, rec)
		if err != nil {
			return nil, err
		}
		defer f.Release()
		rec = f
	}
	return rows.Project(rec, c.out, c.outCols), nil
}
