package pipeline

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/transform"
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

// DeltaSyncRequest is one run of a delta step.
type DeltaSyncRequest struct {
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

// DeltaSyncer runs Delta Lake to Iceberg syncs for delta steps. Its methods
// may be called from several goroutines at once (for different steps).
type DeltaSyncer interface {
	// Sync brings the destination up to date with the Delta table, in one
	// Iceberg commit that records the last synced Delta version, and
	// reports it as a build: Inputs[0] is the Delta table with Start and End
	// versions, Outputs[0] the destination.
	Sync(ctx context.Context, req DeltaSyncRequest) (*transform.Result, error)
	// Watermark returns the last Delta version synced into a destination
	// with these table properties; ok is false when there is none.
	Watermark(props iceberg.Properties) (version int64, ok bool)
}

// DeltaSync runs delta steps. It is nil until a Delta Lake sync is wired
// into this build of floe; a delta step then fails with ErrNotAvailable.
// Set it once, before running pipelines (it is read without
// synchronisation).
var DeltaSync DeltaSyncer

// OpenDeltaSource opens a delta step's Delta table with the storage
// settings it names: its storage profile, else the catalog's storage
// settings, with its source properties on top (see catalog.SourceStorage).
func OpenDeltaSource(ctx context.Context, req DeltaSyncRequest) (*delta.Table, error) {
	props, err := catalog.SourceStorage(req.Catalog, "", req.Spec.Storage, req.Spec.SourceProperties)
	if err != nil {
		return nil, fmt.Errorf("delta step %s: %w", req.Spec.Name, err)
	}
	return delta.OpenLocation(ctx, req.Spec.Path, props)
}
