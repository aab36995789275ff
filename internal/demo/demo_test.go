package demo

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

var update = flag.Bool("update", false, "write the demo's Delta table (deltadata/) again")

// TestPublicImports keeps the demo a program on floe's public API: it
// imports no floe package under internal/ and none that is to move there.
func TestPublicImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	public := map[string]bool{"": true, "catalog": true, "changelog": true, "expr": true, "pipeline": true, "tableops": true,
		"delta": true, "delta/deltasync": true}
	for _, imp := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(imp, "github.com/floedata/floe")
		if !ok {
			continue
		}
		if !public[strings.TrimPrefix(rel, "/")] {
			t.Errorf("the demo imports %s, which is not public API", imp)
		}
	}
}

// TestDeltaData reads the embedded Delta table step by step: version 0 with
// 1000 events, then version 1 with its change data. With -update it writes
// the table first (with deltatest, which stays out of the binary).
func TestDeltaData(t *testing.T) {
	if *update {
		writeDeltaData(t)
		t.Skip("wrote deltadata/: run the test again to check what the rebuilt binary embeds")
	}
	path := filepath.Join(t.TempDir(), "events")
	for _, c := range []struct {
		step    string
		version int64
		rows    int64
		changes string
	}{
		{"v0", 0, 1000, "1000 insert"},
		{"v1", 1, 999, "1 delete, 3 update_postimage, 3 update_preimage"},
	} {
		if err := addVersion(path, c.step); err != nil {
			t.Fatal(err)
		}
		tbl, err := delta.Open(t.Context(), path)
		if err != nil {
			t.Fatal(err)
		}
		snap, err := tbl.LatestSnapshot(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		_, seq, err := snap.Scan(t.Context(), delta.ScanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for rec, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			n += rec.NumRows()
			rec.Release()
		}
		if snap.Version() != c.version || n != c.rows {
			t.Errorf("%s: version %d with %d rows", c.step, snap.Version(), n)
		}
		_, changes, err := tbl.Changes(t.Context(), delta.ChangesOptions{Start: delta.AtVersion(c.version), End: delta.AtVersion(c.version)})
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for rec, err := range changes {
			if err != nil {
				t.Fatal(err)
			}
			ct := rec.Column(rec.Schema().FieldIndices("_change_type")[0]).(*array.String)
			for i := 0; i < ct.Len(); i++ {
				kinds[ct.Value(i)]++
			}
			rec.Release()
		}
		var got []string
		for _, k := range []string{"delete", "insert", "update_postimage", "update_preimage"} {
			if kinds[k] > 0 {
				got = append(got, fmt.Sprintf("%d %s", kinds[k], k))
			}
		}
		if strings.Join(got, ", ") != c.changes {
			t.Errorf("%s: changes %v, want %s", c.step, got, c.changes)
		}
	}
}

// writeDeltaData writes deltadata/v0 and deltadata/v1: the table as Spark
// would write it (an insert, then an UPDATE and a DELETE recorded in change
// files), split by the version that adds each file.
func writeDeltaData(t *testing.T) {
	dir := t.TempDir()
	w, err := deltatest.NewWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "kind", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	meta, err := deltatest.Metadata(schema, nil, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	var first []int64
	for id := int64(1); id <= 1000; id++ {
		first = append(first, id)
	}
	rec := events(schema, first, t0, func(int64) string { return "view" })
	add, err := w.WriteData("part-0.parquet", rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	add.ModificationTime = t0.UnixMilli()
	if _, err := w.Commit(delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 4}, meta, add,
		deltatest.CommitInfo{Timestamp: t0, Operation: "WRITE"}); err != nil {
		t.Fatal(err)
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
	next := events(schema, ids, t0, func(id int64) string {
		if id <= 3 {
			return "click"
		}
		return "view"
	})
	defer next.Release()
	add1, err := w.WriteData("part-1.parquet", next)
	if err != nil {
		t.Fatal(err)
	}
	add1.ModificationTime = t1.UnixMilli()
	cdcSchema := arrow.NewSchema(append(append([]arrow.Field{}, schema.Fields()...), arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String}), nil)
	cdc := changeRows(cdcSchema, t0, [][3]any{{1, "view", "update_preimage"}, {1, "click", "update_postimage"},
		{2, "view", "update_preimage"}, {2, "click", "update_postimage"}, {3, "view", "update_preimage"}, {3, "click", "update_postimage"},
		{10, "view", "delete"}})
	defer cdc.Release()
	cdcFile, err := w.WriteChangeData("_change_data/cdc-1.parquet", cdc)
	if err != nil {
		t.Fatal(err)
	}
	ts := t1.UnixMilli()
	rm := delta.RemoveFile{Path: add.Path, DeletionTimestamp: &ts, DataChange: true}
	if _, err := w.Commit(rm, add1, cdcFile, deltatest.CommitInfo{Timestamp: t1, Operation: "MERGE"}); err != nil {
		t.Fatal(err)
	}
	for step, files := range map[string][]string{
		"v0": {"_delta_log/00000000000000000000.json", "part-0.parquet"},
		"v1": {"_delta_log/00000000000000000001.json", "part-1.parquet", "_change_data/cdc-1.parquet"},
	} {
		if err := os.RemoveAll(filepath.Join("deltadata", step)); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join("deltadata", step, filepath.FromSlash(f))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(dst, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// events builds one event per id, of the kind kindOf gives it.
func events(schema *arrow.Schema, ids []int64, at time.Time, kindOf func(int64) string) arrow.RecordBatch {
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

// TestRun runs the whole demo, as floe demo does, and checks it reports
// every check passed.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo builds 100,000-row tables; skipped with -short")
	}
	var out bytes.Buffer
	if err := Run(t.Context(), &out, t.TempDir(), false); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"ok: shop.active_orders = filtered shop.orders", "ok: shop.active_orders_mor = filtered shop.orders_mor",
		"ok: lake.events = the Delta table at version 1 (999 rows)", "sync: nothing new in the Delta table", "ok: every check passed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in the demo's output:\n%s", want, out.String())
		}
	}
}
