package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/merge"
)

func TestChangeKeys(t *testing.T) {
	for _, keys := range []string{"clustered", "uniform"} {
		t.Run(keys, func(t *testing.T) {
			w := Workload{Rows: 10_000, FileRows: 1000, Changes: 1000, Keys: keys}
			ids, kinds, err := w.changeKeys()
			if err != nil {
				t.Fatal(err)
			}
			count := map[string]int{}
			seen := map[int64]bool{}
			files := map[int64]bool{}
			for i, id := range ids {
				count[kinds[i]]++
				if seen[id] {
					t.Fatalf("id %d changed twice", id)
				}
				seen[id] = true
				if (kinds[i] == merge.Insert) != (id >= w.Rows) {
					t.Fatalf("id %d is a %s; new ids (>= %d) must be inserts and only they", id, kinds[i], w.Rows)
				}
				if id < w.Rows {
					files[id/w.FileRows] = true
				}
			}
			if count[merge.UpdateAfter] != 500 || count[merge.Delete] != 250 || count[merge.Insert] != 250 {
				t.Errorf("changes by type %v, want 500 UPDATE_AFTER, 250 DELETE, 250 INSERT", count)
			}
			want := 1 // clustered: all in one file
			if keys == "uniform" {
				want = 10
			}
			if len(files) != want {
				t.Errorf("changed keys lie in %d of the 10 files, want %d", len(files), want)
			}
		})
	}
	if _, _, err := (Workload{Rows: 100, FileRows: 10, Changes: 1000, Keys: "uniform"}).changeKeys(); err == nil {
		t.Error("more changes of existing keys than rows: no error")
	}
	if _, _, err := (Workload{Rows: 100, FileRows: 10, Changes: 10, Keys: "random"}).changeKeys(); err == nil {
		t.Error("unknown key distribution: no error")
	}
}

// TestApplyModes builds small warehouses (10,000 rows in files of 2,500)
// and applies 1,000 changes in every mode, each on a fresh copy, then
// checks every row of the table against the workload: deleted ids gone,
// updated ids holding their new row, new ids inserted, the rest as built.
func TestApplyModes(t *testing.T) {
	if _, err := exec.LookPath("cp"); err != nil {
		t.Skip("needs cp to copy warehouses")
	}
	ctx := context.Background()
	for layout := range layouts {
		for _, keys := range []string{"clustered", "uniform"} {
			w := Workload{Rows: 10_000, FileRows: 2500, Changes: 1000, Layout: layout, Keys: keys}
			pristine := filepath.Join(t.TempDir(), "wh")
			changesDir := t.TempDir()
			if err := build(ctx, pristine, w, t.Logf); err != nil {
				t.Fatal(err)
			}
			for mode := range modes {
				t.Run(layout+"/"+keys+"/"+mode, func(t *testing.T) {
					// The metadata holds absolute paths: apply on the
					// pristine warehouse after saving a copy, then put it back.
					saved := filepath.Join(t.TempDir(), "saved")
					if out, err := exec.Command("cp", "-a", pristine, saved).CombinedOutput(); err != nil {
						t.Fatalf("cp: %v: %s", err, out)
					}
					defer func() {
						if err := os.RemoveAll(pristine); err != nil {
							t.Fatal(err)
						}
						if err := os.Rename(saved, pristine); err != nil {
							t.Fatal(err)
						}
					}()
					p, err := prepare(ctx, pristine, w, mode, filepath.Join(changesDir, layout+"-"+keys+".arrow"), 0)
					if err != nil {
						t.Fatal(err)
					}
					defer p.close()
					out, err := p.run(ctx)
					if err != nil {
						t.Fatal(err)
					}
					changes := readAll(t, p.changes)
					defer bench.Release(changes)
					if mode == "baseline" {
						if out.rowsWritten != w.Changes {
							t.Errorf("baseline wrote %d rows, want %d", out.rowsWritten, w.Changes)
						}
						checkTable(t, p, changes, false)
						return
					}
					wantFiles := 4
					switch {
					case mode == "equality":
						wantFiles = 0
					case keys == "clustered":
						wantFiles = 1
					}
					if out.filesScanned != wantFiles || out.tableFiles != 4 {
						t.Errorf("read %d of %d data files, want %d of 4", out.filesScanned, out.tableFiles, wantFiles)
					}
					checkTable(t, p, changes, true)
				})
			}
		}
	}
}

// readAll reads the change rows of an IPC file.
func readAll(t *testing.T, path string) []arrow.RecordBatch {
	t.Helper()
	_, seq, closeFn, err := readChanges(path)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	var out []arrow.RecordBatch
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec)
	}
	return out
}

// checkTable compares the rows of the table p applied to with the rows as
// built with changes applied (applied false: the baseline's table, which
// must hold exactly the change rows).
func checkTable(t *testing.T, p *prepared, changes []arrow.RecordBatch, applied bool) {
	t.Helper()
	ctx := context.Background()
	want := map[int64]string{}
	row := func(rec arrow.RecordBatch, i int) (int64, string) {
		proj := rows.Project(rec, p.schema, seqCols(p.schema.NumFields()))
		defer proj.Release()
		return rec.Column(0).(*array.Int64).Value(i), rows.FormatRow(proj, i)
	}
	if applied {
		// The build appended FileRows rows at a time in batches of
		// batchRows: regenerate the same batches.
		for lo := int64(0); lo < p.w.Rows; lo += p.w.FileRows {
			for rec, err := range span(p.schema, lo, min(lo+p.w.FileRows, p.w.Rows), 0, p.w.FileRows) {
				if err != nil {
					t.Fatal(err)
				}
				for i := range int(rec.NumRows()) {
					id, r := row(rec, i)
					want[id] = r
				}
				rec.Release()
			}
		}
	}
	for _, rec := range changes {
		kinds := rec.Column(rec.Schema().FieldIndices("_change_type")[0]).(*array.String)
		for i := range int(rec.NumRows()) {
			id, r := row(rec, i)
			if applied && kinds.Value(i) == merge.Delete {
				delete(want, id)
				continue
			}
			want[id] = r
		}
	}
	tbl, err := p.e.Load(p.table)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := scan.Rows(ctx, tbl, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for rec, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			id := rec.Column(0).(*array.Int64).Value(i)
			r := rows.FormatRow(rec, i)
			if w, ok := want[id]; !ok {
				t.Errorf("id %d: unexpected row %s", id, r)
			} else if r != w {
				t.Errorf("id %d: row %s, want %s", id, r, w)
			}
			got++
		}
		rec.Release()
	}
	if got != len(want) {
		t.Errorf("the table has %d rows, want %d", got, len(want))
	}
}

func seqCols(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestProcFields(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skip("no /proc/self/io")
	}
	for _, f := range []func() (int64, error){
		func() (int64, error) { return statusKB("VmHWM:") },
		func() (int64, error) { return ioKB("rchar:") },
	} {
		v, err := f()
		if err != nil || v <= 0 {
			t.Errorf("read %d, %v; want a positive number", v, err)
		}
	}
	if _, err := procField("/proc/self/status", "NoSuchField:"); err == nil {
		t.Error("a missing field: no error")
	}
	if err := resetPeak(); err != nil {
		t.Errorf("reset the peak RSS: %v", err)
	}
}
