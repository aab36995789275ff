package write_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

type env struct {
	t   *testing.T
	ctx context.Context
	cat *catalog.Catalog
}

func newEnv(t *testing.T) *env {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, true); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, ctx: ctx, cat: cat}
}

func (e *env) create(name, schema, partition string, props iceberg.Properties) *table.Table {
	sc, err := ddl.ParseSchema(schema, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	spec, err := ddl.ParsePartitionSpec(partition, sc)
	if err != nil {
		e.t.Fatal(err)
	}
	tbl, err := e.cat.Iceberg().CreateTable(e.ctx, table.Identifier{"ns", name}, sc, icecat.WithPartitionSpec(&spec), icecat.WithProperties(props))
	if err != nil {
		e.t.Fatal(err)
	}
	return tbl
}

func (e *env) arrowSchema(tbl *table.Table) *arrow.Schema {
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		e.t.Fatal(err)
	}
	return as
}

func (e *env) apply(tbl *table.Table, req write.Request) *table.Table {
	e.t.Helper()
	req.Table = tbl
	res, err := write.Prepare(e.ctx, req)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := res.Commit(e.ctx, nil, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func (e *env) rows(tbl *table.Table) string {
	e.t.Helper()
	_, seq, err := scan.Rows(e.ctx, tbl, scan.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	got, err := arrowtest.Collect(seq)
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Join(got, " ")
}

// matchID touches rows whose id column (column 0) satisfies f.
func matchID(f func(int64) bool) func(context.Context, iceberg.DataFile, scan.Batch) ([]bool, error) {
	return func(_ context.Context, _ iceberg.DataFile, b scan.Batch) ([]bool, error) {
		ids := b.Rec.Column(0).(*array.Int64)
		out := make([]bool, ids.Len())
		for i := range out {
			out[i] = f(ids.Value(i))
		}
		return out, nil
	}
}

func TestDeleteUpdateModes(t *testing.T) {
	for _, fv := range []string{"2", "3"} {
		for _, mode := range []write.Mode{write.CopyOnWrite, write.MergeOnRead} {
			for _, part := range []string{"", "bucket(2, id)"} {
				name := fmt.Sprintf("v%s_%s_%t", fv, mode, part != "")
				t.Run(name, func(t *testing.T) {
					e := newEnv(t)
					tbl := e.create("t", "id long not null, data string", part, iceberg.Properties{"format-version": fv})
					as := e.arrowSchema(tbl)
					rec := arrowtest.Record(as, [][]any{{1, "a"}, {2, "b"}, {3, "c"}, {4, "d"}})
					defer rec.Release()
					tbl = e.apply(tbl, write.Request{Inserts: arrowtest.Seq(rec), Mode: mode})
					if got, want := e.rows(tbl), "(1,'a') (2,'b') (3,'c') (4,'d')"; got != want {
						t.Fatalf("after append: %s want %s", got, want)
					}
					// delete id 2
					tbl = e.apply(tbl, write.Request{Mode: mode, Visitor: &write.Visitor{MatchColumns: []string{"id"}, Match: matchID(func(v int64) bool { return v == 2 })}})
					if got, want := e.rows(tbl), "(1,'a') (3,'c') (4,'d')"; got != want {
						t.Fatalf("after delete: %s want %s", got, want)
					}
					// delete id 3 (a second delete on the same file: rows deleted
					// before must not come back)
					tbl = e.apply(tbl, write.Request{Mode: mode, Visitor: &write.Visitor{MatchColumns: []string{"id"}, Match: matchID(func(v int64) bool { return v == 3 })}})
					if got, want := e.rows(tbl), "(1,'a') (4,'d')"; got != want {
						t.Fatalf("after second delete: %s want %s", got, want)
					}
					// update id 4: data = 'z'
					tbl = e.apply(tbl, write.Request{Mode: mode, Visitor: &write.Visitor{
						MatchColumns: []string{"id"},
						Match:        matchID(func(v int64) bool { return v == 4 }),
						Rewrite: func(_ context.Context, _ iceberg.DataFile, b scan.Batch, touched []bool) ([]bool, arrow.RecordBatch, error) {
							keep := make([]bool, len(touched))
							var add [][]any
							ids := b.Rec.Column(0).(*array.Int64)
							for i, tch := range touched {
								keep[i] = !tch
								if tch {
									add = append(add, []any{ids.Value(i), "z"})
								}
							}
							return keep, arrowtest.Record(b.Rec.Schema(), add), nil
						},
					}})
					if got, want := e.rows(tbl), "(1,'a') (4,'z')"; got != want {
						t.Fatalf("after update: %s want %s", got, want)
					}
					snaps := tbl.Metadata().Snapshots()
					if len(snaps) != 4 {
						t.Errorf("want 4 snapshots (one per change), got %d", len(snaps))
					}
					if mode == write.MergeOnRead {
						s := tbl.CurrentSnapshot()
						if s.Summary == nil || s.Summary.Properties["total-delete-files"] == "0" {
							t.Errorf("merge-on-read should leave delete files: %v", s.Summary)
						}
					}
				})
			}
		}
	}
}

// TestPositionDeletesManyRows deletes more positions from one file than a
// position delete file is written at a time (it writes in batches), and
// checks exactly the deleted rows are gone.
func TestPositionDeletesManyRows(t *testing.T) {
	const n = 200_000
	e := newEnv(t)
	tbl := e.create("t", "id long not null", "", iceberg.Properties{"format-version": "2"})
	as := e.arrowSchema(tbl)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range int64(n) {
		b.Append(i)
	}
	ids := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(as, []arrow.Array{ids}, n)
	ids.Release()
	defer rec.Release()
	tbl = e.apply(tbl, write.Request{Inserts: arrowtest.Seq(rec), Mode: write.MergeOnRead})
	deleted := func(v int64) bool { return v%3 != 1 } // 133,333 rows, every file batch
	tbl = e.apply(tbl, write.Request{Mode: write.MergeOnRead, Visitor: &write.Visitor{MatchColumns: []string{"id"}, Match: matchID(deleted)}})
	if got := tbl.CurrentSnapshot().Summary.Properties["added-position-deletes"]; got != "133333" {
		t.Errorf("added-position-deletes = %s, want 133333", got)
	}
	_, seq, err := scan.Rows(e.ctx, tbl, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var live []int64
	for r, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, r.Column(0).(*array.Int64).Int64Values()...)
		r.Release()
	}
	slices.Sort(live)
	var want []int64
	for i := range int64(n) {
		if !deleted(i) {
			want = append(want, i)
		}
	}
	if !slices.Equal(live, want) {
		t.Errorf("%d live rows after the delete, want %d (ids 1, 4, 7, ...)", len(live), len(want))
	}
	checkPosDeleteFiles(t, tbl, 133333)
}

// checkPosDeleteFiles reads the position delete files under the table's
// location as plain Parquet, as another engine would: file_path must be a
// string column (not a dictionary type) naming an existing data file of the
// table on every row, pos ascending; n rows in all.
func checkPosDeleteFiles(t *testing.T, tbl *table.Table, n int64) {
	t.Helper()
	root := strings.TrimPrefix(tbl.Location(), "file://")
	var total int64
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, "-pos.parquet") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		pr, err := file.NewParquetReader(f)
		if err != nil {
			return err
		}
		defer pr.Close()
		fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		got, err := fr.ReadTable(context.Background())
		if err != nil {
			return err
		}
		defer got.Release()
		if ty := got.Schema().Field(0).Type; got.Schema().Field(0).Name != "file_path" || !arrow.TypeEqual(ty, arrow.BinaryTypes.String) {
			t.Errorf("%s: column 0 is %s %s, want file_path string", path, got.Schema().Field(0).Name, ty)
			return nil
		}
		last := int64(-1)
		for _, c := range got.Column(0).Data().Chunks() {
			for i := range c.Len() {
				p := c.(*array.String).Value(i)
				if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil || !strings.Contains(p, "/data/") {
					t.Errorf("%s: file_path %q is not a data file of the table (%v)", path, p, err)
					return nil
				}
			}
		}
		for _, c := range got.Column(1).Data().Chunks() {
			for _, v := range c.(*array.Int64).Int64Values() {
				if v <= last {
					t.Errorf("%s: pos %d after %d, want ascending", path, v, last)
					return nil
				}
				last = v
			}
		}
		total += got.NumRows()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if total != n {
		t.Errorf("position delete files hold %d rows, want %d", total, n)
	}
}
