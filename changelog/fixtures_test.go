package changelog_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/testdir"
)

// multiset of rendered rows
type multiset map[string]int

func readRows(t *testing.T, tbl *table.Table, id int64) (multiset, error) {
	t.Helper()
	_, seq, err := scan.Rows(context.Background(), tbl, scan.Options{At: scan.At{SnapshotID: &id}})
	if err != nil {
		return nil, err
	}
	out := multiset{}
	for rec, err := range seq {
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			out[rows.FormatRow(rec, i)]++
		}
		rec.Release()
	}
	return out, nil
}

// change is one changelog row.
type change struct {
	ordinal int32
	kind    string
	row     string
}

// changes returns the changelog rows (data part) by change type.
func changes(t *testing.T, tbl *table.Table, o changelog.Options) (map[string]multiset, int, error) {
	m, list, err := changesList(t, tbl, o)
	if err != nil {
		return nil, 0, err
	}
	m[orderKey] = multiset{}
	for i, c := range list {
		m[orderKey][fmt.Sprintf("%09d|%d|%s|%s", c.ordinal, i, c.kind, c.row)] = 1
	}
	return m, len(list), nil
}

// orderKey holds the ordered changes inside the map returned by changes.
const orderKey = "_ordered"

func changesList(t *testing.T, tbl *table.Table, o changelog.Options) (map[string]multiset, []change, error) {
	t.Helper()
	sch, seq, err := changelog.Scan(context.Background(), tbl, o)
	if err != nil {
		return nil, nil, err
	}
	n := sch.NumFields() - 3
	dataSch := arrow.NewSchema(sch.Fields()[:n], nil)
	idx := seqInts(n)
	out := map[string]multiset{}
	var list []change
	for rec, err := range seq {
		if err != nil {
			return nil, nil, err
		}
		kinds := rec.Column(n).(*array.String)
		ords := rec.Column(n + 1).(*array.Int32)
		data := rows.Project(rec, dataSch, idx)
		for i := 0; i < int(rec.NumRows()); i++ {
			k := kinds.Value(i)
			if out[k] == nil {
				out[k] = multiset{}
			}
			r := rows.FormatRow(data, i)
			out[k][r]++
			list = append(list, change{ords.Value(i), k, r})
		}
		data.Release()
		rec.Release()
	}
	return out, list, nil
}

// applies checks that applying the changes to from gives to, as
// multisets, snapshot by snapshot in ordinal order (before-images and
// deletes of a snapshot first).
func applies(from, to multiset, ch map[string]multiset) error {
	got := multiset{}
	for k, v := range from {
		got[k] = v
	}
	var list []change
	if ord, ok := ch[orderKey]; ok {
		keys := make([]string, 0, len(ord))
		for k := range ord {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts := strings.SplitN(k, "|", 4)
			o, _ := strconv.Atoi(parts[0])
			list = append(list, change{int32(o), parts[2], parts[3]})
		}
	} else {
		for kind, m := range ch {
			for r, n := range m {
				for ; n > 0; n-- {
					list = append(list, change{0, kind, r})
				}
			}
		}
	}
	rank := map[string]int{changelog.UpdateBefore: 0, changelog.Delete: 0, changelog.UpdateAfter: 1, changelog.Insert: 1}
	sort.SliceStable(list, func(i, j int) bool {
		if list[i].ordinal != list[j].ordinal {
			return list[i].ordinal < list[j].ordinal
		}
		return rank[list[i].kind] < rank[list[j].kind]
	})
	for _, c := range list {
		switch c.kind {
		case changelog.Delete, changelog.UpdateBefore:
			got[c.row]--
			if got[c.row] < 0 {
				return fmt.Errorf("%s of a row that was not there: %s", c.kind, c.row)
			}
			if got[c.row] == 0 {
				delete(got, c.row)
			}
		default:
			got[c.row]++
		}
	}
	var diff []string
	for r, n := range got {
		if to[r] != n {
			diff = append(diff, fmt.Sprintf("%s: got %d want %d", r, n, to[r]))
		}
	}
	for r, n := range to {
		if _, ok := got[r]; !ok {
			diff = append(diff, fmt.Sprintf("%s: got 0 want %d", r, n))
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		if len(diff) > 10 {
			diff = diff[:10]
		}
		return fmt.Errorf("start rows + changes != end rows:\n%s", strings.Join(diff, "\n"))
	}
	return nil
}

func fixture(t *testing.T, folder, metadata string) *table.Table {
	root := testdir.Shared(t, "iceberg", folder)
	tbl, err := catalog.OpenTableAt(context.Background(), table.Identifier{"fixture", "t"}, metadata, root)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestSparkEqualityDeleteChangelog reads the changelog of Spark-written
// equality-delete snapshots, which the reference refuses: every snapshot's
// changes turn its parent's rows into its own.
func TestSparkEqualityDeleteChangelog(t *testing.T) {
	for _, md := range []string{
		"data/persistent/equality_deletes/warehouse/mydb/mytable/metadata/v7.metadata.json",
		"data/persistent/equality_deletes/warehouse/mydb/mytable_partitioned/metadata/v6.metadata.json",
	} {
		t.Run(md[strings.LastIndex(md[:strings.Index(md, "/metadata/")], "/")+1:], func(t *testing.T) {
			tbl := fixture(t, "duckdb_equality_deletes", md)
			checked := 0
			for _, s := range tbl.Metadata().Snapshots() {
				if s.ParentSnapshotID == nil {
					continue
				}
				from, err1 := readRows(t, tbl, *s.ParentSnapshotID)
				to, err2 := readRows(t, tbl, s.SnapshotID)
				parent := *s.ParentSnapshotID
				end := s.SnapshotID
				ch, _, err := changes(t, tbl, changelog.Options{StartSnapshotID: &parent, EndSnapshotID: &end})
				if err1 != nil || err2 != nil {
					// The upstream table lacks one manifest list: its
					// snapshot cannot be read, and neither can the changes
					// that need it.
					if err == nil && err2 != nil {
						t.Errorf("snapshot %d is unreadable (%v) but its changelog was computed", end, err2)
					}
					continue
				}
				if err != nil {
					t.Fatalf("changelog of snapshot %d: %v", end, err)
				}
				if err := applies(from, to, ch); err != nil {
					t.Errorf("snapshot %d (%s): %v", end, s.Summary.Operation, err)
				}
				if len(ch[changelog.Delete]) == 0 && len(ch[changelog.Insert]) == 0 {
					t.Errorf("snapshot %d (%s): no changes", end, s.Summary.Operation)
				}
				checked++
			}
			if checked < 3 {
				t.Errorf("only %d snapshots checked", checked)
			}
		})
	}
}

// TestSparkCopyOnWriteDelete: the lineitem copy-on-write delete's changelog
// is exactly the 8382 deleted rows once carry-overs are removed.
func TestSparkCopyOnWriteDelete(t *testing.T) {
	tbl := fixture(t, "duckdb_lineitem_iceberg/data/persistent/iceberg", "lineitem_iceberg/metadata/v2.metadata.json")
	cur := tbl.CurrentSnapshot()
	if cur.ParentSnapshotID == nil {
		t.Fatal("expected two snapshots")
	}
	parent := *cur.ParentSnapshotID
	ch, total, err := changes(t, tbl, changelog.Options{StartSnapshotID: &parent, MemoryBudget: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if total != 8382 || len(ch) != 2 || len(ch[changelog.Delete]) == 0 {
		t.Fatalf("got %d change rows of kinds %v, want exactly 8382 DELETE rows", total, keys(ch))
	}
	from, err := readRows(t, tbl, parent)
	if err != nil {
		t.Fatal(err)
	}
	to, err := readRows(t, tbl, cur.SnapshotID)
	if err != nil {
		t.Fatal(err)
	}
	if err := applies(from, to, ch); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]multiset) []string {
	var out []string
	for k, v := range m {
		n := 0
		for _, c := range v {
			n += c
		}
		out = append(out, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(out)
	return out
}
