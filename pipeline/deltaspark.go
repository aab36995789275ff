package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/pushdown"
)

// ErrDeltaFirstRun says a Delta sync's first run (creating the Iceberg
// table and migrating the Delta snapshot) runs on floe's engine; only the
// change feed of later runs is pushed down.
var ErrDeltaFirstRun = errors.New("the first run of a delta sync migrates the Delta snapshot with floe's engine")

// DeltaSparkPlan is the range of Delta versions a delta sync would push
// down, and its estimate.
type DeltaSparkPlan struct {
	Table                *table.Table
	Keys                 []string
	Watermark, End       int64
	Location, DeltaTable string
	Estimate             pushdown.Estimate
}

// PlanDeltaSpark plans a delta sync of src into ident after its watermark
// up to end (-1: the latest version). It fails with ErrDeltaFirstRun when
// the table has no watermark yet.
func PlanDeltaSpark(ctx context.Context, cat *catalog.Catalog, src *delta.Table, ident table.Identifier, keys []string, end int64) (*DeltaSparkPlan, error) {
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
			return nil, ErrDeltaFirstRun
		}
		return nil, err
	}
	wm, ok := deltaWatermark(tbl.Properties())
	if !ok {
		return nil, ErrDeltaFirstRun
	}
	if loc := tbl.Properties()[deltasync.PropSourceLocation]; loc != "" && loc != src.Location() {
		return nil, fmt.Errorf("%s was synced from the Delta table %s, not %s; nothing was committed", catalog.FormatName(ident), loc, src.Location())
	}
	latest, err := src.LatestVersion(ctx)
	if err != nil {
		return nil, err
	}
	if end < 0 || end > latest {
		end = latest
	}
	if len(keys) == 0 {
		for _, id := range tbl.Schema().IdentifierFieldIDs {
			if f, ok := tbl.Schema().FindFieldByID(id); ok {
				keys = append(keys, f.Name)
			}
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: %s has no identifier fields; give --equality-columns", deltasync.ErrNoEqualityColumns, catalog.FormatName(ident))
	}
	p := &DeltaSparkPlan{Table: tbl, Keys: keys, Watermark: wm, End: end, Location: src.Location()}
	if end > wm {
		meta, _, err := src.Metadata(ctx, end)
		if err != nil {
			return nil, err
		}
		p.DeltaTable = meta.ID
		p.Estimate = deltaEstimate(src, wm+1, end).Add(pushdown.EstimateOutput(tbl))
	}
	return p, nil
}

// deltaEstimate is the size of the commit files of versions from..to: the
// log, not the data (the change feed's size is not known without reading
// the commits' add actions).
func deltaEstimate(src *delta.Table, from, to int64) pushdown.Estimate {
	var e pushdown.Estimate
	if from > to {
		return e
	}
	for v := from; v <= to; v++ {
		name := fmt.Sprintf("%s/_delta_log/%020d.json", localPath(src.Location()), v)
		if st, err := os.Stat(name); err == nil {
			e.ReadBytes += st.Size()
		}
	}
	return e
}

func localPath(loc string) string {
	if len(loc) > 7 && loc[:7] == "file://" {
		return loc[7:]
	}
	return loc
}

// SparkDeltaSync applies the change feed of the plan's range on Spark
// (table_changes_by_path, collapsed per key by commit version, merged by
// key) with the Delta version reached in the same commit.
func SparkDeltaSync(ctx context.Context, eng pushdown.Engine, cat *catalog.Catalog, p *DeltaSparkPlan, d pushdown.Decision, log *slog.Logger) (*deltasync.Result, *pushdown.Result, error) {
	name := catalog.FormatName(p.Table.Identifier())
	res := &deltasync.Result{Source: p.Location, Table: name, LatestVersion: p.End, StartWatermark: p.Watermark, Watermark: p.Watermark}
	if p.End <= p.Watermark {
		return res, nil, nil
	}
	summary := d.Summary()
	summary["floe.operation"] = "delta-sync"
	summary["floe.delta.source-versions"] = fmt.Sprintf("%d-%d", p.Watermark+1, p.End)
	job := pushdown.Job{Kind: pushdown.JobDelta, Catalog: cat, Output: p.Table.Identifier(), Keys: p.Keys,
		DeltaPath: p.Location, DeltaStart: p.Watermark + 1, DeltaEnd: p.End,
		SetProperties: map[string]string{
			deltasync.PropSourceVersion:  strconv.FormatInt(p.End, 10),
			deltasync.PropSourceLocation: p.Location,
			deltasync.PropSourceTableID:  p.DeltaTable,
		},
		Expect: map[string]string{
			deltasync.PropSourceVersion:  strconv.FormatInt(p.Watermark, 10),
			deltasync.PropSourceLocation: p.Table.Properties()[deltasync.PropSourceLocation],
		},
		Summary: summary, Logger: log}
	out, err := eng.Run(ctx, job)
	if err != nil {
		// The engine's errors name the output (pushdown.Engine.Run).
		return nil, nil, fmt.Errorf("delta sync %s on Spark: %w", p.Location, err)
	}
	res.Watermark, res.Committed = p.End, out.Committed
	res.Batches = []deltasync.Batch{{FromVersion: p.Watermark + 1, ToVersion: p.End, RowsAdded: out.RowsAdded, RowsRemoved: out.RowsRemoved,
		SnapshotID: out.SnapshotID, Mode: "spark"}}
	return res, out, nil
}

// deltaOnSpark runs a delta step on Spark when its engine choice says so;
// it returns a nil result when the step runs locally (d says why).
func deltaOnSpark(ctx context.Context, req deltaSyncRequest, src *delta.Table, ident table.Identifier) (*deltasync.Result, *pushdown.Result, pushdown.Decision, error) {
	local := pushdown.Decision{Engine: string(pushdown.Local)}
	if req.Push.Kind == "" || req.Push.Kind == pushdown.Local {
		return nil, nil, local, nil
	}
	plan, err := PlanDeltaSpark(ctx, req.Catalog, src, ident, req.Spec.EqualityColumns, -1)
	unsupported := ""
	switch {
	case errors.Is(err, ErrDeltaFirstRun):
		unsupported = ErrDeltaFirstRun.Error()
	case err != nil:
		return nil, nil, local, err
	case req.Remote == nil:
		unsupported = "no Spark engine is connected"
	}
	var est pushdown.Estimate
	if plan != nil {
		est = plan.Estimate
	}
	d, err := req.Push.Choose(est, unsupported)
	if errors.Is(err, pushdown.ErrNotPushable) && unsupported == ErrDeltaFirstRun.Error() {
		// The first run has no change feed to push down: it migrates.
		d, err = pushdown.Decision{Engine: string(pushdown.Local), Reason: "kept local: " + unsupported}, nil
	}
	if err != nil || !d.Spark() {
		if d.Reason != "" && req.Logger != nil {
			req.Logger.Info("delta sync runs locally", "reason", d.Reason)
		}
		return nil, nil, d, err
	}
	res, out, err := SparkDeltaSync(ctx, req.Remote, req.Catalog, plan, d, req.Logger)
	return res, out, d, err
}
