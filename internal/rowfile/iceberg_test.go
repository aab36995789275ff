package rowfile

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"
	"github.com/floedata/floe/internal/testdir"
)

// icebergTables are the fixture tables: folder of the table and its
// metadata file.
var icebergTables = []struct {
	dir, metadata string
}{
	{"duckdb_lineitem_iceberg/data/persistent/iceberg/lineitem_iceberg", "metadata/v2.metadata.json"},
	{"duckdb_equality_deletes/data/persistent/equality_deletes/warehouse/mydb/mytable", "metadata/v7.metadata.json"},
	{"duckdb_equality_deletes/data/persistent/equality_deletes/warehouse/mydb/mytable_partitioned", "metadata/v6.metadata.json"},
	{"duckdb_hive_partitioned_table/data/persistent/hive_partitioned_table", "metadata/v4.metadata.json"},
	{"duckdb_legacy_bare_deletion_vector/data/persistent/legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector", "metadata/00002-legacy-bare-dv.metadata.json"},
}

// TestIcebergDataFiles reads every data file of the fixture tables (written
// by Spark, PyIceberg and DuckDB) into the Arrow schema iceberg-go derives
// from the table's current schema, with and without large types, and checks
// the rows against pqarrow's own reading of the file.
func TestIcebergDataFiles(t *testing.T) {
	root := testdir.Shared(t, "iceberg")
	files := 0
	for _, tc := range icebergTables {
		dir := filepath.Join(root, tc.dir)
		raw, err := os.ReadFile(filepath.Join(dir, tc.metadata))
		if err != nil {
			t.Fatal(err)
		}
		md, err := table.ParseMetadataBytes(raw)
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		var paths []string
		filepath.WalkDir(filepath.Join(dir, "data"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !strings.HasPrefix(d.Name(), "delete-") {
				paths = append(paths, p)
			}
			return nil
		})
		sort.Strings(paths)
		if len(paths) == 0 {
			t.Fatalf("%s: no data files", tc.dir)
		}
		for _, large := range []bool{false, true} {
			target, err := table.SchemaToArrowSchema(md.CurrentSchema(), nil, true, large)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range paths {
				files++
				name := strings.TrimPrefix(p, root+"/")
				if large {
					name += "/large-types"
				}
				t.Run(name, func(t *testing.T) {
					checkDataFile(t, p, target)
				})
			}
		}
	}
	t.Logf("read %d data files", files)
}

func checkDataFile(t *testing.T, path string, target *arrow.Schema) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	r, err := Open(context.Background(), path, ReadOptions{Target: target, BatchSize: 1000, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		if !rec.Schema().Equal(target) {
			t.Fatalf("batch schema %s\nwant %s", rec.Schema(), target)
		}
		for i, f := range target.Fields() {
			if !arrow.TypeEqual(rec.Column(i).DataType(), f.Type, arrow.CheckMetadata()) {
				t.Fatalf("column %s has type %s, want %s", f.Name, rec.Column(i).DataType(), f.Type)
			}
		}
		rec.Retain()
		got = append(got, rec)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, rec := range got {
			rec.Release()
		}
	}()

	// The independent reading: the whole (small) file through pqarrow.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want, err := pqarrow.ReadTable(context.Background(), f, parquet.NewReaderProperties(nil),
		pqarrow.ArrowReadProperties{}, memory.NewGoAllocator())
	if err != nil {
		t.Fatal(err)
	}
	defer want.Release()
	var rows int64
	for _, rec := range got {
		rows += rec.NumRows()
	}
	if rows != want.NumRows() || rows == 0 {
		t.Fatalf("read %d rows, the file has %d", rows, want.NumRows())
	}
	for i, fld := range target.Fields() {
		idx := want.Schema().FieldIndices(fld.Name)
		var wantCol []arrow.Array
		if len(idx) == 1 {
			wantCol = want.Column(idx[0]).Data().Chunks()
		}
		row, k, off := 0, 0, 0
		for _, rec := range got {
			col := rec.Column(i)
			for j := 0; j < col.Len(); j++ {
				if len(wantCol) == 0 {
					// Not stored in the file (identity partition columns of
					// registered files): NULL, as the column is optional.
					if !col.IsNull(j) {
						t.Fatalf("column %s row %d: %s, want NULL", fld.Name, row, col.ValueStr(j))
					}
				} else {
					for off >= wantCol[k].Len() {
						k, off = k+1, 0
					}
					if g, w := col.ValueStr(j), wantCol[k].ValueStr(off); g != w {
						t.Fatalf("column %s row %d: %s, want %s", fld.Name, row, g, w)
					}
					off++
				}
				row++
			}
		}
	}
}
