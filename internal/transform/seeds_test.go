package transform_test

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/tableops"
)

type env struct {
	*tabletest.Env
	t      *testing.T
	runner *transform.Runner
}

func newEnv(t *testing.T) *env {
	e := tabletest.New(t)
	return &env{Env: e, t: t, runner: &transform.Runner{Catalog: e.Cat}}
}

func (e *env) exec(name string, sql string, data ...[]any) {
	e.t.Helper()
	tbl := e.Load(name)
	as := tabletest.ArrowSchema(tbl)
	target := e.Target(name, "")
	var err error
	switch {
	case sql == "insert":
		_, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
	case strings.HasPrefix(sql, "delete "):
		col, val, _ := strings.Cut(strings.TrimPrefix(sql, "delete "), "=")
		_, err = tableops.Delete(e.Ctx, target, tabletest.ColEq(col, false, val))
	case strings.HasPrefix(sql, "set "):
		// "set status=x where id=1"
		parts := strings.Fields(strings.TrimPrefix(sql, "set "))
		setCol, setVal, _ := strings.Cut(parts[0], "=")
		wCol, wVal, _ := strings.Cut(parts[2], "=")
		_, err = tableops.Update(e.Ctx, target, tabletest.ColEq(wCol, false, wVal), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
			return setColumn(rec, touched, setCol, setVal)
		})
	default:
		e.t.Fatalf("bad sql %q", sql)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) rows(name string) string {
	e.t.Helper()
	got, err := e.Rows(e.Load(name), scan.At{})
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Join(got, " ")
}

func (e *env) build(t *transform.Transform) *transform.Result {
	e.t.Helper()
	res, err := e.runner.Build(e.Ctx, t)
	if err != nil {
		e.t.Fatal(err)
	}
	return res
}

// identityCDC is the seeds' quick start: an identity transform replicating
// changes by key.
func identityCDC() *transform.Transform {
	return transform.New("cdc", func(ctx *transform.Context) error {
		src, out := ctx.Input("source"), ctx.Output("output")
		if ctx.IsIncremental() {
			changes, err := src.Changelog("id")
			if err != nil {
				return err
			}
			return out.ApplyChangelog(changes, "id")
		}
		rows, err := src.Current()
		if err != nil {
			return err
		}
		return out.Write(rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("id")),
		transform.WithReadMode(transform.Changelog))
}

func TestSeedIdentityCDC(t *testing.T) {
	for _, mode := range []string{"copy-on-write", "merge-on-read"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, iceberg.Properties{
				"write.delete.mode": mode, "write.update.mode": mode}); err != nil {
				t.Fatal(err)
			}
			e.exec("src", "insert", []any{1, "active"}, []any{2, "active"}, []any{3, "inactive"})
			tr := identityCDC()
			r := e.build(tr)
			if r.Incremental || !strings.Contains(r.Reason, "does not exist") {
				t.Fatalf("first build must be full because the output is missing: %+v", r)
			}
			if got, want := e.rows("out"), e.rows("src"); got != want {
				t.Fatalf("out %s, src %s", got, want)
			}
			props := e.Load("out").Properties()
			if props[state.PropWatermark] != formatID(e.Load("src").CurrentSnapshot().SnapshotID) {
				t.Fatalf("watermark %q", props[state.PropWatermark])
			}
			e.exec("src", "set status=inactive where id=1")
			e.exec("src", "delete id=2")
			e.exec("src", "insert", []any{4, "active"})
			r = e.build(tr)
			if !r.Incremental {
				t.Fatalf("second build must be incremental: %s", r.Reason)
			}
			if got, want := e.rows("out"), e.rows("src"); got != want {
				t.Fatalf("after incremental build out %s, src %s", got, want)
			}
			snaps := len(e.Load("out").Metadata().Snapshots())
			r = e.build(tr)
			if !r.Skipped {
				t.Fatalf("nothing new: the build must be skipped, got %+v", r)
			}
			if n := len(e.Load("out").Metadata().Snapshots()); n != snaps {
				t.Fatalf("a skipped build committed: %d snapshots, was %d", n, snaps)
			}
		})
	}
}

// TestSeedFilteredChangelog is the seeds' filtered changelog: rows that
// stop being active (or whose status becomes NULL) are deleted.
func TestSeedFilteredChangelog(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{2, "active"}, []any{3, "inactive"}, []any{4, "active"})
	tr := transform.New("active", func(ctx *transform.Context) error {
		src := ctx.Input("source").Filter("status = 'active'")
		out := ctx.Output("output")
		if !ctx.IsIncremental() {
			rows, err := src.Current()
			if err != nil {
				return err
			}
			return out.Write(rows)
		}
		changes, err := src.Changelog("id")
		if err != nil {
			return err
		}
		return out.ApplyChangelog(changes, "id")
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out"), transform.WithReadMode(transform.Changelog))
	e.build(tr)
	if got := e.rows("out"); got != "(1,'active') (2,'active') (4,'active')" {
		t.Fatalf("first build: %s", got)
	}
	e.exec("src", "set status=inactive where id=1")
	e.exec("src", "set status=NULL where id=2")
	e.exec("src", "set status=active where id=3")
	r := e.build(tr)
	if !r.Incremental {
		t.Fatal(r.Reason)
	}
	if got := e.rows("out"); got != "(3,'active') (4,'active')" {
		t.Fatalf("rows leaving the filter must be deleted: %s", got)
	}
}

// TestSeedAppendOnlyFilter is the seeds' append-only filter: added rows
// that are active are appended; an overwrite upstream forces a rebuild.
func TestSeedAppendOnlyFilter(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string, ts timestamptz", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active", "2024-05-01T10:00:00Z"}, []any{2, "inactive", "2024-05-02T10:00:00Z"})
	tr := transform.New("append_active", func(ctx *transform.Context) error {
		rows, err := ctx.Input("source").Filter("status = 'active'").Added()
		if err != nil {
			return err
		}
		return ctx.Output("output").Write(rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.PartitionBy("day(ts)")))
	e.build(tr)
	e.exec("src", "insert", []any{3, "active", "2024-05-03T10:00:00Z"}, []any{4, "inactive", "2024-05-03T11:00:00Z"})
	r := e.build(tr)
	if !r.Incremental {
		t.Fatal(r.Reason)
	}
	if got := e.rows("out"); got != "(1,'active',2024-05-01T10:00:00Z) (3,'active',2024-05-03T10:00:00Z)" {
		t.Fatalf("rows %s", got)
	}
	spec := e.Load("out").Spec()
	if spec.NumFields() != 1 || spec.Field(0).Transform.String() != "day" {
		t.Fatalf("the output should be partitioned by day(ts): %v", spec)
	}
	if n := len(e.Load("out").Metadata().Snapshots()); n != 2 {
		t.Fatalf("an incremental append-only build appends: %d snapshots", n)
	}
	e.exec("src", "delete id=1")
	r = e.build(tr)
	if r.Incremental || !strings.Contains(r.Reason, "append-only transforms rebuild") {
		t.Fatalf("a delete upstream must force a rebuild: %+v", r)
	}
	if got := e.rows("out"); got != "(3,'active',2024-05-03T10:00:00Z)" {
		t.Fatalf("after rebuild: %s", got)
	}
}

// TestSeedNativeNoneWatermark is the seeds' native changelog example: an
// input without snapshots records NONE; once it has rows, the next build
// initialises from its current state. Writes go through a native
// iceberg-go transaction when the output exists.
func TestSeedNativeNoneWatermark(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create("out", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	tr := transform.New("native", func(ctx *transform.Context) error {
		src, out := ctx.Input("source"), ctx.Output("output")
		if !ctx.IsIncremental() {
			rows, err := src.Filter("status = 'active'").Current()
			if err != nil {
				return err
			}
			return out.Replace(rows)
		}
		changes, err := src.Filter("status = 'active'").Changelog("id")
		if err != nil {
			return err
		}
		return out.ApplyChangelog(changes, "id")
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out"),
		transform.WithReadMode(transform.Changelog), transform.WithSemanticVersion(1))
	e.build(tr)
	if wm := e.Load("out").Properties()[state.PropWatermark]; wm != state.NoSnapshot {
		t.Fatalf("watermark of an empty input: %q, want NONE", wm)
	}
	if r := e.build(tr); !r.Skipped {
		t.Fatalf("still nothing: %+v", r)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{2, "inactive"})
	r := e.build(tr)
	if r.Incremental || !strings.Contains(r.Reason, "no snapshot at the last build") {
		t.Fatalf("from NONE the build must initialise from the current state: %+v", r)
	}
	if got := e.rows("out"); got != "(1,'active')" {
		t.Fatalf("rows %s", got)
	}
	// A native append through the transaction, with the watermark committed by floe.
	native := transform.New("native", func(ctx *transform.Context) error {
		tx, err := ctx.Output("output").Transaction()
		if err != nil {
			return err
		}
		rows, err := ctx.Input("source").Filter("status = 'active'").Added()
		if err != nil {
			return err
		}
		return tx.Append(ctx, rows, nil)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out"), transform.WithSemanticVersion(1),
		transform.WithReadMode(transform.Changelog))
	e.exec("src", "insert", []any{3, "active"})
	r = e.build(native)
	if !r.Incremental {
		t.Fatal(r.Reason)
	}
	if got := e.rows("out"); got != "(1,'active') (3,'active')" {
		t.Fatalf("rows %s", got)
	}
	out := e.Load("out")
	if out.Properties()[state.PropWatermark] != formatID(e.Load("src").CurrentSnapshot().SnapshotID) {
		t.Fatal("the native commit must carry the watermark")
	}
	// A semantic version bump rebuilds.
	bumped := *tr
	bumped.SemanticVersion = 2
	r = e.build(&bumped)
	if r.Incremental || !strings.Contains(r.Reason, "semantic version changed from 1 to 2") {
		t.Fatalf("%+v", r)
	}
}

// TestSeedNativeMerge is the seeds' native changelog example: the per-key
// changelog into a MERGE INTO with the filter conditions, the watermark in
// the same commit.
func TestSeedNativeMerge(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{2, "active"}, []any{3, "inactive"})
	tr := transform.New("native_merge", func(ctx *transform.Context) error {
		src, out := ctx.Input("source"), ctx.Output("output")
		if !ctx.IsIncremental() {
			rows, err := src.Filter("status = 'active'").Current()
			if err != nil {
				return err
			}
			return out.Replace(rows)
		}
		changes, err := src.Changelog("id")
		if err != nil {
			return err
		}
		return out.Merge(`MERGE INTO {output} AS target USING source_changelog AS source ON source.id = target.id
			WHEN MATCHED AND (source._change_type = 'DELETE' OR source.status IS NULL OR source.status <> 'active') THEN DELETE
			WHEN MATCHED AND source._change_type IN ('INSERT', 'UPDATE_AFTER') AND source.status = 'active' THEN UPDATE SET *
			WHEN NOT MATCHED AND source._change_type IN ('INSERT', 'UPDATE_AFTER') AND source.status = 'active' THEN INSERT *`, changes)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out"), transform.WithReadMode(transform.Changelog))
	e.build(tr)
	e.exec("src", "set status=NULL where id=1")
	e.exec("src", "set status=active where id=3")
	e.exec("src", "insert", []any{4, "active"}, []any{5, "inactive"})
	e.exec("src", "delete id=2")
	r := e.build(tr)
	if !r.Incremental {
		t.Fatal(r.Reason)
	}
	if got := e.rows("out"); got != "(3,'active') (4,'active')" {
		t.Fatalf("rows %s", got)
	}
	if e.Load("out").Properties()[state.PropWatermark] != formatID(e.Load("src").CurrentSnapshot().SnapshotID) {
		t.Fatal("the merge commit must carry the watermark")
	}
}
