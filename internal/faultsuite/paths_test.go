package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

var ident = table.Identifier{"ns", "t"}

func props(extra ...string) iceberg.Properties {
	p := iceberg.Properties{"wm": "w0"}
	for k, v := range fast {
		p[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}

// seedTable creates ns.t (id, v; bucketed so the change touches several
// files) with 24 rows.
func seedTable(e *env, p iceberg.Properties) error {
	if _, err := e.Create("t", "id long not null, v string", "bucket(4, id)", []string{"id"}, p); err != nil {
		return err
	}
	var data [][]any
	for i := int64(1); i <= 24; i++ {
		data = append(data, []any{i, fmt.Sprint("a", i)})
	}
	_, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data))
	return err
}

var changeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "_change_type", Type: arrow.BinaryTypes.String},
}, nil)

// changes upserts 3..6, deletes 7 and 8, inserts 30 and 31.
func changes() func(func(arrow.RecordBatch, error) bool) {
	data := [][]any{
		{int64(3), "u3", "UPDATE_AFTER"}, {int64(4), "u4", "UPDATE_AFTER"}, {int64(5), "u5", "INSERT"}, {int64(6), "u6", "UPDATE_AFTER"},
		{int64(7), nil, "DELETE"}, {int64(8), nil, "DELETE"}, {int64(30), "n30", "INSERT"}, {int64(31), "n31", "INSERT"},
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		rec, err := tabletest.Record(changeSchema, data)
		yield(rec, err)
	}
}

// watermarked runs a change that carries the watermark wm w0 -> w1, as
// sync and pipelines do: a rerun that sees w1 commits nothing.
func watermarked(e *env, f func() (bool, error)) (bool, error) {
	tbl, err := e.Cat.Load(e.Ctx, ident)
	if err != nil {
		return false, err
	}
	if tbl.Properties()["wm"] == "w1" {
		return false, nil
	}
	return f()
}

func applyPath(name string, del merge.DeleteMode, p iceberg.Properties) path {
	return path{name: name, tables: []string{"t"},
		setup: func(e *env) error { return seedTable(e, p) },
		run: func(e *env) (bool, error) {
			return watermarked(e, func() (bool, error) {
				res, err := merge.Apply(e.Ctx, e.Cat, ident, changeSchema, changes(), []string{"id"},
					merge.WithDeleteMode(del), merge.WithExpectedProperties(map[string]string{"wm": "w0"}),
					merge.WithCommitProperties(map[string]string{"wm": "w1"}))
				return res != nil && res.AnswerLost, err
			})
		}}
}

const mergeSQL = `MERGE INTO ns.t USING s ON t.id = s.id
  WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
  WHEN MATCHED THEN UPDATE SET *
  WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *`

func mergePath(name string, p iceberg.Properties) path {
	return path{name: name, tables: []string{"t"},
		setup: func(e *env) error { return seedTable(e, p) },
		run: func(e *env) (bool, error) {
			return watermarked(e, func() (bool, error) {
				stmt, err := expr.ParseMerge(mergeSQL)
				if err != nil {
					return false, err
				}
				res, err := merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Name: "s", Schema: changeSchema, Rows: changes()},
					merge.WithExpectedProperties(map[string]string{"wm": "w0"}), merge.WithCommitProperties(map[string]string{"wm": "w1"}))
				return res != nil && res.AnswerLost, err
			})
		}}
}

func target(e *env) tableops.Target {
	t := e.Target("t", "")
	t.CommitID = e.id
	return t
}

// rowsOf produces data in ns.t's schema (the schema of the table
// without faults: setup made it).
func rowsOf(data [][]any) func() iter.Seq2[arrow.RecordBatch, error] {
	return tabletest.Seq(tableSchema, data)
}

var tableSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func lostOf(o *tableops.Outcome) bool { return o != nil && o.AnswerLost }

func paths() []path {
	cowV2 := props("format-version", "2")
	morV2 := props("format-version", "2", "write.delete.mode", "merge-on-read", "write.update.mode", "merge-on-read", "write.merge.mode", "merge-on-read")
	morV3 := props("format-version", "3", "write.delete.mode", "merge-on-read", "write.update.mode", "merge-on-read", "write.merge.mode", "merge-on-read")
	// Write mode auto, with thresholds that make it rewrite (0) or write
	// deletes (1: no file has every row changed).
	autoCow := props("format-version", "2", "floe.write.mode", "auto", "floe.write.auto.rewrite-ratio", "0")
	autoMorV3 := props("format-version", "3", "floe.write.mode", "auto", "floe.write.auto.rewrite-ratio", "1")
	refState := func(e *env, tbl *table.Table) (string, error) {
		// Refs by the position of their snapshot in the table's history
		// (snapshot ids differ between trials).
		order := map[int64]int{}
		snaps := tbl.Metadata().Snapshots()
		sort.Slice(snaps, func(i, j int) bool { return snaps[i].SequenceNumber < snaps[j].SequenceNumber })
		for i, s := range snaps {
			order[s.SnapshotID] = i
		}
		var refs []string
		for n, r := range tbl.Metadata().Refs() {
			refs = append(refs, fmt.Sprintf("%s@%d", n, order[r.SnapshotID]))
		}
		sort.Strings(refs)
		rows, err := e.Rows(tbl, scanAt())
		return strings.Join(refs, ",") + " " + strings.Join(rows, " "), err
	}
	withTwoSnapshots := func(p iceberg.Properties) func(e *env) error {
		return func(e *env) error {
			if err := seedTable(e, p); err != nil {
				return err
			}
			_, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), [][]any{{int64(40), "b40"}}))
			return err
		}
	}
	idIn := func(lo, hi int64) *tableops.Predicate {
		return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
			ids := rec.Column(0).(*array.Int64)
			out := make([]bool, rec.NumRows())
			for i := range out {
				out[i] = ids.Value(i) >= lo && ids.Value(i) <= hi
			}
			return out, nil
		}}
	}
	return append([]path{
		applyPath("apply copy-on-write v2", merge.DeleteAuto, cowV2),
		applyPath("apply position deletes v2", merge.DeleteAuto, morV2),
		applyPath("apply deletion vectors v3", merge.DeleteAuto, morV3),
		applyPath("apply equality deletes v2", merge.DeleteEquality, cowV2),
		applyPath("apply auto rewriting v2", merge.DeleteAuto, autoCow),
		applyPath("apply auto deletion vectors v3", merge.DeleteByFraction, autoMorV3),
		mergePath("merge auto v2", autoCow),
		mergePath("merge copy-on-write v2", cowV2),
		mergePath("merge merge-on-read v3", morV3),
		{name: "table append", tables: []string{"t"}, setup: func(e *env) error { return seedTable(e, cowV2) },
			run: func(e *env) (bool, error) {
				o, err := tableops.Append(e.Ctx, target(e), rowsOf([][]any{{int64(50), "x"}, {int64(51), "y"}}))
				return lostOf(o), err
			}},
		{name: "table delete copy-on-write", tables: []string{"t"}, setup: func(e *env) error { return seedTable(e, cowV2) },
			run: func(e *env) (bool, error) {
				o, err := tableops.Delete(e.Ctx, target(e), idIn(2, 9))
				return lostOf(o), err
			}},
		{name: "table delete merge-on-read v2", tables: []string{"t"}, setup: func(e *env) error { return seedTable(e, morV2) },
			run: func(e *env) (bool, error) {
				o, err := tableops.Delete(e.Ctx, target(e), idIn(2, 9))
				return lostOf(o), err
			}},
		{name: "table update merge-on-read v3", tables: []string{"t"}, setup: func(e *env) error { return seedTable(e, morV3) },
			run: func(e *env) (bool, error) {
				o, err := tableops.Update(e.Ctx, target(e), idIn(10, 13), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
					return setV(rec, touched, "z")
				})
				return lostOf(o), err
			}},
		{name: "table overwrite", tables: []string{"t"}, setup: func(e *env) error { return seedTable(e, cowV2) },
			run: func(e *env) (bool, error) {
				o, err := tableops.Overwrite(e.Ctx, target(e), idIn(15, 24), rowsOf([][]any{{int64(16), "o16"}, {int64(17), "o17"}}))
				return lostOf(o), err
			}},
		{name: "table compact", tables: []string{"t"},
			setup: func(e *env) error {
				if err := seedTable(e, morV2); err != nil {
					return err
				}
				_, err := tableops.Delete(e.Ctx, e.Target("t", ""), idIn(1, 6))
				return err
			},
			// The rows stay; what changes is the files: compare the
			// number of delete files.
			state: func(e *env, tbl *table.Table) (string, error) {
				rows, err := e.Rows(tbl, scanAt())
				s := tbl.CurrentSnapshot()
				return fmt.Sprintf("%s op=%s", strings.Join(rows, " "), s.Summary.Operation), err
			},
			run: func(e *env) (bool, error) {
				tbl, err := e.Cat.Load(e.Ctx, ident)
				if err != nil {
					return false, err
				}
				if tbl.CurrentSnapshot().Summary.Operation == table.OpReplace {
					return false, nil // compacted already: a rerun has nothing to do
				}
				o, err := tableops.Compact(e.Ctx, target(e))
				return lostOf(o), err
			}},
		{name: "branch create", tables: []string{"t"}, state: refState, setup: withTwoSnapshots(cowV2),
			rerunOK: func(err error) bool { return errors.Is(err, tableops.ErrRefExists) },
			run: func(e *env) (bool, error) {
				o, err := tableops.CreateBranch(e.Ctx, e.Cat, ident, "audit", nil)
				return o != nil && o.AnswerLost, err
			}},
		{name: "branch drop", tables: []string{"t"}, state: refState,
			setup: func(e *env) error {
				if err := withTwoSnapshots(cowV2)(e); err != nil {
					return err
				}
				_, err := tableops.CreateBranch(e.Ctx, e.Cat, ident, "old", nil)
				return err
			},
			rerunOK: func(err error) bool { return errors.Is(err, tableops.ErrNoSuchRef) },
			run: func(e *env) (bool, error) {
				o, err := tableops.DropRef(e.Ctx, e.Cat, ident, "old")
				return o != nil && o.AnswerLost, err
			}},
		{name: "rollback", tables: []string{"t"}, state: refState, setup: withTwoSnapshots(cowV2),
			run: func(e *env) (bool, error) {
				tbl, err := e.Cat.Load(e.Ctx, ident)
				if err != nil {
					return false, err
				}
				first := tbl.Metadata().Snapshots()[0].SnapshotID
				o, err := tableops.Rollback(e.Ctx, e.Cat, ident, "", first)
				return o != nil && o.AnswerLost, err
			}},
		transformPath("transform write", false),
		transformPath("transform native transaction", true),
		deltaPath("delta sync first run (create and migrate)", false),
		deltaPath("delta sync changes", true),
	}, lifecyclePaths()...)
}

func setV(rec arrow.RecordBatch, touched []bool, v string) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rec.Schema())
	defer b.Release()
	ids := rec.Column(0).(*array.Int64)
	for i, t := range touched {
		if t {
			b.Field(0).(*array.Int64Builder).Append(ids.Value(i))
			b.Field(1).(*array.StringBuilder).Append(v)
		}
	}
	return b.NewRecordBatch(), nil
}

// transformPath builds a transform copying ns.t's new rows into ns.out,
// through Output.Write or a native transaction.
func transformPath(name string, native bool) path {
	tr := func() *transform.Transform {
		return transform.New("copy", func(ctx *transform.Context) error {
			rows, err := ctx.Input("source").Added()
			if err != nil {
				return err
			}
			if !native {
				return ctx.Output("output").Write(rows)
			}
			tx, err := ctx.Output("output").Transaction()
			if err != nil {
				return err
			}
			return tx.Append(context.Background(), rows, nil)
		}, transform.WithInput("source", "ns.t"), transform.WithOutput("output", "ns.out", transform.TableProperties(map[string]string(fast))))
	}
	return path{name: name, tables: []string{"out"},
		setup: func(e *env) error {
			if err := seedTable(e, props()); err != nil {
				return err
			}
			if native {
				// The output exists before the build (a native write needs it).
				if _, err := e.Create("out", "id long not null, v string", "", []string{"id"}, fast); err != nil {
					return err
				}
			}
			return nil
		},
		run: func(e *env) (bool, error) {
			_, err := (&transform.Runner{Catalog: e.Cat}).Build(e.Ctx, tr())
			return false, err
		}}
}

var deltaSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// deltaPath syncs a Delta table into ns.d: its first run (the table
// created with the migrated snapshot), or a batch of changes.
func deltaPath(name string, changes bool) path {
	src := func(e *env) *delta.Table {
		d, err := delta.Open(e.Ctx, e.data["delta"].(string))
		if err != nil {
			panic(err)
		}
		return d
	}
	opts := deltasync.Options{EqualityColumns: []string{"id"}, Properties: map[string]string(fast)}
	return path{name: name, tables: []string{"d"},
		setup: func(e *env) error {
			dir, err := writeDelta(e)
			if err != nil {
				return err
			}
			e.data["delta"] = dir
			if changes {
				o := opts
				o.End = delta.AtVersion(0)
				_, err = deltasync.Sync(e.Ctx, e.Cat, src(e), table.Identifier{"ns", "d"}, o)
			}
			return err
		},
		run: func(e *env) (bool, error) {
			o := opts
			if !changes {
				o.End = delta.AtVersion(0)
			}
			_, err := deltasync.Sync(e.Ctx, e.Cat, src(e), table.Identifier{"ns", "d"}, o)
			return false, err
		}}
}

// writeDelta writes a Delta table with Change Data Feed: version 0 holds
// ids 1..10, version 1 inserts 11 and 12.
func writeDelta(e *env) (string, error) {
	dir := filepath.Join(e.TB.TempDir(), "delta")
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		return "", err
	}
	md, err := deltatest.Metadata(deltaSchema, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		return "", err
	}
	var rows [][]any
	for i := int64(1); i <= 10; i++ {
		rows = append(rows, []any{i, fmt.Sprint("d", i)})
	}
	rec, err := tabletest.Record(deltaSchema, rows)
	if err != nil {
		return "", err
	}
	add, err := w.WriteData("part-0.parquet", rec)
	rec.Release()
	if err != nil {
		return "", err
	}
	clock := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	if _, err := w.Commit(deltatest.CommitInfo{Timestamp: clock, Operation: "CREATE TABLE"},
		delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, md, add); err != nil {
		return "", err
	}
	newRows := [][]any{{int64(11), "d11"}, {int64(12), "d12"}}
	rec, err = tabletest.Record(deltaSchema, newRows)
	if err != nil {
		return "", err
	}
	add, err = w.WriteData("part-1.parquet", rec)
	rec.Release()
	if err != nil {
		return "", err
	}
	cdcSchema := arrow.NewSchema(append(deltaSchema.Fields(), arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String}), nil)
	crec, err := tabletest.Record(cdcSchema, [][]any{{int64(11), "d11", "insert"}, {int64(12), "d12", "insert"}})
	if err != nil {
		return "", err
	}
	cdc, err := w.WriteChangeData("_change_data/cdc-1.parquet", crec)
	crec.Release()
	if err != nil {
		return "", err
	}
	_, err = w.Commit(deltatest.CommitInfo{Timestamp: clock.Add(time.Minute), Operation: "WRITE"}, add, cdc)
	return dir, err
}

func scanAt() scan.At { return scan.At{} }
