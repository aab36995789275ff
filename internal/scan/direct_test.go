package scan_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// readFiles reads every live data file of tbl's current snapshot through
// Reader.Live (all columns, and the projection cols), direct reads on or
// off, and returns the batches and positions per file.
func readFiles(t *testing.T, tbl *table.Table, direct bool, cols []string) [][]scan.Batch {
	t.Helper()
	defer scan.SetDirect(scan.SetDirect(direct))
	ctx := context.Background()
	r, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := scan.LoadState(ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	var out [][]scan.Batch
	for _, e := range st.Data {
		_, seq, err := r.Live(ctx, e.File, scan.Deletes{}, cols)
		if err != nil {
			t.Fatal(err)
		}
		var bs []scan.Batch
		for b, err := range seq {
			if err != nil {
				t.Fatalf("read %s (direct %t): %v", e.Path(), direct, err)
			}
			bs = append(bs, b)
		}
		out = append(out, bs)
	}
	return out
}

// sameBatches fails unless both reads gave the same schemas, rows and
// positions.
func sameBatches(t *testing.T, what string, got, want [][]scan.Batch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d files read directly, %d through iceberg-go", what, len(got), len(want))
	}
	for f := range want {
		if len(got[f]) != len(want[f]) {
			t.Fatalf("%s: file %d: %d batches directly, %d through iceberg-go", what, f, len(got[f]), len(want[f]))
		}
		for i := range want[f] {
			g, w := got[f][i], want[f][i]
			if !g.Rec.Schema().Equal(w.Rec.Schema()) {
				t.Fatalf("%s: file %d batch %d: schema\n%s\nthrough iceberg-go\n%s", what, f, i, g.Rec.Schema(), w.Rec.Schema())
			}
			if !array.RecordEqual(g.Rec, w.Rec) {
				t.Fatalf("%s: file %d batch %d: rows\n%v\nthrough iceberg-go\n%v", what, f, i, g.Rec, w.Rec)
			}
			if fmt.Sprint(g.Pos) != fmt.Sprint(w.Pos) {
				t.Fatalf("%s: file %d batch %d: positions differ", what, f, i)
			}
		}
	}
}

func release(bss [][]scan.Batch) {
	for _, bs := range bss {
		for _, b := range bs {
			b.Release()
		}
	}
}

// TestDirectReadMatchesIceberg checks floe's direct Parquet read against
// iceberg-go's reader: the same schema, rows (NULLs included) and
// positions for files of many column types, whole and projected (columns
// reordered); and that after schema evolution (a renamed column, a
// widened int and float, an added column the old files lack) every file is still
// read directly, as iceberg-go reads it.
func TestDirectReadMatchesIceberg(t *testing.T) {
	e := tabletest.New(t)
	tbl, err := e.Create("t", "id long not null, name string, amount decimal(10,2), ts timestamptz, day date, x double, n int, ok boolean, raw binary, f float", "", nil,
		iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := range 3000 {
		row := []any{int64(i), fmt.Sprintf("name%d", i%17), fmt.Sprintf("%d.%02d", i, i%100), "2024-01-02T03:04:05Z", "2024-03-04", float64(i) / 3, i % 1000, i%3 == 0, "YWJj", float32(i) / 7}
		if i%11 == 0 {
			for c := 1; c < len(row); c++ {
				row[c] = nil
			}
		}
		data = append(data, row)
	}
	for part := range 2 {
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), data[part*1500:(part+1)*1500])); err != nil {
			t.Fatal(err)
		}
	}
	tbl = e.Load("t")
	for _, cols := range [][]string{nil, {"x", "id", "name"}, {"ts"}} {
		before := scan.DirectReads()
		got := readFiles(t, tbl, true, cols)
		if scan.DirectReads()-before != 2 {
			t.Fatalf("columns %v: %d of 2 files read directly", cols, scan.DirectReads()-before)
		}
		want := readFiles(t, tbl, false, cols)
		sameBatches(t, fmt.Sprint("columns ", cols), got, want)
		release(got)
		release(want)
	}

	col := func(def string) ddl.Column {
		c, err := ddl.ParseColumn(def)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ident := table.Identifier{tbl.Identifier()[0], "t"}
	if _, err := tableops.AlterTable(e.Ctx, e.Cat, ident, tableops.Alter{RenameColumns: [][2]string{{"name", "label"}}}); err != nil {
		t.Fatal(err)
	}
	tbl = e.Load("t")
	before := scan.DirectReads()
	got := readFiles(t, tbl, true, []string{"label", "id"})
	if scan.DirectReads()-before != 2 {
		t.Fatalf("a renamed column: %d of 2 files read directly (the field IDs match)", scan.DirectReads()-before)
	}
	want := readFiles(t, tbl, false, []string{"label", "id"})
	sameBatches(t, "renamed", got, want)
	release(got)
	release(want)

	if _, err := tableops.AlterTable(e.Ctx, e.Cat, ident, tableops.Alter{AddColumns: []ddl.Column{col("note string")}, AlterTypes: []ddl.Column{col("n long"), col("f double")}}); err != nil {
		t.Fatal(err)
	}
	tbl = e.Load("t")
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), [][]any{{int64(9000), "z", "1.00", nil, nil, 1.5, int64(1) << 40, true, nil, 0.1, "new"}})); err != nil {
		t.Fatal(err)
	}
	tbl = e.Load("t")
	for _, cols := range [][]string{nil, {"n"}, {"note", "id"}, {"id", "x"}, {"f", "note"}} {
		before := scan.DirectReads()
		got := readFiles(t, tbl, true, cols)
		direct := scan.DirectReads() - before
		want := readFiles(t, tbl, false, cols)
		sameBatches(t, fmt.Sprint("evolved, columns ", cols), got, want)
		release(got)
		release(want)
		// The old files lack note (NULL) and store n as int (widened):
		// all three are read directly.
		wantDirect := int64(3)
		if direct != wantDirect {
			t.Fatalf("evolved, columns %v: %d of 3 files read directly, want %d", cols, direct, wantDirect)
		}
	}
}

// TestDirectLineageMatchesIceberg checks direct reads of a v3 table's
// files with row lineage against iceberg-go's reader (files of more than
// one batch): a file that stores
// no lineage (appended) and a file a copy-on-write update rewrote (which
// stores _row_id and _last_updated_sequence_number), all columns, some,
// and the lineage columns alone (read directly, nothing is read from a
// file that does not store them: the rows are counted from the footer).
func TestDirectLineageMatchesIceberg(t *testing.T) {
	e := tabletest.New(t)
	tbl, err := e.Create("t", "id long not null, name string, x double", "", nil, iceberg.Properties{"format-version": "3"})
	if err != nil {
		t.Fatal(err)
	}
	var data [][]any
	const part = 70_000 // more than one batch per file
	for i := range 2 * part {
		data = append(data, []any{int64(i), fmt.Sprintf("name%d", i%17), float64(i) / 3})
	}
	for p := range 2 {
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), data[p*part:(p+1)*part])); err != nil {
			t.Fatal(err)
		}
	}
	some := &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		a := rec.Column(0).(*array.Int64)
		out := make([]bool, rec.NumRows())
		for i := range out {
			out[i] = a.Value(i) < part && a.Value(i)%7 == 3
		}
		return out, nil
	}}
	_, err = tableops.Update(e.Ctx, e.Target("t", ""), some, func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
		var rows [][]any
		for i, tch := range touched {
			if tch {
				row := arrowtest.RowValues(rec, i)
				row[1] = "updated"
				rows = append(rows, row)
			}
		}
		return tabletest.Record(rec.Schema(), rows)
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl = e.Load("t")
	read := func(direct bool, cols []string) [][]scan.Batch {
		defer scan.SetDirect(scan.SetDirect(direct))
		r, err := scan.NewReader(e.Ctx, tbl, nil)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var out [][]scan.Batch
		for _, task := range tasks {
			lin, ok := task.Lineage(tbl.Metadata())
			if !ok {
				t.Fatalf("%s: no row lineage", task.File.FilePath())
			}
			_, seq, err := r.LiveLineage(e.Ctx, task.File, lin, task.Deletes, cols)
			if err != nil {
				t.Fatal(err)
			}
			var bs []scan.Batch
			for b, err := range seq {
				if err != nil {
					t.Fatalf("read %s (direct %t): %v", task.File.FilePath(), direct, err)
				}
				bs = append(bs, b)
			}
			out = append(out, bs)
		}
		return out
	}
	for _, cols := range [][]string{nil, {"x", "id"}, {"name"}, {}} {
		before := scan.DirectReads()
		got := read(true, cols)
		if direct := scan.DirectReads() - before; direct != 2 {
			t.Errorf("columns %v: %d of 2 files read directly", cols, direct)
		}
		if len(cols) == 0 && cols != nil {
			// The lineage columns alone: also against the full read (the
			// iceberg-go path reads one more column for a file that does
			// not store them, see raw).
			full := read(false, nil)
			checkLineageOnly(t, got, full)
			release(full)
		}
		want := read(false, cols)
		if len(want) != 2 {
			t.Fatalf("%d files live, want 2 (one appended, one rewritten)", len(want))
		}
		sameBatches(t, fmt.Sprint("lineage, columns ", cols), got, want)
		release(got)
		release(want)
	}
}

// checkLineageOnly fails unless got (the two lineage columns) holds the
// last two columns of full, file by file and row by row.
func checkLineageOnly(t *testing.T, got, full [][]scan.Batch) {
	t.Helper()
	flat := func(bss [][]scan.Batch, col func(b scan.Batch) int) [][2][]int64 {
		var out [][2][]int64
		for _, bs := range bss {
			var f [2][]int64
			for _, b := range bs {
				c := col(b)
				for k := range 2 {
					f[k] = append(f[k], b.Rec.Column(c+k).(*array.Int64).Int64Values()...)
				}
			}
			out = append(out, f)
		}
		return out
	}
	g := flat(got, func(scan.Batch) int { return 0 })
	w := flat(full, func(b scan.Batch) int { return int(b.Rec.NumCols()) - 2 })
	if len(g) != len(w) || len(g) != 2 {
		t.Fatalf("lineage alone: %d files, the full read %d", len(g), len(w))
	}
	for f := range w {
		for k := range 2 {
			if fmt.Sprint(g[f][k]) != fmt.Sprint(w[f][k]) {
				t.Fatalf("lineage alone: file %d column %d differs from the full read", f, k)
			}
		}
		if len(g[f][0]) == 0 {
			t.Fatalf("lineage alone: file %d has no rows", f)
		}
	}
}
