package deltasync

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/tableops"
)

// TestSyncCorruptSource damages the Delta log after a first sync: the next
// run fails with the reader's error and commits nothing.
func TestSyncCorruptSource(t *testing.T) {
	logPath := func(g *gen, v int) string {
		return filepath.Join(g.w.Dir, "_delta_log", fmt.Sprintf("%020d.json", v))
	}
	tests := []struct {
		name    string
		damage  func(t *testing.T, g *gen)
		want    error
		mention []string
	}{
		{
			name: "truncated JSON line",
			damage: func(t *testing.T, g *gen) {
				g.commit("WRITE", actions(g.data(row{"id": 30, "name": "x", "region": "eu"}))...)
				path := logPath(g, 8)
				data, _ := os.ReadFile(path)
				if err := os.WriteFile(path, data[:len(data)-25], 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want:    delta.ErrCorruptLog,
			mention: []string{"00000000000000000008.json", "line"},
		},
		{
			name: "missing data file",
			damage: func(t *testing.T, g *gen) {
				adds := g.data(row{"id": 30, "name": "x", "region": "eu"})
				g.commit("WRITE", actions(adds)...)
				if err := os.Remove(filepath.Join(g.w.Dir, filepath.FromSlash(adds[0].Path))); err != nil {
					t.Fatal(err)
				}
			},
			want:    delta.ErrFileNotFound,
			mention: []string{"part-"},
		},
		{
			name: "unknown reader feature",
			damage: func(t *testing.T, g *gen) {
				p := protocolDV
				p.ReaderFeatures = []string{"deletionVectors", "fancyNewThing"}
				g.commit("UPGRADE PROTOCOL", p)
			},
			want:    delta.ErrUnsupportedFeature,
			mention: []string{"fancyNewThing"},
		},
		{
			name: "missing checkpoint part after log cleanup",
			damage: func(t *testing.T, g *gen) {
				names, err := g.w.Checkpoint(deltatest.MultiPart, 2)
				if err != nil {
					t.Fatal(err)
				}
				g.commit("WRITE", actions(g.data(row{"id": 30, "name": "x", "region": "eu"}))...)
				for v := 0; v < 7; v++ {
					if err := os.Remove(logPath(g, v)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Remove(filepath.Join(g.w.Dir, "_delta_log", names[1])); err != nil {
					t.Fatal(err)
				}
			},
			want:    delta.ErrVersionNotFound,
			mention: []string{"cleaned up"},
		},
		{
			name: "change data disabled",
			damage: func(t *testing.T, g *gen) {
				md, _ := deltatest.Metadata(peopleSchema, []string{"region"}, map[string]string{"delta.enableChangeDataFeed": "false"})
				g.commit("SET TBLPROPERTIES", md)
				g.commit("WRITE", actions(g.data(row{"id": 30, "name": "x", "region": "eu"}))...)
			},
			want:    delta.ErrChangeDataNotRecorded,
			mention: []string{"version 8"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := peopleTable(t)
			cat := openCatalog(t)
			ident := table.Identifier{"db", "people"}
			syncTo(t, cat, ident, g.open(), Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 7)
			tc.damage(t, g)
			before := tableState(t, cat, ident)
			src, err := delta.Open(context.Background(), g.w.Dir)
			if err == nil {
				_, err = Sync(context.Background(), cat, src, ident, Options{})
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if after := tableState(t, cat, ident); after != before {
				t.Fatalf("a failed run committed (metadata %s, was %s)", after, before)
			}
			if w := watermark(t, cat, ident); w != "7" {
				t.Fatalf("watermark %q", w)
			}
		})
	}
}

// TestSyncSharedCorrupt syncs damaged copies of shared fixtures (the
// damages of package delta's corrupt-log tests) and checks nothing is
// committed.
func TestSyncSharedCorrupt(t *testing.T) {
	ctx := context.Background()
	// A fixture without Change Data Feed: the snapshot migrates, the
	// changes after it are refused.
	src, err := delta.Open(ctx, testdir.Shared(t, "delta", "deltars-simple_table"))
	if err != nil {
		t.Fatal(err)
	}
	cat := openCatalog(t)
	ident := table.Identifier{"db", "simple"}
	if _, err := Sync(ctx, cat, src, ident, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(0), End: delta.AtVersion(0)}); err != nil {
		t.Fatal(err)
	}
	checkEqual(t, cat, ident, src, 0)
	before := tableState(t, cat, ident)
	_, err = Sync(ctx, cat, src, ident, Options{})
	if !errors.Is(err, delta.ErrChangeDataNotRecorded) || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("got %v, want ErrChangeDataNotRecorded at version 1", err)
	}
	if tableState(t, cat, ident) != before {
		t.Fatal("a refused run committed")
	}

	// A truncated commit in the range of a later run.
	dir := copyTree(t, testdir.Shared(t, "delta", "deltars-cdf-table"))
	src, err = delta.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	cat = openCatalog(t)
	ident = table.Identifier{"db", "cdf"}
	if _, err := Sync(ctx, cat, src, ident, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(0), End: delta.AtVersion(1)}); err != nil {
		t.Fatal(err)
	}
	checkEqual(t, cat, ident, src, 1)
	path := filepath.Join(dir, "_delta_log", "00000000000000000002.json")
	data, _ := os.ReadFile(path)
	if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	before = tableState(t, cat, ident)
	_, err = Sync(ctx, cat, src, ident, Options{})
	if !errors.Is(err, delta.ErrCorruptLog) || !strings.Contains(err.Error(), "00000000000000000002.json") {
		t.Fatalf("got %v, want ErrCorruptLog naming commit 2", err)
	}
	if tableState(t, cat, ident) != before {
		t.Fatal("a refused run committed")
	}
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSyncRefusals covers the options and table states a sync refuses,
// each with nothing committed.
func TestSyncRefusals(t *testing.T) {
	ctx := context.Background()
	g := peopleTable(t)
	src := g.open()
	ident := table.Identifier{"db", "people"}

	t.Run("no equality columns for a new table", func(t *testing.T) {
		cat := openCatalog(t)
		_, err := Sync(ctx, cat, src, ident, Options{})
		if !errors.Is(err, ErrNoEqualityColumns) {
			t.Fatalf("got %v", err)
		}
		if _, err := cat.Load(ctx, ident); !errors.Is(err, catalog.ErrNoSuchNamespace) {
			t.Fatalf("the refused run created something: %v", err)
		}
	})
	t.Run("equality column not in Delta", func(t *testing.T) {
		cat := openCatalog(t)
		_, err := Sync(ctx, cat, src, ident, Options{EqualityColumns: []string{"ID"}})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), `"ID"`) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("existing table without identifier fields", func(t *testing.T) {
		cat := openCatalog(t)
		createTable(t, cat, ident, "id long, name string, region string", nil)
		_, err := Sync(ctx, cat, src, ident, Options{})
		if !errors.Is(err, ErrNoEqualityColumns) {
			t.Fatalf("got %v", err)
		}
		// With equality columns named, a pre-created empty table is
		// filled (its nullable id is fine: NULL keys are refused row by
		// row).
		syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}}, 7)
	})
	t.Run("table with rows and no watermark", func(t *testing.T) {
		cat := openCatalog(t)
		createTable(t, cat, ident, "id long not null, name string, region string", []string{"id"})
		rec := record(t, "id long not null, name string, region string", `[{"id": 99, "name": "old", "region": "x"}]`, cat, ident)
		if _, err := tableops.Append(ctx, tableops.Target{Catalog: cat, Ident: ident}, func() iter.Seq2[arrow.RecordBatch, error] {
			return func(yield func(arrow.RecordBatch, error) bool) { rec.Retain(); yield(rec, nil) }
		}); err != nil {
			t.Fatal(err)
		}
		before := tableState(t, cat, ident)
		_, err := Sync(ctx, cat, src, ident, Options{})
		if !errors.Is(err, ErrTargetNotEmpty) {
			t.Fatalf("got %v", err)
		}
		if tableState(t, cat, ident) != before {
			t.Fatal("a refused run committed")
		}
	})
	t.Run("schema differs at the first run", func(t *testing.T) {
		cat := openCatalog(t)
		createTable(t, cat, ident, "id int not null, name string not null, extra string", []string{"id"})
		before := tableState(t, cat, ident)
		_, err := Sync(ctx, cat, src, ident, Options{EvolveSchema: true})
		if !errors.Is(err, ErrSchemaMismatch) {
			t.Fatalf("got %v", err)
		}
		for _, m := range []string{`column "id": type long in Delta, int in the Iceberg table`,
			`column "name": nullable in Delta, required in the Iceberg table`,
			`column "region": new in Delta (string)`, `column "extra": in the Iceberg table (string), not in Delta`} {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("error does not list %s:\n%v", m, err)
			}
		}
		if tableState(t, cat, ident) != before {
			t.Fatal("a refused run committed")
		}
	})
	t.Run("extra Iceberg column", func(t *testing.T) {
		cat := openCatalog(t)
		createTable(t, cat, ident, "id long not null, name string, region string, note string", []string{"id"})
		_, err := Sync(ctx, cat, src, ident, Options{})
		if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), `"note"`) {
			t.Fatalf("an extra Iceberg column: got %v", err)
		}
	})
	t.Run("wider Iceberg types are accepted", func(t *testing.T) {
		// deltars-cdf-table has id integer; the Iceberg table stores long.
		fx, err := delta.Open(ctx, testdir.Shared(t, "delta", "deltars-cdf-table"))
		if err != nil {
			t.Fatal(err)
		}
		cat := openCatalog(t)
		createTable(t, cat, ident, "id long not null, name string, birthday date", []string{"id"})
		syncTo(t, cat, ident, fx, Options{Start: delta.AtVersion(0)}, 3)
	})
	t.Run("another Delta table", func(t *testing.T) {
		cat := openCatalog(t)
		syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 3)
		other := peopleTable(t).open()
		before := tableState(t, cat, ident)
		_, err := Sync(ctx, cat, other, ident, Options{})
		if !errors.Is(err, ErrSourceMismatch) || !strings.Contains(err.Error(), other.Location()) {
			t.Fatalf("got %v", err)
		}
		if tableState(t, cat, ident) != before {
			t.Fatal("a refused run committed")
		}
	})
	t.Run("Delta table recreated at the same place", func(t *testing.T) {
		g2 := peopleTable(t)
		cat := openCatalog(t)
		syncTo(t, cat, ident, g2.open(), Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 7)
		// Recreate: a new log with another table id and more versions.
		if err := os.RemoveAll(filepath.Join(g2.w.Dir, "_delta_log")); err != nil {
			t.Fatal(err)
		}
		w, _ := deltatest.NewWriter(g2.w.Dir)
		md, _ := deltatest.Metadata(peopleSchema, []string{"region"}, map[string]string{"delta.enableChangeDataFeed": "true"})
		md.ID = "00000000-0000-0000-0000-00000000beef"
		for v := 0; v < 9; v++ {
			acts := []any{deltatest.CommitInfo{Timestamp: time.Now(), Operation: "WRITE"}}
			if v == 0 {
				acts = append(acts, protocolDV, md)
			}
			if _, err := w.Commit(acts...); err != nil {
				t.Fatal(err)
			}
		}
		before := tableState(t, cat, ident)
		_, err := Sync(ctx, cat, g2.open(), ident, Options{})
		if !errors.Is(err, ErrSourceMismatch) || !strings.Contains(err.Error(), "recreated") {
			t.Fatalf("got %v", err)
		}
		if tableState(t, cat, ident) != before {
			t.Fatal("a refused run committed")
		}
	})
	t.Run("negative MaxVersions", func(t *testing.T) {
		_, err := Sync(ctx, openCatalog(t), src, ident, Options{MaxVersions: -1})
		if !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("end before start", func(t *testing.T) {
		_, err := Sync(ctx, openCatalog(t), src, ident, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(5), End: delta.AtVersion(3)})
		if !errors.Is(err, delta.ErrInvalidRange) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("start after the latest version", func(t *testing.T) {
		_, err := Sync(ctx, openCatalog(t), src, ident, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(8)})
		if !errors.Is(err, delta.ErrVersionNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestSyncBadKeys refuses NULL and duplicate keys, in the migrated
// snapshot and in the changes of one commit.
func TestSyncBadKeys(t *testing.T) {
	ctx := context.Background()
	ident := table.Identifier{"db", "people"}
	t.Run("NULL key in the snapshot", func(t *testing.T) {
		g := newGen(t, peopleSchema, "")
		g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a"}, row{"id": nil, "name": "b"}))...)
		_, err := Sync(ctx, openCatalog(t), g.open(), ident, Options{EqualityColumns: []string{"id"}})
		if !errors.Is(err, ErrNullKey) || !strings.Contains(err.Error(), `"id"`) || !strings.Contains(err.Error(), "version 1") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("duplicate key in the snapshot", func(t *testing.T) {
		g := newGen(t, peopleSchema, "")
		g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a"}))...)
		g.commit("WRITE", actions(g.data(row{"id": 1, "name": "b"}))...)
		cat := openCatalog(t)
		_, err := Sync(ctx, cat, g.open(), ident, Options{EqualityColumns: []string{"id"}})
		if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), "id = 1") {
			t.Fatalf("got %v", err)
		}
		if w := watermark(t, cat, ident); w != "" {
			t.Fatalf("watermark %q after a refused migration", w)
		}
		// Keyed on both columns, the rows are distinct.
		cat = openCatalog(t)
		syncTo(t, cat, ident, g.open(), Options{EqualityColumns: []string{"id", "name"}}, 2)
	})
	t.Run("NULL and duplicate keys in changes", func(t *testing.T) {
		g := newGen(t, peopleSchema, "")
		g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a"}))...)                            // v1
		g.commit("WRITE", actions(g.data(row{"id": 2, "name": "a"}, row{"id": 2, "name": "b"}))...) // v2
		src := g.open()
		cat := openCatalog(t)
		syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 1)
		before := tableState(t, cat, ident)
		_, err := Sync(ctx, cat, src, ident, Options{})
		if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), "version 2") || !strings.Contains(err.Error(), "id = 2") {
			t.Fatalf("got %v", err)
		}
		if tableState(t, cat, ident) != before {
			t.Fatal("a refused run committed")
		}

		g = newGen(t, peopleSchema, "")
		g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a"}))...)   // v1
		g.commit("WRITE", actions(g.data(row{"id": nil, "name": "x"}))...) // v2
		src = g.open()
		cat = openCatalog(t)
		syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1)}, 1)
		_, err = Sync(ctx, cat, src, ident, Options{})
		if !errors.Is(err, ErrNullKey) || !strings.Contains(err.Error(), "version 2 (insert row)") {
			t.Fatalf("got %v", err)
		}
	})
}

// TestSyncTimestampBounds resolves start and end timestamps to versions
// (first commit at or after the start, last at or before the end).
func TestSyncTimestampBounds(t *testing.T) {
	ctx := context.Background()
	g := peopleTable(t) // version v committed at 12:00 + (v+1) minutes
	src := g.open()
	at := func(v int, sec int) time.Time {
		return time.Date(2024, 5, 1, 12, v+1, sec, 0, time.UTC)
	}
	cat := openCatalog(t)
	ident := table.Identifier{"db", "people"}
	res, err := Sync(ctx, cat, src, ident, Options{EqualityColumns: []string{"id"},
		Start: delta.AtTimestamp(at(1, 30)), End: delta.AtTimestamp(at(4, 59))})
	if err != nil {
		t.Fatal(err)
	}
	if res.MigratedVersion != 2 || res.Watermark != 4 {
		t.Fatalf("start 1:30 after version 1 should migrate version 2 and end at 4: %+v", res)
	}
	checkEqual(t, cat, ident, src, 4)
	res, err = Sync(ctx, cat, src, ident, Options{End: delta.AtTimestamp(at(6, 0))})
	if err != nil || res.Watermark != 6 {
		t.Fatalf("%+v %v", res, err)
	}
	checkEqual(t, cat, ident, src, 6)
	_, err = Sync(ctx, openCatalog(t), src, ident, Options{EqualityColumns: []string{"id"}, Start: delta.AtTimestamp(at(9, 0))})
	if !errors.Is(err, delta.ErrTimestampOutOfRange) {
		t.Fatalf("start after the last commit: %v", err)
	}
}

func createTable(t *testing.T, cat *catalog.Catalog, ident table.Identifier, cols string, ids []string) {
	t.Helper()
	ctx := context.Background()
	sc, err := ddl.ParseSchema(cols, ids)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.EnsureNamespace(ctx, ident[:1]); err != nil {
		t.Fatal(err)
	}
	spec, _ := ddl.ParsePartitionSpec("", sc)
	if _, err := tableops.Create(ctx, cat, ident, sc, spec, nil); err != nil {
		t.Fatal(err)
	}
}

// record builds a batch in the Arrow schema of the table from JSON rows.
func record(t *testing.T, _ string, js string, cat *catalog.Catalog, ident table.Identifier) arrow.RecordBatch {
	t.Helper()
	tbl, err := cat.Load(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Release)
	return rec
}
