package delta_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/testdir"
)

// fixtureTables lists the Delta tables under ../shared/testdata/delta.
func fixtureTables(t *testing.T) (string, []string) {
	root := testdir.Shared(t, "delta")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasSuffix(e.Name(), ".expected") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("no tables under %s", root)
	}
	return root, names
}

// fakeDataTables are fixtures whose add actions name files that were never
// written (delta-spark golden and kernel-rs log-only tables): their
// snapshots are checked from the log only.
var fakeDataTables = map[string]bool{
	"delta-golden-deltalog-getChanges": true,
	"kernelrs-table-with-cdf":          true,
}

// TestSnapshotRowCountsMatchLog checks every version of every fixture table
// whose add actions carry stats: the rows Scan returns must number
// sum(stats.numRecords) - sum(deletionVector.cardinality) over the live
// files, a count written by the engine that produced the table.
func TestSnapshotRowCountsMatchLog(t *testing.T) {
	root, names := fixtureTables(t)
	ctx := context.Background()
	checked := 0
	for _, name := range names {
		if fakeDataTables[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tbl, err := delta.Open(ctx, filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			earliest, err := tbl.EarliestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			latest, err := tbl.LatestVersion(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for v := earliest; v <= latest; v++ {
				s, err := tbl.Snapshot(ctx, v)
				if err != nil {
					t.Fatalf("Snapshot(%d): %v", v, err)
				}
				want, ok := int64(0), true
				for _, f := range s.Files() {
					var st struct {
						NumRecords *int64 `json:"numRecords"`
					}
					if f.Stats == "" || json.Unmarshal([]byte(f.Stats), &st) != nil || st.NumRecords == nil {
						ok = false
						break
					}
					want += *st.NumRecords
					if f.DeletionVector != nil {
						want -= f.DeletionVector.Cardinality
					}
				}
				_, rows := scanRows(t, s)
				if ok {
					checked++
					if int64(len(rows)) != want {
						t.Errorf("version %d: Scan returned %d rows, the log's stats and deletion vectors say %d", v, len(rows), want)
					}
				}
			}
		})
	}
	if checked == 0 {
		t.Fatal("no snapshot had stats to check")
	}
}

// TestChangesReplaySnapshots checks, on every fixture table and version with
// change data, the invariant that links the two read paths:
//
//	rows(v) = rows(v-1) - (delete, update_preimage of v) + (insert, update_postimage of v)
//
// as multisets of whole rows. It exercises snapshot replay, checkpoints,
// deletion vectors (files, inline, both Z85 paddings), column mapping and
// partition values against the change data reader. Commits made by hand
// ("Manual Update", whose change files were written without a real change)
// are skipped.
func TestChangesReplaySnapshots(t *testing.T) {
	root, names := fixtureTables(t)
	ctx := context.Background()
	checked := 0
	for _, name := range names {
		if fakeDataTables[name] {
			continue
		}
		t.Run(name, func(t *testing.T) {
			tbl, err := delta.Open(ctx, filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			earliest, _ := tbl.EarliestVersion(ctx)
			latest, _ := tbl.LatestVersion(ctx)
			prev, err := tbl.Snapshot(ctx, earliest)
			if err != nil {
				t.Fatal(err)
			}
			cols, prevRows := scanRows(t, prev)
			for v := earliest + 1; v <= latest; v++ {
				cur, err := tbl.Snapshot(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				_, curRows := scanRows(t, cur)
				ci, err := tbl.CommitInfo(ctx, v)
				if err != nil {
					t.Fatal(err)
				}
				names := append(append([]string(nil), cols...), delta.ChangeTypeColumn)
				_, changes, err := readChanges(t, tbl, delta.ChangesOptions{Start: delta.AtVersion(v), End: delta.AtVersion(v), Columns: names}, nil)
				switch {
				case errors.Is(err, delta.ErrChangeDataNotRecorded):
				case err != nil:
					t.Fatalf("Changes(%d): %v", v, err)
				case ci.Operation == "Manual Update":
				default:
					checked++
					if d := deltatest.DiffMultisets(applyChanges(t, prevRows, changes), curRows); d != "" {
						t.Errorf("version %d (%s): snapshot %d plus its change data is not snapshot %d:\n%s", v, ci.Operation, v-1, v, d)
					}
				}
				prevRows = curRows
			}
		})
	}
	if checked == 0 {
		t.Fatal("no version was checked")
	}
}

// applyChanges applies change rows (data columns then _change_type) to rows.
func applyChanges(t *testing.T, rows [][]string, changes [][]string) [][]string {
	count := map[string]int{}
	key := func(r []string) string { return strings.Join(r, "\x1f") }
	for _, r := range rows {
		count[key(r)]++
	}
	for _, c := range changes {
		data, kind := c[:len(c)-1], c[len(c)-1]
		switch kind {
		case delta.ChangeInsert, delta.ChangeUpdatePostimage:
			count[key(data)]++
		case delta.ChangeDelete, delta.ChangeUpdatePreimage:
			count[key(data)]--
		default:
			t.Fatalf("unexpected change type %q", kind)
		}
	}
	var out [][]string
	for k, n := range count {
		if n < 0 {
			t.Fatalf("change data deletes a row the snapshot does not hold: %q", k)
		}
		for ; n > 0; n-- {
			out = append(out, strings.Split(k, "\x1f"))
		}
	}
	sort.Slice(out, func(i, j int) bool { return key(out[i]) < key(out[j]) })
	return out
}
