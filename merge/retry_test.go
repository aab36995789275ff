package merge

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
)

// TestRetry makes another writer commit between a merge's first attempt
// and its commit, and checks what the retry does with the files the first
// attempt wrote: reused when the new table state leaves the inserts as
// they were, replaced (and removed) when it changes them, removed when the
// watermark moved. No file is ever left behind.
func TestRetry(t *testing.T) {
	for _, c := range []struct {
		name string
		// concurrent is the other writer's row and its watermark ("" = none)
		concurrentID int64
		watermark    string
		wantErr      error
		wantRows     string
		wantCounts   [3]int64 // updated, deleted, inserted
		reused       bool     // the first attempt's insert files are committed
	}{
		{name: "unrelated row", concurrentID: 99, wantRows: "(1,'u') (2,'b') (50,'new') (60,'new') (99,'theirs')",
			wantCounts: [3]int64{1, 0, 2}, reused: true},
		{name: "row a source row now matches", concurrentID: 50, wantRows: "(1,'u') (2,'b') (50,'new') (60,'new')",
			wantCounts: [3]int64{2, 0, 1}},
		{name: "watermark moved", concurrentID: 99, watermark: "moved", wantErr: commit.ErrWatermarkMoved,
			wantRows: "(1,'a') (2,'b') (99,'theirs')"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, props := range []iceberg.Properties{
				{"format-version": "2", "wm": "w0"},
				{"format-version": "3", "write.merge.mode": "merge-on-read", "wm": "w0"},
				{"format-version": "3", "floe.write.mode": "auto", "wm": "w0"},
				{"format-version": "2", "floe.write.mode": "auto", "floe.write.auto.rewrite-ratio": "1", "wm": "w0"},
			} {
				e := tabletest.New(t)
				if _, err := e.Create("t", "id long not null, v string", "", nil, props); err != nil {
					t.Fatal(err)
				}
				upsert := func(id int64, v string, opts ...Option) {
					rec := record(t, id, v, "INSERT")
					defer rec.Release()
					if _, err := Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, rec.Schema(), one(rec), []string{"id"}, opts...); err != nil {
						t.Fatal(err)
					}
				}
				upsert(1, "a")
				upsert(2, "b")
				var firstInserts []string
				testHookPrepared = func(attempt int, inserts []string) {
					if attempt != 1 {
						return
					}
					firstInserts = inserts
					var opts []Option
					if c.watermark != "" {
						opts = append(opts, WithCommitProperties(map[string]string{"wm": c.watermark}))
					}
					upsert(c.concurrentID, "theirs", opts...)
				}
				defer func() { testHookPrepared = nil }()
				stmt, err := expr.ParseMerge(`MERGE INTO ns.t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *`)
				if err != nil {
					t.Fatal(err)
				}
				src := sourceRecord(t, [][]any{{int64(1), "u"}, {int64(50), "new"}, {int64(60), "new"}})
				res, err := Merge(e.Ctx, e.Cat, stmt, Source{Schema: src.Schema(), Rows: one(src)},
					WithExpectedProperties(map[string]string{"wm": "w0"}), WithCommitProperties(map[string]string{"wm": "w1"}))
				src.Release()
				testHookPrepared = nil
				if c.wantErr != nil {
					if !errors.Is(err, c.wantErr) {
						t.Fatalf("%v: got %v, want %v", props, err, c.wantErr)
					}
				} else {
					if err != nil {
						t.Fatalf("%v: %v", props, err)
					}
					got := [3]int64{res.NumUpdatedRows, res.NumDeletedRows, res.NumInsertedRows}
					if got != c.wantCounts || res.Attempts != 2 {
						t.Errorf("%v: counts %v in %d attempts, want %v in 2", props, got, res.Attempts, c.wantCounts)
					}
				}
				tbl := e.Load("t")
				rows, err := e.Rows(tbl, scan.At{})
				if err != nil {
					t.Fatal(err)
				}
				if strings.Join(rows, " ") != c.wantRows {
					t.Errorf("%v: rows %v, want %s", props, rows, c.wantRows)
				}
				live := referenced(t, e, tbl)
				for _, f := range onDisk(t, tbl.Location()) {
					if !live[f] {
						t.Errorf("%v: %s is left behind: no snapshot references it", props, f)
					}
				}
				if len(firstInserts) == 0 {
					t.Fatalf("%v: the first attempt wrote no insert file", props)
				}
				for _, f := range firstInserts {
					if live[f] != c.reused {
						t.Errorf("%v: insert file %s of the first attempt: committed %t, want %t", props, f, live[f], c.reused)
					}
				}
			}
		})
	}
}

func record(t *testing.T, id int64, v, kind string) arrow.RecordBatch {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec, err := tabletest.Record(sch, [][]any{{id, v, kind}})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func sourceRecord(t *testing.T, data [][]any) arrow.RecordBatch {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec, err := tabletest.Record(sch, data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func one(rec arrow.RecordBatch) func(func(arrow.RecordBatch, error) bool) {
	return func(yield func(arrow.RecordBatch, error) bool) {
		rec.Retain()
		yield(rec, nil)
	}
}

// referenced returns the data and delete files of every snapshot.
func referenced(t *testing.T, e *tabletest.Env, tbl *table.Table) map[string]bool {
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		st, err := scan.LoadState(e.Ctx, fs, tbl.Metadata(), &s)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range append(append([]*scan.Entry{}, st.Data...), st.Deletes...) {
			out[d.Path()] = true
		}
	}
	return out
}

// onDisk lists the files under a table location, metadata aside.
func onDisk(t *testing.T, location string) []string {
	root := strings.TrimPrefix(location, "file://")
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.Contains(p, "/metadata/") {
			out = append(out, "file://"+p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
