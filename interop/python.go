//go:build interop

package interop

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/floedata/floe/internal/rowjson"
)

// Py is one long-lived Python process driving PyIceberg and delta-rs (the
// deltalake package). Methods are safe for concurrent use; requests are served
// one at a time. Engine failures are *EngineError values.
type Py struct {
	w *worker
}

// StartPy starts the Python worker in dir (its working directory). The caller
// must Close it.
func StartPy(ctx context.Context, e *Engines, dir string) (*Py, error) {
	w, err := startWorker(ctx, e, "py", dir, nil)
	if err != nil {
		return nil, err
	}
	return &Py{w: w}, nil
}

// Close stops the process. Safe to call more than once.
func (p *Py) Close() error { return p.w.close(context.Background()) }

// CatalogSpec names a PyIceberg catalog: pyiceberg.catalog.load_catalog(Name,
// **Props). For a SqlCatalog, Name is the catalog_name its rows carry.
type CatalogSpec struct {
	Name  string            `json:"name"`
	Props map[string]string `json:"props"`
}

// PyIcebergSQLCatalog returns the spec of PyIceberg's SqlCatalog over the SQLite
// catalog file db (iceberg-go's and Java JdbcCatalog's layout), with name as
// its catalog_name and warehouse as a file:// URI.
func PyIcebergSQLCatalog(name, db, warehouse string) CatalogSpec {
	return CatalogSpec{Name: name, Props: map[string]string{
		"type":      "sql",
		"uri":       "sqlite:///" + db,
		"warehouse": warehouse,
	}}
}

// PyIcebergRESTCatalog returns the spec of PyIceberg's RestCatalog at uri.
func PyIcebergRESTCatalog(name, uri string) CatalogSpec {
	return CatalogSpec{Name: name, Props: map[string]string{"type": "rest", "uri": uri}}
}

// ScanOptions narrows a PyIceberg scan; the zero value reads the whole current
// snapshot.
type ScanOptions struct {
	// RowFilter is a PyIceberg filter string ("id > 3"); empty reads all rows.
	RowFilter string
	// SelectedFields projects columns; empty reads all.
	SelectedFields []string
	// SnapshotID reads an older snapshot when non-nil.
	SnapshotID *int64
}

// IcebergScan reads table ("namespace.name") with PyIceberg's scan().to_arrow().
func (p *Py) IcebergScan(ctx context.Context, cat CatalogSpec, table string, opts ScanOptions) (*rowjson.Table, error) {
	args := map[string]any{"catalog": cat, "table": table}
	if opts.RowFilter != "" {
		args["row_filter"] = opts.RowFilter
	}
	if len(opts.SelectedFields) > 0 {
		args["selected_fields"] = opts.SelectedFields
	}
	if opts.SnapshotID != nil {
		args["snapshot_id"] = *opts.SnapshotID
	}
	return p.rows(ctx, "pyiceberg_scan", args)
}

// IcebergAppend appends rows to table with PyIceberg and returns the new
// snapshot's id. With create set it first creates the namespace (when absent)
// and the table, from schema, with properties (e.g. format-version).
func (p *Py) IcebergAppend(ctx context.Context, cat CatalogSpec, table string, schema []Column, rows [][]any, create bool, properties map[string]string) (int64, error) {
	if rows == nil {
		rows = [][]any{}
	}
	args := map[string]any{"catalog": cat, "table": table, "schema": schema, "rows": rows, "create": create}
	if len(properties) > 0 {
		args["properties"] = properties
	}
	var out struct {
		SnapshotID int64 `json:"snapshot_id"`
	}
	err := p.w.call(ctx, "pyiceberg_append", args, &out)
	return out.SnapshotID, err
}

// IcebergDelete deletes the rows of table matching filter (a PyIceberg filter
// string) with PyIceberg's Table.delete and returns the current snapshot id
// afterwards (unchanged when nothing matched).
func (p *Py) IcebergDelete(ctx context.Context, cat CatalogSpec, table, filter string) (int64, error) {
	var out struct {
		SnapshotID *int64 `json:"snapshot_id"`
	}
	if err := p.w.call(ctx, "pyiceberg_delete", map[string]any{"catalog": cat, "table": table, "filter": filter}, &out); err != nil {
		return 0, err
	}
	if out.SnapshotID == nil {
		return 0, fmt.Errorf("%w: pyiceberg_delete: table %s has no snapshot", ErrProtocol, table)
	}
	return *out.SnapshotID, nil
}

// IcebergSnapshot is one entry of a table's snapshot log as PyIceberg sees it.
type IcebergSnapshot struct {
	SnapshotID       int64  `json:"snapshot_id"`
	ParentSnapshotID *int64 `json:"parent_snapshot_id"`
	SequenceNumber   int64  `json:"sequence_number"`
	Operation        string `json:"operation"`
}

// IcebergSnapshots lists table's snapshots in metadata order.
func (p *Py) IcebergSnapshots(ctx context.Context, cat CatalogSpec, table string) ([]IcebergSnapshot, error) {
	var out []IcebergSnapshot
	err := p.w.call(ctx, "pyiceberg_snapshots", map[string]any{"catalog": cat, "table": table}, &out)
	return out, err
}

// Column declares one column of rows an engine writes (DeltaWrite,
// IcebergAppend). Type is one of long, int, short, byte, string, boolean,
// double, float, date, timestamp (with zone, UTC, microseconds), timestamp_ntz,
// binary or decimal(p,s); values follow floe's JSON conventions.
type Column struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// DeltaWriteOptions configures DeltaWrite. The zero value appends.
type DeltaWriteOptions struct {
	// Mode is "append" (default), "overwrite", "error" or "ignore".
	Mode string
	// Configuration sets table properties on creation, e.g.
	// {"delta.enableChangeDataFeed": "true"}.
	Configuration map[string]string
	// PartitionBy lists partition columns on creation.
	PartitionBy []string
}

// DeltaWrite writes rows (values in floe's JSON conventions) to the Delta table
// at path with delta-rs's write_deltalake and returns the new table version.
// A value that does not fit its column is an error naming row and column.
func (p *Py) DeltaWrite(ctx context.Context, path string, schema []Column, rows [][]any, opts DeltaWriteOptions) (int64, error) {
	mode := opts.Mode
	if mode == "" {
		mode = "append"
	}
	if rows == nil {
		rows = [][]any{}
	}
	args := map[string]any{"path": path, "schema": schema, "rows": rows, "mode": mode}
	if len(opts.Configuration) > 0 {
		args["configuration"] = opts.Configuration
	}
	if len(opts.PartitionBy) > 0 {
		args["partition_by"] = opts.PartitionBy
	}
	return p.version(ctx, "delta_write", args)
}

// DeltaDelete deletes the rows matching predicate (a delta-rs SQL predicate,
// empty for all rows) and returns the new version.
func (p *Py) DeltaDelete(ctx context.Context, path, predicate string) (int64, error) {
	args := map[string]any{"path": path}
	if predicate != "" {
		args["predicate"] = predicate
	}
	return p.version(ctx, "delta_delete", args)
}

// DeltaUpdate sets columns to SQL expressions (updates maps column to
// expression text, e.g. {"v": "'x'"}) on rows matching predicate and returns
// the new version.
func (p *Py) DeltaUpdate(ctx context.Context, path, predicate string, updates map[string]string) (int64, error) {
	args := map[string]any{"path": path, "updates": updates}
	if predicate != "" {
		args["predicate"] = predicate
	}
	return p.version(ctx, "delta_update", args)
}

// DeltaMerge describes a delta-rs MERGE (DeltaTable.merge with source alias
// s and target alias t): the source rows, the join predicate, and the clauses
// applied in this order: when_matched_delete (when MatchedDelete is non-nil;
// an empty predicate deletes every match), when_matched_update, and
// when_not_matched_insert (column to SQL expression, e.g. {"id": "s.id"}).
type DeltaMerge struct {
	Schema           []Column
	Rows             [][]any
	Predicate        string
	MatchedDelete    *string
	MatchedUpdate    map[string]string
	NotMatchedInsert map[string]string
}

// DeltaMerge runs m on the Delta table at path with delta-rs and returns the
// new version.
func (p *Py) DeltaMerge(ctx context.Context, path string, m DeltaMerge) (int64, error) {
	rows := m.Rows
	if rows == nil {
		rows = [][]any{}
	}
	args := map[string]any{"path": path, "schema": m.Schema, "rows": rows, "predicate": m.Predicate}
	if m.MatchedDelete != nil {
		args["matched_delete"] = *m.MatchedDelete
	}
	if len(m.MatchedUpdate) > 0 {
		args["matched_update"] = m.MatchedUpdate
	}
	if len(m.NotMatchedInsert) > 0 {
		args["not_matched_insert"] = m.NotMatchedInsert
	}
	return p.version(ctx, "delta_merge", args)
}

// DeltaCDF reads the change data feed of the Delta table at path with
// delta-rs's load_cdf, from version start to end inclusive (end < 0: latest).
func (p *Py) DeltaCDF(ctx context.Context, path string, start, end int64) (*rowjson.Table, error) {
	args := map[string]any{"path": path, "starting_version": start}
	if end >= 0 {
		args["ending_version"] = end
	}
	return p.rows(ctx, "delta_cdf", args)
}

// DeltaScan reads the Delta table at path with delta-rs, at version (< 0:
// latest).
func (p *Py) DeltaScan(ctx context.Context, path string, version int64) (*rowjson.Table, error) {
	args := map[string]any{"path": path}
	if version >= 0 {
		args["version"] = version
	}
	return p.rows(ctx, "delta_scan", args)
}

// Python runs a Python snippet with `args` bound to vars (and rows_to_table,
// floe_worker's JSON-rows-to-Arrow helper); the value it leaves in `result` is
// returned as JSON (Arrow tables and readers as rowjson tables).
func (p *Py) Python(ctx context.Context, code string, vars map[string]any) (json.RawMessage, error) {
	return p.w.callRaw(ctx, "exec", map[string]any{"code": code, "vars": vars})
}

func (p *Py) rows(ctx context.Context, op string, args any) (*rowjson.Table, error) {
	raw, err := p.w.callRaw(ctx, op, args)
	if err != nil {
		return nil, err
	}
	return rowjson.Decode(raw)
}

func (p *Py) version(ctx context.Context, op string, args any) (int64, error) {
	var out struct {
		Version *int64 `json:"version"`
	}
	if err := p.w.call(ctx, op, args, &out); err != nil {
		return 0, err
	}
	if out.Version == nil {
		return 0, fmt.Errorf("%w: %s answered no version", ErrProtocol, op)
	}
	return *out.Version, nil
}
