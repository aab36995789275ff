package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/transform"
)

// This build of floe includes the MERGE INTO executor and the Delta Lake
// sync: merge and delta steps run them.
func init() {
	MergeFunc = runMerge
	DeltaSync = deltaSyncer{}
}

// runMerge runs a merge step's statement with merge.Merge, in one commit
// carrying the build's watermarks (replacing the destination's rows on a
// full build).
func runMerge(ctx context.Context, req MergeRequest) (transform.CommitResult, error) {
	stmt, err := expr.ParseMerge(req.Statement)
	if err != nil {
		return transform.CommitResult{}, fmt.Errorf("%w: %s", ErrInvalidPipeline, expr.FormatError(req.Statement, err))
	}
	changes := req.Changes
	src := merge.Source{Name: ChangesName, Schema: changes.Schema(), Rows: func(yield func(arrow.RecordBatch, error) bool) {
		for changes.Next() {
			rec := changes.RecordBatch()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := changes.Err(); err != nil {
			yield(nil, err)
		}
	}}
	opts := []merge.Option{
		merge.WithBranch(req.Commit.Branch),
		merge.WithCommitProperties(req.Commit.SetProperties),
		merge.WithExpectedProperties(req.Commit.Expect),
		merge.WithSnapshotProperties(req.Commit.SnapshotProperties),
		merge.WithCommitEmpty(),
	}
	if req.Commit.Replace {
		opts = append(opts, merge.WithReplaceTarget())
	}
	res, err := merge.Merge(ctx, req.Commit.Catalog, stmt, src, opts...)
	if err != nil {
		return transform.CommitResult{}, err
	}
	return transform.CommitResult{Committed: res.Committed, SnapshotID: res.SnapshotID, RowsAdded: res.RowsAdded, RowsRemoved: res.RowsRemoved,
		Attempts: res.Attempts}, nil
}

// deltaSyncer runs delta steps with deltasync.Sync.
type deltaSyncer struct{}

func (deltaSyncer) Sync(ctx context.Context, req DeltaSyncRequest) (*transform.Result, error) {
	spec := req.Spec
	if req.Full {
		return nil, fmt.Errorf("delta step %s: a full rebuild is not supported: the destination %s keeps the Delta version it reached; drop it to migrate the Delta table again", spec.Name, spec.Dst)
	}
	ident, err := catalog.ParseTableName(spec.Dst)
	if err != nil {
		return nil, err
	}
	src, err := OpenDeltaSource(ctx, req)
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
	o := transform.OutputResult{Name: "destination", Table: catalog.FormatName(ident), Operation: "delta sync", Committed: res.Committed}
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

func (deltaSyncer) Watermark(props iceberg.Properties) (int64, bool) {
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
