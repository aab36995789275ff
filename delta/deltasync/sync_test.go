package deltasync

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
)

var peopleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// peopleTable writes a partitioned table whose history exercises the
// sync: updates that change keys, swap keys and move partitions, deletes
// through deletion vectors (no change data files), copy-on-write rewrites
// without change data files, OPTIMIZE, and finally a new column.
func peopleTable(t testing.TB) *gen {
	g := newGen(t, peopleSchema, "region")
	// v1: three rows in two partitions.
	eu := g.data(row{"id": 1, "name": "a", "region": "eu"}, row{"id": 2, "name": "b", "region": "eu"})
	us := g.data(row{"id": 3, "name": "c", "region": "us"})
	g.commit("WRITE", actions(eu, us)...)
	// v2: UPDATE id = 10 WHERE id = 1 (the key changes).
	eu2 := g.data(row{"id": 10, "name": "a", "region": "eu"}, row{"id": 2, "name": "b", "region": "eu"})
	g.commit("UPDATE", actions(remove(eu[0]), eu2, g.cdc(
		row{"id": 1, "name": "a", "region": "eu", "_change_type": "update_preimage"},
		row{"id": 10, "name": "a", "region": "eu", "_change_type": "update_postimage"}))...)
	// v3: UPDATE region = 'eu' WHERE id = 3 (the row moves partition).
	eu3 := g.data(row{"id": 3, "name": "c", "region": "eu"})
	g.commit("UPDATE", actions(remove(us[0]), eu3, g.cdc(
		row{"id": 3, "name": "c", "region": "us", "_change_type": "update_preimage"},
		row{"id": 3, "name": "c", "region": "eu", "_change_type": "update_postimage"}))...)
	// v4: DELETE WHERE id = 2 with a deletion vector and no change data
	// file: the reader derives the delete from the vector.
	dvAdd, dvRemove := g.withDV(eu2[0], 1)
	g.commit("DELETE", dvRemove, dvAdd)
	// v5: two keys swap in one commit: 10 → 11, 3 → 10.
	eu5 := g.data(row{"id": 11, "name": "a", "region": "eu"}, row{"id": 10, "name": "c", "region": "eu"})
	g.commit("UPDATE", actions(remove(dvAdd), remove(eu3[0]), eu5, g.cdc(
		row{"id": 10, "name": "a", "region": "eu", "_change_type": "update_preimage"},
		row{"id": 11, "name": "a", "region": "eu", "_change_type": "update_postimage"},
		row{"id": 3, "name": "c", "region": "eu", "_change_type": "update_preimage"},
		row{"id": 10, "name": "c", "region": "eu", "_change_type": "update_postimage"}))...)
	// v6: a copy-on-write rewrite without change data files: every row
	// of the old file is deleted and every row of the new one inserted.
	eu6 := g.data(row{"id": 11, "name": "z", "region": "eu"}, row{"id": 10, "name": "c", "region": "eu"},
		row{"id": 12, "name": nil, "region": nil})
	g.commit("MERGE", actions(remove(eu5[0]), eu6)...)
	// v7: OPTIMIZE (dataChange false): no change rows.
	all := g.data(row{"id": 11, "name": "z", "region": "eu"}, row{"id": 10, "name": "c", "region": "eu"},
		row{"id": 12, "name": nil, "region": nil})
	var opt []any
	for _, a := range eu6 {
		r := remove(a)
		r.DataChange = false
		opt = append(opt, r)
	}
	for _, a := range all {
		a.DataChange = false
		opt = append(opt, a)
	}
	g.commit("OPTIMIZE", opt...)
	return g
}

// TestSyncGenerated syncs peopleTable version by version in every mode
// and compares the Iceberg table with the Delta snapshot after each run.
func TestSyncGenerated(t *testing.T) {
	for _, m := range syncModes {
		t.Run(m.name, func(t *testing.T) {
			g := peopleTable(t)
			src := g.open()
			cat := openCatalog(t)
			ident := table.Identifier{"db", "people"}
			opts := Options{EqualityColumns: []string{"id"}, PartitionBy: "region", Mode: m.mode, DeleteMode: m.del, FormatVersion: m.version,
				Start: delta.AtVersion(1), End: delta.AtVersion(1)}
			syncTo(t, cat, ident, src, opts, 1)
			opts.Start = delta.Bound{}
			for v := int64(2); v <= 7; v++ {
				opts.End = delta.AtVersion(v)
				res := syncTo(t, cat, ident, src, opts, v)
				if len(res.Batches) != 1 {
					t.Fatalf("version %d: %d batches", v, len(res.Batches))
				}
				b := res.Batches[0]
				if v == 7 && (b.ChangeRows != 0 || b.SnapshotID != 0) {
					t.Fatalf("OPTIMIZE committed rows: %+v", b)
				}
				if v < 7 && (b.ChangeRows == 0 || b.SnapshotID == 0) {
					t.Fatalf("version %d committed no rows: %+v", v, b)
				}
				if v < 7 && b.Mode != m.label {
					t.Fatalf("version %d applied in mode %q, want %q", v, b.Mode, m.label)
				}
			}
		})
	}
}

// syncTo runs Sync up to version v and checks the table against the Delta
// snapshot at v and the watermark.
func syncTo(t *testing.T, cat *catalog.Catalog, ident table.Identifier, src *delta.Table, opts Options, v int64) *Result {
	t.Helper()
	opts.End = delta.AtVersion(v)
	res, err := Sync(context.Background(), cat, src, ident, opts)
	if err != nil {
		t.Fatalf("sync to version %d: %v", v, err)
	}
	if res.Watermark != v {
		t.Fatalf("sync to version %d: watermark %d", v, res.Watermark)
	}
	checkEqual(t, cat, ident, src, v)
	return res
}

func checkEqual(t *testing.T, cat *catalog.Catalog, ident table.Identifier, src *delta.Table, v int64) {
	t.Helper()
	want, names := deltaRows(t, src, v)
	got := icebergRows(t, cat, ident, names)
	if d := diffRows(got, want); d != "" {
		t.Fatalf("Iceberg table after version %d differs from the Delta snapshot:\n%s", v, d)
	}
	if w := watermark(t, cat, ident); w != strconv.FormatInt(v, 10) {
		t.Fatalf("watermark %q, want %d", w, v)
	}
}

// TestSyncAllAtOnce applies the whole history in one run: one commit, or
// one per MaxVersions versions, each with its watermark.
func TestSyncAllAtOnce(t *testing.T) {
	g := peopleTable(t)
	src := g.open()
	for _, tc := range []struct {
		max     int64
		batches [][2]int64
	}{
		{0, [][2]int64{{2, 7}}},
		{1, [][2]int64{{2, 2}, {3, 3}, {4, 4}, {5, 5}, {6, 6}, {7, 7}}},
		{4, [][2]int64{{2, 5}, {6, 7}}},
	} {
		t.Run("max="+strconv.FormatInt(tc.max, 10), func(t *testing.T) {
			cat := openCatalog(t)
			ident := table.Identifier{"db", "people"}
			syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 1)
			res := syncTo(t, cat, ident, src, Options{MaxVersions: tc.max}, 7)
			if len(res.Batches) != len(tc.batches) {
				t.Fatalf("batches %+v, want %v", res.Batches, tc.batches)
			}
			for i, b := range res.Batches {
				if b.FromVersion != tc.batches[i][0] || b.ToVersion != tc.batches[i][1] {
					t.Fatalf("batch %d: %d..%d, want %v", i, b.FromVersion, b.ToVersion, tc.batches[i])
				}
			}
		})
	}
}

// TestSyncSchemaEvolution adds a column in Delta: the sync fails naming it
// and commits nothing, then succeeds with EvolveSchema; a dropped column is
// refused even with EvolveSchema.
func TestSyncSchemaEvolution(t *testing.T) {
	g := peopleTable(t)
	wide := arrow.NewSchema(append(peopleSchema.Fields(), arrow.Field{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	g.setSchema(wide)                                                                                  // v8
	g.commit("WRITE", actions(g.data(row{"id": 20, "name": "n", "region": "eu", "note": "hello"}))...) // v9
	src := g.open()
	ctx := context.Background()
	cat := openCatalog(t)
	ident := table.Identifier{"db", "people"}
	syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(7)}, 7)
	before := tableState(t, cat, ident)
	_, err := Sync(ctx, cat, src, ident, Options{})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `column "note": new in Delta (string)`) || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("got %v, want ErrSchemaMismatch naming note at version 9", err)
	}
	if after := tableState(t, cat, ident); after != before {
		t.Fatal("a refused schema change committed")
	}
	// One version at a time: version 8 (only the metaData) evolves the
	// schema and moves the watermark, version 9 writes the new column.
	res, err := Sync(ctx, cat, src, ident, Options{EvolveSchema: true, MaxVersions: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.AddedColumns) != 1 || res.AddedColumns[0] != "note" || len(res.Batches) != 2 {
		t.Fatalf("%+v", res)
	}
	checkEqual(t, cat, ident, src, 9)
	tbl, _ := cat.Load(ctx, ident)
	if f, ok := tbl.Schema().FindFieldByName("note"); !ok || f.Required {
		t.Fatalf("note column: %+v", f)
	}

	// Dropping a column is never automatic.
	g.setSchema(peopleSchema) // v10
	src = g.open()
	before = tableState(t, cat, ident)
	_, err = Sync(ctx, cat, src, ident, Options{EvolveSchema: true})
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `column "note": in the Iceberg table (string), not in Delta`) {
		t.Fatalf("got %v, want ErrSchemaMismatch for the dropped column", err)
	}
	if after := tableState(t, cat, ident); after != before {
		t.Fatal("a refused schema change committed")
	}
}
