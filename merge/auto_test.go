package merge_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/merge"
)

// autoTable creates ns.<name> (id, v, part), identity-partitioned by part:
// 4 files of 100 rows, ids part*100 .. part*100+99.
func autoTable(t *testing.T, e *tabletest.Env, name string, props iceberg.Properties) {
	t.Helper()
	if _, err := e.Create(name, "id long not null, v string, part long", "part", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for p := int64(0); p < 4; p++ {
		for i := int64(0); i < 100; i++ {
			data = append(data, []any{p*100 + i, fmt.Sprint("a", p*100+i), p, "INSERT"})
		}
	}
	applyTuples(t, e, name, data, merge.DeleteAuto)
	if n := len(planFiles(t, e, name)); n != 4 {
		t.Fatalf("seeded %d data files, want 4", n)
	}
}

var autoChangeSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "part", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "_change_type", Type: arrow.BinaryTypes.String},
}, nil)

func applyTuples(t *testing.T, e *tabletest.Env, name string, data [][]any, dm merge.DeleteMode) *merge.Result {
	t.Helper()
	res, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, autoChangeSchema, tabletest.Seq(autoChangeSchema, data)(), []string{"id"}, merge.WithDeleteMode(dm))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func planFiles(t *testing.T, e *tabletest.Env, name string) []scan.Task {
	t.Helper()
	tbl := e.Load(name)
	tasks, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// updates updates ids from..from+n-1 (of partition part) and deletes the
// ids del.
func updates(part, from, n int64, del ...int64) [][]any {
	var out [][]any
	for i := from; i < from+n; i++ {
		out = append(out, []any{i, fmt.Sprint("u", i), part, "UPDATE_AFTER"})
	}
	for _, d := range del {
		out = append(out, []any{d, nil, nil, "DELETE"})
	}
	return out
}

// TestApplyAuto: write mode auto rewrites the files of a change that
// touches most of their rows and writes position deletes (v2) or deletion
// vectors (v3) for one that touches a few, records the choice in the
// snapshot summary, and gives row for row what copy-on-write and
// merge-on-read give.
func TestApplyAuto(t *testing.T) {
	most := updates(0, 0, 80, 95)               // 81 of file 0's 100 rows
	few := updates(1, 100, 2, 150)              // 3 of file 1's rows
	mixed := append(slices.Clone(most), few...) // 84 of 200: pooled, it rewrites both
	insertOnly := [][]any{{int64(1000), "n", int64(2), "INSERT"}}
	cases := []struct {
		name      string
		change    [][]any
		choice    string
		rewritten string
		deletes   string
	}{
		{"most of one file", most, "copy-on-write", "1", "0"},
		{"few rows of another", few, "merge-on-read", "0", "1"},
		{"both in one change", mixed, "copy-on-write", "2", "0"},
		{"inserts only", insertOnly, "merge-on-read", "0", "0"},
	}
	variants := []struct {
		name  string
		props iceberg.Properties
		dm    merge.DeleteMode
		auto  bool
	}{
		{"cow-v2", iceberg.Properties{"format-version": "2"}, merge.DeleteAuto, false},
		{"mor-v2", iceberg.Properties{"format-version": "2", "write.merge.mode": "merge-on-read"}, merge.DeleteAuto, false},
		{"mor-v3", iceberg.Properties{"format-version": "3", "write.merge.mode": "merge-on-read"}, merge.DeleteAuto, false},
		{"auto-v2-property", iceberg.Properties{"format-version": "2", "floe.write.mode": "auto"}, merge.DeleteAuto, true},
		{"auto-v3-option", iceberg.Properties{"format-version": "3", "write.merge.mode": "copy-on-write"}, merge.DeleteByFraction, true},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := tabletest.New(t)
			var want []string
			for vi, v := range variants {
				name := fmt.Sprintf("t%d_%d", ci, vi)
				autoTable(t, e, name, v.props)
				before := planFiles(t, e, name)
				res := applyTuples(t, e, name, c.change, v.dm)
				tbl := e.Load(name)
				got, err := e.Rows(tbl, scan.At{})
				if err != nil {
					t.Fatal(err)
				}
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Fatalf("%s: rows differ from %s:\n got %v\nwant %v", v.name, variants[0].name, got, want)
				}
				if !v.auto {
					continue
				}
				sum := tbl.CurrentSnapshot().Summary.Properties
				for k, w := range map[string]string{
					write.SummaryWriteMode: "auto", write.SummaryAutoChoice: c.choice,
					write.SummaryRewritten: c.rewritten, write.SummaryDeleteTargets: c.deletes,
					write.SummaryRewriteRatio: "0.2",
				} {
					if sum[k] != w {
						t.Errorf("%s: summary %s = %q, want %q (summary %v)", v.name, k, sum[k], w, sum)
					}
				}
				if res.Mode != "auto: "+c.choice {
					t.Errorf("%s: result mode %q", v.name, res.Mode)
				}
				// The files: rewritten ones are gone; the others are
				// still there, with delete files when rows were removed.
				after := planFiles(t, e, name)
				kept, withDeletes := 0, 0
				for _, a := range after {
					if slices.ContainsFunc(before, func(b scan.Task) bool { return b.File.FilePath() == a.File.FilePath() }) {
						kept++
						if a.Deletes.DV != nil || len(a.Deletes.Pos) > 0 {
							withDeletes++
						}
					}
				}
				if want := 4 - atoi(t, c.rewritten); kept != want {
					t.Errorf("%s: %d of the 4 data files kept, want %d", v.name, kept, want)
				}
				if want := atoi(t, c.deletes); withDeletes != want {
					t.Errorf("%s: %d data files with delete files, want %d", v.name, withDeletes, want)
				}
			}
		})
	}
}

func atoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAutoThreshold: floe.write.auto.rewrite-ratio moves the choice, and a
// bad value is an error naming it, with nothing committed.
func TestAutoThreshold(t *testing.T) {
	e := tabletest.New(t)
	change := updates(1, 100, 2, 150) // 3% of one file
	autoTable(t, e, "low", iceberg.Properties{"format-version": "2", "floe.write.mode": "auto", "floe.write.auto.rewrite-ratio": "0.01"})
	applyTuples(t, e, "low", change, merge.DeleteAuto)
	if got := e.Load("low").CurrentSnapshot().Summary.Properties[write.SummaryAutoChoice]; got != "copy-on-write" {
		t.Errorf("ratio 0.01: chose %q, want copy-on-write", got)
	}
	if _, err := e.Create("bad", "id long not null, v string, part long", "part", []string{"id"},
		iceberg.Properties{"floe.write.auto.rewrite-ratio": "2"}); err == nil {
		t.Error("creating a table with rewrite-ratio 2 succeeded")
	}
	// Set behind floe's back (another engine): the apply refuses.
	autoTable(t, e, "later", iceberg.Properties{"format-version": "2", "floe.write.mode": "auto"})
	tbl := e.Load("later")
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"floe.write.auto.rewrite-ratio": "most"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		t.Fatal(err)
	}
	head := e.Load("later").CurrentSnapshot().SnapshotID
	_, err := merge.Apply(e.Ctx, e.Cat, e.Target("later", "").Ident, autoChangeSchema, tabletest.Seq(autoChangeSchema, change)(), []string{"id"})
	if err == nil || !strings.Contains(err.Error(), `floe.write.auto.rewrite-ratio = "most"`) {
		t.Fatalf("apply with a bad ratio: %v", err)
	}
	if got := e.Load("later").CurrentSnapshot().SnapshotID; got != head {
		t.Error("a snapshot was committed")
	}
}

// TestMergeAuto: MERGE INTO under write mode auto chooses as Apply does
// and gives the rows copy-on-write gives.
func TestMergeAuto(t *testing.T) {
	e := tabletest.New(t)
	var want []string
	for _, c := range []struct {
		name, choice string
		props        iceberg.Properties
		change       [][]any
	}{
		{"cow", "", iceberg.Properties{"format-version": "2"}, updates(0, 0, 80, 95)},
		{"auto_most", "copy-on-write", iceberg.Properties{"format-version": "3", "floe.write.mode": "auto"}, updates(0, 0, 80, 95)},
		{"auto_most_mor", "merge-on-read", iceberg.Properties{"format-version": "3", "floe.write.mode": "auto", "floe.write.auto.rewrite-ratio": "0.9"}, updates(0, 0, 80, 95)},
	} {
		autoTable(t, e, c.name, c.props)
		st, err := expr.ParseMerge(fmt.Sprintf(`MERGE INTO ns.%s t USING s ON t.id = s.id
			WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
			WHEN MATCHED THEN UPDATE SET v = s.v
			WHEN NOT MATCHED THEN INSERT *`, c.name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := merge.Merge(e.Ctx, e.Cat, st, merge.Source{Name: "s", Schema: autoChangeSchema, Rows: tabletest.Seq(autoChangeSchema, c.change)()}); err != nil {
			t.Fatal(err)
		}
		tbl := e.Load(c.name)
		got, err := e.Rows(tbl, scan.At{})
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Fatalf("%s: rows differ from cow:\n got %v\nwant %v", c.name, got, want)
		}
		if c.choice != "" {
			if got := tbl.CurrentSnapshot().Summary.Properties[write.SummaryAutoChoice]; got != c.choice {
				t.Errorf("%s: chose %q, want %q", c.name, got, c.choice)
			}
		}
	}
}
