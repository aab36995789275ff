package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
	"github.com/floedata/floe/delta/deltatest"
	"github.com/floedata/floe/scan"
)

// demoDelta writes a small Delta table with the Change Data Feed on (as
// Spark would: an insert, then an UPDATE and a DELETE recorded in change
// files), syncs it into Iceberg, and syncs again after each new commit.
func (d *demo) demoDelta(dir string) error {
	path := filepath.Join(dir, "delta", "events")
	w, err := deltatest.NewWriter(path)
	if err != nil {
		return err
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	meta, err := deltatest.Metadata(schema, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		return err
	}
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var first []int64
	for id := int64(1); id <= 1000; id++ {
		first = append(first, id)
	}
	rec := demoEvents(schema, first, t0, func(int64) string { return "view" })
	add, err := w.WriteData("part-0.parquet", rec)
	rec.Release()
	if err != nil {
		return err
	}
	if _, err := w.Commit(delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, meta, add,
		deltatest.CommitInfo{Timestamp: t0, Operation: "WRITE"}); err != nil {
		return err
	}
	d.say("Delta table %s: version 0, 1000 events, Change Data Feed enabled", path)

	sync := func() error {
		src, err := delta.Open(d.ctx, path)
		if err != nil {
			return err
		}
		res, err := deltasync.Sync(d.ctx, d.cat, src, table.Identifier{"lake", "events"}, deltasync.Options{EqualityColumns: []string{"id"}})
		if err != nil {
			return err
		}
		switch {
		case res.Migrated:
			d.say("sync: created lake.events and migrated Delta version %d (%d rows); watermark %d", res.MigratedVersion, res.MigratedRows, res.Watermark)
		case len(res.Batches) > 0:
			b := res.Batches[len(res.Batches)-1]
			d.say("sync: applied Delta versions %d..%d (%d change rows: %d upserts, %d deletes) in Iceberg snapshot %d; watermark %d",
				b.FromVersion, b.ToVersion, b.ChangeRows, b.Upserts, b.Deletes, b.SnapshotID, res.Watermark)
		default:
			d.say("sync: nothing new in the Delta table, nothing committed")
		}
		return d.checkDelta(src)
	}
	if err := sync(); err != nil {
		return err
	}
	// Version 1: UPDATE kind = 'click' WHERE id <= 3, and DELETE id = 10, as
	// one rewrite with its change data (pre- and post-images, deletes).
	t1 := t0.Add(time.Hour)
	var ids []int64
	for id := int64(1); id <= 1000; id++ {
		if id != 10 {
			ids = append(ids, id)
		}
	}
	next := demoEvents(schema, ids, t0, func(id int64) string {
		if id <= 3 {
			return "click"
		}
		return "view"
	})
	defer next.Release()
	add1, err := w.WriteData("part-1.parquet", next)
	if err != nil {
		return err
	}
	cdcSchema := arrow.NewSchema(append(append([]arrow.Field{}, schema.Fields()...), arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String}), nil)
	cdc := changeRows(cdcSchema, t0, [][3]any{{1, "view", "update_preimage"}, {1, "click", "update_postimage"},
		{2, "view", "update_preimage"}, {2, "click", "update_postimage"}, {3, "view", "update_preimage"}, {3, "click", "update_postimage"},
		{10, "view", "delete"}})
	defer cdc.Release()
	cdcFile, err := w.WriteChangeData("_change_data/cdc-1.parquet", cdc)
	if err != nil {
		return err
	}
	rm := delta.RemoveFile{Path: add.Path, DeletionTimestamp: ptr(t1.UnixMilli()), DataChange: true}
	if _, err := w.Commit(rm, add1, cdcFile, deltatest.CommitInfo{Timestamp: t1, Operation: "MERGE"}); err != nil {
		return err
	}
	d.say("Delta version 1: 3 events updated, 1 deleted (a rewrite with change data files)")
	if err := sync(); err != nil {
		return err
	}
	return sync()
}

func ptr[T any](v T) *T { return &v }

// demoEvents builds one event per id, of the kind kindOf gives it.
func demoEvents(schema *arrow.Schema, ids []int64, at time.Time, kindOf func(int64) string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(kindOf(id))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(at.Add(time.Duration(id) * time.Second).UnixMicro()))
	}
	return b.NewRecordBatch()
}

func changeRows(schema *arrow.Schema, t0 time.Time, rows [][3]any) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		id := int64(r[0].(int))
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(r[1].(string))
		b.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(t0.Add(time.Duration(id) * time.Second).UnixMicro()))
		b.Field(3).(*array.StringBuilder).Append(r[2].(string))
	}
	return b.NewRecordBatch()
}

// checkDelta compares lake.events with the Delta table's latest snapshot.
func (d *demo) checkDelta(src *delta.Table) error {
	snap, err := src.LatestSnapshot(d.ctx)
	if err != nil {
		return err
	}
	_, seq, err := snap.Scan(d.ctx, delta.ScanOptions{})
	if err != nil {
		return err
	}
	want := map[string]int{}
	n := 0
	for rec, err := range seq {
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			want[fmt.Sprint(rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i))]++
			n++
		}
		rec.Release()
	}
	tbl, err := d.cat.Load(d.ctx, table.Identifier{"lake", "events"})
	if err != nil {
		return err
	}
	_, rows, err := scan.Rows(d.ctx, tbl, scan.Options{Columns: []string{"id", "kind"}})
	if err != nil {
		return err
	}
	got := 0
	for rec, err := range rows {
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			k := fmt.Sprint(rec.Column(0).ValueStr(i), rec.Column(1).ValueStr(i))
			if want[k] == 0 {
				rec.Release()
				return fmt.Errorf("demo check failed: lake.events has row %s that the Delta table has not", k)
			}
			want[k]--
			got++
		}
		rec.Release()
	}
	if got != n {
		return fmt.Errorf("demo check failed: lake.events has %d rows, the Delta table %d", got, n)
	}
	d.say("ok: lake.events = the Delta table at version %d (%d rows)", snap.Version(), n)
	return nil
}
