package tableops_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// liveFiles lists the live data and delete files of the table's head.
func liveFiles(t *testing.T, e *tabletest.Env, name string) (data []string, deletes int) {
	t.Helper()
	tbl := e.Load(name)
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := scan.LoadState(e.Ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range st.Data {
		data = append(data, d.Path())
	}
	slices.Sort(data)
	return data, len(st.Deletes)
}

// morTable creates a merge-on-read table with two data files: ids 1-20
// (then hit by deletes deletes of one row each) and ids 101-120.
func morTable(t *testing.T, props iceberg.Properties, deletes int) *tabletest.Env {
	t.Helper()
	e := tabletest.New(t)
	p := iceberg.Properties{"format-version": "2", "write.delete.mode": "merge-on-read"}
	for k, v := range props {
		p[k] = v
	}
	if _, err := e.Create("t", "id long not null, v string", "", []string{"id"}, p); err != nil {
		t.Fatal(err)
	}
	as := tabletest.ArrowSchema(e.Load("t"))
	for _, base := range []int64{0, 100} {
		var data [][]any
		for i := base + 1; i <= base+20; i++ {
			data = append(data, []any{i, fmt.Sprint("v", i)})
		}
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(as, data)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= deletes; i++ {
		if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// TestCompactAutoTargeted: a file over the delete-file threshold is
// rewritten with its deletes applied and the untouched file is kept; the
// rows are identical, the snapshot is a replace, and the changelog over
// it shows no change.
func TestCompactAutoTargeted(t *testing.T) {
	e := morTable(t, iceberg.Properties{tableops.PropCompactionDeleteThreshold: "3",
		tableops.PropCompactionDeletedRatio: "1", tableops.PropCompactionMinInputFiles: "5"}, 4)
	before, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	dataBefore, delBefore := liveFiles(t, e, "t")
	if len(dataBefore) != 2 || delBefore != 4 {
		t.Fatalf("setup: %d data files, %d delete files; want 2 and 4", len(dataBefore), delBefore)
	}
	prev := e.Load("t").CurrentSnapshot().SnapshotID
	o, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.SnapshotID == 0 || o.RowsAdded != 16 || o.RowsRemoved != 20 {
		t.Fatalf("outcome %+v: want a snapshot rewriting 20 rows into 16", o)
	}
	tbl := e.Load("t")
	if op := tbl.CurrentSnapshot().Summary.Operation; op != "replace" {
		t.Fatalf("compaction snapshot is %q, want replace", op)
	}
	after, err := e.Rows(tbl, scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("rows changed:\nbefore %v\nafter  %v", before, after)
	}
	dataAfter, delAfter := liveFiles(t, e, "t")
	if len(dataAfter) != 2 || delAfter != 0 {
		t.Fatalf("after: %d data files, %d delete files; want 2 and 0", len(dataAfter), delAfter)
	}
	kept := 0
	for _, f := range dataAfter {
		if slices.Contains(dataBefore, f) {
			kept++
		}
	}
	if kept != 1 {
		t.Fatalf("%d of the data files kept, want 1 (the untouched one)", kept)
	}
	_, seq, err := changelog.Scan(e.Ctx, tbl, changelog.Options{StartSnapshotID: &prev})
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() != 0 {
			t.Fatalf("changelog over the compaction has %d rows, want none", rec.NumRows())
		}
		rec.Release()
	}
	// Nothing is over the thresholds any more.
	o, err = tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true})
	if err != nil {
		t.Fatal(err)
	}
	if o.SnapshotID != 0 {
		t.Fatalf("second auto compaction committed snapshot %d, want nothing", o.SnapshotID)
	}
}

// TestCompactAutoThresholds: under the thresholds nothing is rewritten;
// the deleted-ratio, small-file and enabled properties select as
// documented; a malformed threshold is an error naming the property.
func TestCompactAutoThresholds(t *testing.T) {
	cases := []struct {
		name    string
		props   iceberg.Properties
		deletes int
		want    bool
	}{
		{"under", iceberg.Properties{tableops.PropCompactionDeleteThreshold: "5", tableops.PropCompactionDeletedRatio: "0.5"}, 2, false},
		{"ratio", iceberg.Properties{tableops.PropCompactionDeleteThreshold: "50", tableops.PropCompactionDeletedRatio: "0.1"}, 2, true},
		{"small files", iceberg.Properties{tableops.PropCompactionDeleteThreshold: "50", tableops.PropCompactionDeletedRatio: "1",
			tableops.PropCompactionMinInputFiles: "2"}, 0, true},
		{"small files too few", iceberg.Properties{tableops.PropCompactionDeleteThreshold: "50", tableops.PropCompactionDeletedRatio: "1",
			tableops.PropCompactionMinInputFiles: "3"}, 0, false},
		{"disabled", iceberg.Properties{tableops.PropCompactionEnabled: "false", tableops.PropCompactionDeleteThreshold: "1"}, 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := morTable(t, c.props, c.deletes)
			before, _ := e.Rows(e.Load("t"), scan.At{})
			o, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := o.SnapshotID != 0; got != c.want {
				t.Fatalf("compacted %v, want %v (%+v)", got, c.want, o)
			}
			after, _ := e.Rows(e.Load("t"), scan.At{})
			if strings.Join(after, " ") != strings.Join(before, " ") {
				t.Fatalf("rows changed")
			}
		})
	}
	e := morTable(t, iceberg.Properties{tableops.PropCompactionDeletedRatio: "2"}, 1)
	_, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true})
	if err == nil || !strings.Contains(err.Error(), tableops.PropCompactionDeletedRatio) {
		t.Fatalf("bad ratio: %v, want an error naming %s", err, tableops.PropCompactionDeletedRatio)
	}
}

// TestCompactConcurrentDelete: a delete that commits while a compaction
// is rewriting the files it deletes from loses nothing: the compaction's
// attempt conflicts and is redone on the new head, and the deleted rows
// stay deleted.
func TestCompactConcurrentDelete(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprint("auto=", auto), func(t *testing.T) {
			e := morTable(t, iceberg.Properties{tableops.PropCompactionDeleteThreshold: "2"}, 3)
			fired := 0
			tableops.SetCompactHook(func() {
				fired++
				if fired > 1 {
					return
				}
				// id 5 is in the file being compacted; id 105 in the other.
				for _, id := range []int64{5, 105} {
					if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), tabletest.ColEq("id", false, id)); err != nil {
						t.Error(err)
					}
				}
			})
			defer tableops.SetCompactHook(nil)
			o, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: auto})
			if err != nil {
				t.Fatal(err)
			}
			if o.Attempts < 2 || fired < 2 {
				t.Fatalf("%d attempts, hook ran %d times: want the concurrent delete to force a retry", o.Attempts, fired)
			}
			rows, err := e.Rows(e.Load("t"), scan.At{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 40-3-2 {
				t.Fatalf("%d rows after compaction racing a delete, want %d: %v", len(rows), 35, rows)
			}
			for _, r := range rows {
				if strings.HasPrefix(r, "(5,") || strings.HasPrefix(r, "(105,") || strings.Contains(r, "v5)") || strings.Contains(r, "v105") {
					t.Fatalf("row deleted concurrently came back: %s", r)
				}
			}
		})
	}
}

// TestCompactAutoSizeTiered: a small file larger than all the other
// small files of its partition together is left out of the bin-packing
// (packing it would mostly rewrite its bytes again), and taken in once
// the others add up to its size.
func TestCompactAutoSizeTiered(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{"format-version": "2", "write.delete.mode": "merge-on-read",
		tableops.PropCompactionMinFileSize: "1073741824", tableops.PropCompactionMinInputFiles: "3"}
	if _, err := e.Create("t", "id long not null, v string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	as := tabletest.ArrowSchema(e.Load("t"))
	appendRows := func(from, n int64) {
		t.Helper()
		var data [][]any
		for i := from; i < from+n; i++ {
			data = append(data, []any{i, fmt.Sprint("value-", i)})
		}
		if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(as, data)); err != nil {
			t.Fatal(err)
		}
	}
	compact := func() {
		t.Helper()
		if _, err := tableops.CompactWith(e.Ctx, e.Target("t", ""), tableops.CompactOptions{Auto: true}); err != nil {
			t.Fatal(err)
		}
	}
	appendRows(0, 20000)
	big, _ := liveFiles(t, e, "t")
	for k := int64(0); k < 3; k++ {
		appendRows(100000+k*10, 10)
	}
	before, _ := e.Rows(e.Load("t"), scan.At{})
	compact()
	data, _ := liveFiles(t, e, "t")
	if len(data) != 2 || !slices.Contains(data, big[0]) {
		t.Fatalf("after packing the three small files: %d data files %v, want the big file %s kept beside one packed file", len(data), data, big[0])
	}
	if after, _ := e.Rows(e.Load("t"), scan.At{}); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("rows changed by the compaction")
	}

	// Files that add up to the big one's size bring it in.
	appendRows(200000, 12000)
	appendRows(300000, 12000)
	before, _ = e.Rows(e.Load("t"), scan.At{})
	compact()
	data, _ = liveFiles(t, e, "t")
	if len(data) != 1 {
		t.Fatalf("after the other files outgrew the big one: %d data files %v, want one", len(data), data)
	}
	if after, _ := e.Rows(e.Load("t"), scan.At{}); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Fatalf("rows changed by the compaction")
	}
}
