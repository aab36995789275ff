package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pushdown"
)

// DeltaSpec describes a delta step: sync the Delta Lake table at Path
// (its Change Data Feed) into the Iceberg table Dst.
type DeltaSpec struct {
	Name            string   // the step's name
	Path            string   // Delta table location (folder or URI)
	Dst             string   // destination Iceberg table
	EqualityColumns []string // columns identifying a row
	// Properties for the destination table when it is created.
	Properties map[string]string
	// Storage names a storage profile of the configuration file whose
	// settings read Path; empty means the catalog's own storage settings.
	Storage string
	// SourceProperties override single storage settings for reading Path.
	SourceProperties map[string]string
}

// deltaSyncRequest is one run of a delta step.
type deltaSyncRequest struct {
	Spec    DeltaSpec        // what to sync
	Catalog *catalog.Catalog // where the destination lives
	// Full asks for a full rebuild of the destination from the Delta
	// table's latest snapshot.
	Full   bool
	Logger *slog.Logger // the run's logger
	// Push chooses the engine; Remote is the Spark engine (nil: none).
	Push   pushdown.Settings
	Remote pushdown.Engine
}

// openDeltaSource opens a delta step's Delta table with the storage
// settings it names: its storage profile, else the catalog's storage
// settings, with its source properties on top (see catalog.SourceStorage).
func openDeltaSource(ctx context.Context, req deltaSyncRequest) (*delta.Table, error) {
	props, err := catalog.SourceStorage(req.Catalog, "", req.Spec.Storage, req.Spec.SourceProperties)
	if err != nil {
		return nil, fmt.Errorf("delta step %s: %w", req.Spec.Name, err)
	}
	return delta.OpenLocation(ctx, req.Spec.Path, props)
}

// syncDelta runs a delta step with deltasync.Sync: it brings the
// destination up to date with the Delta table, in one Iceberg commit that
// records the last synced Delta version, and reports it as a build:
// Inputs[0] is the Delta table with Start and End versions, Outputs[0] the
// destination.
func syncDelta(ctx context.Context, req deltaSyncRequest) (*transform.Result, error) {
	spec := req.Spec
	if req.Full {
		return nil, fmt.Errorf("delta step %s: a full rebuild is not supported: the destination %s keeps the Delta version it reached; drop it to migrate the Delta table again", spec.Name, spec.Dst)
	}
	ident, err := catalog.ParseTableName(spec.Dst)
	if err != nil {
		return nil, err
	}
	src, err := openDeltaSource(ctx, req)
	if err != nil {
		return nil, err
	}
	started := time.Now()
	res, pushed, d, err := deltaOnSpark(ctx, req, src, ident)
	if err == nil && res == nil {
		res, err = deltasync.Sync(ctx, req.Catalog, src, ident, deltasync.Options{
			EqualityColumns: spec.EqualityColumns, Properties: spec.Properties, Logger: req.Logger})
	}
	if err != nil {
		return nil, err
	}
	out := &transform.Result{Transform: spec.Name, Incremental: !res.Migrated, Started: started, Duration: time.Since(started),
		Engine: d.Engine, EngineReason: d.Reason}
	if pushed != nil {
		out.Remote, out.SparkSession, out.SparkApp = pushed.Remote, pushed.SessionID, pushed.AppID
	}
	if res.Migrated {
		out.Reason = fmt.Sprintf("first run: migrated the Delta snapshot at version %d", res.MigratedVersion)
	}
	out.Skipped = !res.Committed
	out.Inputs = []transform.InputRange{{Name: "delta", Table: spec.Path, Start: version(res.StartWatermark), End: version(res.Watermark),
		Snapshots: int(max(res.Watermark-res.StartWatermark, 0))}}
	out.Outputs = []transform.OutputResult{DeltaOutput(ctx, req.Catalog, ident, res)}
	return out, nil
}

// DeltaOutput reports what a Delta Lake sync committed to its Iceberg
// table as a build's output: the rows of the migration of the Delta
// snapshot (on a first run) and of every batch of changes, and the last
// snapshot committed.
func DeltaOutput(ctx context.Context, cat *catalog.Catalog, ident []string, res *deltasync.Result) transform.OutputResult {
	o := transform.OutputResult{Name: "destination", Table: catalog.FormatName(ident), Operation: "delta sync", Committed: res.Committed, AnswerLost: res.AnswerLost}
	if res.Migrated {
		o.RowsAdded += res.MigratedRows
	}
	for _, b := range res.Batches {
		if b.SnapshotID != 0 {
			o.SnapshotID = b.SnapshotID
		}
		o.RowsAdded += b.RowsAdded
		o.RowsRemoved += b.RowsRemoved
	}
	if o.SnapshotID == 0 && res.Migrated && cat != nil {
		// The migration's snapshot (deltasync does not report its id).
		if tbl, err := cat.Load(ctx, ident); err == nil {
			if s := tbl.CurrentSnapshot(); s != nil {
				o.SnapshotID = s.SnapshotID
			}
		}
	}
	return o
}

// deltaWatermark returns the last Delta version synced into a destination
// with these table properties; ok is false when there is none.
func deltaWatermark(props iceberg.Properties) (version int64, ok bool) {
	v, ok := props[deltasync.PropSourceVersion]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

func version(v int64) string {
	if v < 0 {
		return ""
	}
	return strconv.FormatInt(v, 10)
}
