package transform_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
)

// TestDeltaInput: a Delta input's watermark is the Delta version a build
// pinned: a build with no new version is skipped, the next reads the
// versions after the watermark from the Change Data Feed, and a table
// recreated at the location (a new metaData.id) rebuilds.
func TestDeltaInput(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(t.TempDir(), "src")
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var w *deltatest.Writer
	commit := func(actions ...any) {
		t.Helper()
		clock = clock.Add(time.Minute)
		if _, err := w.Commit(append([]any{deltatest.CommitInfo{Timestamp: clock, Operation: "WRITE"}}, actions...)...); err != nil {
			t.Fatal(err)
		}
	}
	create := func(id string) {
		t.Helper()
		var err error
		if w, err = deltatest.NewWriter(dir); err != nil {
			t.Fatal(err)
		}
		md, err := deltatest.Metadata(sch, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
		if err != nil {
			t.Fatal(err)
		}
		md.ID = id
		commit(delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md)
	}
	insert := func(ids ...any) {
		t.Helper()
		var rows [][]any
		for _, id := range ids {
			rows = append(rows, []any{id})
		}
		rec, err := tabletest.Record(sch, rows)
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		a, err := w.WriteData(filepath.Base(t.TempDir())+".parquet", rec)
		if err != nil {
			t.Fatal(err)
		}
		commit(a)
	}
	create("7b1e8c1e-0000-4000-8000-000000000001")
	insert(int64(1), int64(2))
	var changes int64
	tr := transform.New("copy", func(ctx *transform.Context) error {
		in := ctx.Input("source")
		if !in.IsDelta() || in.Table() != nil {
			t.Fatalf("input: delta %v, table %v", in.IsDelta(), in.Table())
		}
		if !ctx.IsIncremental() {
			rows, err := in.Current()
			if err != nil {
				return err
			}
			return ctx.Output("out").Replace(rows)
		}
		if _, err := in.NetChanges(); err == nil || !strings.Contains(err.Error(), "DeltaChanges") {
			t.Fatalf("NetChanges of a Delta input: %v", err)
		}
		rows, err := in.DeltaChanges()
		if err != nil {
			return err
		}
		changes = 0
		for rec, err := range rows.All() {
			if err != nil {
				return err
			}
			changes += rec.NumRows()
			rec.Release()
		}
		return nil
	}, transform.WithDeltaInput("source", dir), transform.WithOutput("out", "ns.out"))
	build := func() *transform.Result {
		t.Helper()
		res, err := e.runner.Build(e.Ctx, tr)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := build(); res.Incremental || res.Inputs[0].End != "1" || res.Inputs[0].Table != "delta:"+dir {
		t.Fatalf("first build %+v", res)
	}
	if res := build(); !res.Skipped {
		t.Fatalf("a build with no new Delta version: %+v", res)
	}
	insert(int64(3))
	insert(int64(4), int64(5))
	res := build()
	if !res.Incremental || res.Inputs[0].Start != "1" || res.Inputs[0].End != "3" || res.Inputs[0].Snapshots != 2 || changes != 3 {
		t.Fatalf("incremental build %+v, %d changes", res, changes)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	create("7b1e8c1e-0000-4000-8000-000000000002")
	insert(int64(9))
	insert(int64(10))
	insert(int64(11))
	insert(int64(12))
	if res := build(); res.Incremental || !strings.Contains(res.Reason, "replaced by another table") {
		t.Fatalf("a recreated Delta table: incremental %v, reason %q", res.Incremental, res.Reason)
	}
}
