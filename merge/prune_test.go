package merge_test

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
)

// changeRows builds change rows (id, v, n, _change_type) for ids with the
// given change type each.
func changeRows(ids []int64, kinds []string, tag string) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", tag, id))
		b.Field(2).(*array.Int64Builder).Append(id * 7)
		b.Field(3).(*array.StringBuilder).Append(kinds[i])
	}
	return b.NewRecordBatch()
}

// fileIDs lists the data files of the table's current snapshot with the ids
// each holds, read from the files themselves (not from their statistics).
func fileIDs(t *testing.T, e *tabletest.Env, name string) map[string][]int64 {
	t.Helper()
	tbl := e.Load(name)
	tasks, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := scan.NewReader(e.Ctx, tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int64{}
	for _, task := range tasks {
		_, seq, err := r.Live(e.Ctx, task.File, task.Deletes, []string{"id"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for b, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, b.Rec.Column(0).(*array.Int64).Int64Values()...)
			b.Release()
		}
		out[task.File.FilePath()] = ids
	}
	return out
}

func localPath(p string) string { return strings.TrimPrefix(p, "file://") }

// TestApplyReadsOnlyCandidateFiles applies changes to keys of one data
// file of a multi-file table and checks, in every mode that reads the
// table, that only that file is read: the other data files are moved away
// while Apply runs (reading one fails), and Result.FilesScanned is 1. It
// covers pruning by column statistics with a short key list (an IN
// predicate of at most 200 values, which iceberg-go checks against
// statistics), a longer one (an IN list too long for that) and a long one
// (more keys than an IN list takes), where the changed keys and the
// inserted new keys are far apart, and pruning by partition values (bucket
// partitions, whose files all span the whole id range).
func TestApplyReadsOnlyCandidateFiles(t *testing.T) {
	modes := []struct {
		name  string
		props iceberg.Properties
		want  string
	}{
		{"copy-on-write", iceberg.Properties{"format-version": "2"}, "copy-on-write"},
		{"position-deletes", iceberg.Properties{"format-version": "2", "write.merge.mode": "merge-on-read"}, "merge-on-read"},
		{"deletion-vectors", iceberg.Properties{"format-version": "3", "write.merge.mode": "merge-on-read"}, "merge-on-read"},
	}
	layouts := []struct {
		name      string
		partition string
		files     int   // appends (unpartitioned) of perFile rows
		perFile   int64 // rows per append
		nChanged  int   // existing keys changed: 2/3 updated, 1/3 deleted
		nInserted int64 // new keys inserted (ids past the table's)
	}{
		{"short-list", "", 4, 1000, 150, 50},
		{"in-list", "", 4, 2000, 600, 200},
		{"ranges", "", 4, 20_000, 15_000, 3000},
		{"bucket", "bucket(4, id)", 1, 4000, 300, 0},
	}
	for _, m := range modes {
		for _, l := range layouts {
			t.Run(m.name+"/"+l.name, func(t *testing.T) {
				e := tabletest.New(t)
				if _, err := e.Create("t", "id long not null, v string, n long", l.partition, nil, m.props); err != nil {
					t.Fatal(err)
				}
				ident := e.Target("t", "").Ident
				for f := range int64(l.files) {
					rec := benchRecord(f*l.perFile, l.perFile, "init", true)
					_, err := merge.Apply(e.Ctx, e.Cat, ident, rec.Schema(), seqOf(rec), []string{"id"})
					rec.Release()
					if err != nil {
						t.Fatal(err)
					}
				}
				files := fileIDs(t, e, "t")
				if len(files) != 4 {
					t.Fatalf("the table has %d data files, want 4", len(files))
				}
				// The target is the file holding the second-smallest ids: the
				// inserted keys lie past the last file, so a single min..max
				// range over all changed keys would take in the files between.
				var paths []string
				for p := range files {
					paths = append(paths, p)
				}
				slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(slices.Min(files[a]), slices.Min(files[b])) })
				target := paths[1]
				held := slices.Clone(files[target])
				slices.Sort(held)
				if len(held) < l.nChanged {
					t.Fatalf("file %s holds %d rows, want at least %d", target, len(held), l.nChanged)
				}
				total := int64(l.files) * l.perFile
				var ids []int64
				var kinds []string
				updated := map[int64]bool{}
				deleted := map[int64]bool{}
				for i, id := range held[:l.nChanged] {
					ids = append(ids, id)
					if i%3 == 2 {
						kinds = append(kinds, merge.Delete)
						deleted[id] = true
					} else {
						kinds = append(kinds, merge.UpdateAfter)
						updated[id] = true
					}
				}
				for id := total + 1000; id < total+1000+l.nInserted; id++ {
					ids = append(ids, id)
					kinds = append(kinds, merge.Insert)
				}
				changes := changeRows(ids, kinds, "new")
				defer changes.Release()

				// Move every other data file away while Apply runs.
				aside := t.TempDir()
				for i, p := range paths {
					if p != target {
						if err := os.Rename(localPath(p), filepath.Join(aside, fmt.Sprint(i))); err != nil {
							t.Fatal(err)
						}
					}
				}
				res, err := merge.Apply(e.Ctx, e.Cat, ident, changes.Schema(), seqOf(changes), []string{"id"})
				for i, p := range paths {
					if p != target {
						if rerr := os.Rename(filepath.Join(aside, fmt.Sprint(i)), localPath(p)); rerr != nil {
							t.Fatal(rerr)
						}
					}
				}
				if err != nil {
					t.Fatalf("apply with only the candidate file present: %v", err)
				}
				if res.FilesScanned != 1 {
					t.Errorf("FilesScanned = %d, want 1 (the file holding the changed keys)", res.FilesScanned)
				}
				if res.Mode != m.want {
					t.Errorf("mode %q, want %q", res.Mode, m.want)
				}
				if res.Matched != int64(l.nChanged) || res.RowsRemoved != int64(l.nChanged) {
					t.Errorf("matched %d keys and removed %d rows, want %d and %d", res.Matched, res.RowsRemoved, l.nChanged, l.nChanged)
				}
				if want := int64(len(updated)) + l.nInserted; res.Upserts != want || res.Deletes != int64(len(deleted)) {
					t.Errorf("%d upserts and %d deletes, want %d and %d", res.Upserts, res.Deletes, want, len(deleted))
				}

				// The table holds what the changes say.
				got, err := e.Rows(e.Load("t"), scan.At{})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for id := range total {
					switch {
					case deleted[id]:
					case updated[id]:
						want = append(want, fmt.Sprintf("(%d,'new-%d',%d)", id, id, id*7))
					default:
						want = append(want, fmt.Sprintf("(%d,'init-%d',%d)", id, id, id*7))
					}
				}
				for id := total + 1000; id < total+1000+l.nInserted; id++ {
					want = append(want, fmt.Sprintf("(%d,'new-%d',%d)", id, id, id*7))
				}
				slices.Sort(want)
				if len(got) != len(want) {
					t.Fatalf("the table has %d rows after apply, want %d", len(got), len(want))
				}
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("row %d after apply: %s, want %s", i, got[i], want[i])
					}
				}
			})
		}
	}
}
