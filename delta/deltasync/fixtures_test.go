package deltasync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/merge"
)

// fixtureSync says how a shared Delta fixture with Change Data Feed is
// synced and what is known about it.
type fixtureSync struct {
	keys        []string
	partitionBy string
	// inconsistent lists versions whose change data does not turn the
	// previous snapshot into this one: hand-made logs (the test proves it
	// by replaying the change rows literally, without floe's sync).
	inconsistent map[int64]string
	// failAt is a version whose changes the sync refuses, with the error.
	failAt    int64
	failError error
	// firstRunError is the error of the first run (a table that cannot be
	// read at all).
	firstRunError error
}

// fixtureSyncs covers every fixture with Change Data Feed; the test fails
// on a CDF-enabled fixture missing here.
var fixtureSyncs = map[string]fixtureSync{
	"deltars-cdc_ict_table":                          {keys: []string{"name"}, partitionBy: "birthyear"},
	"deltars-cdf-table":                              {keys: []string{"id"}, partitionBy: "birthday"},
	"deltars-cdf-table-non-partitioned":              {keys: []string{"id", "name"}}, // id alone repeats at version 4
	"deltars-cdf-table-with-cdc-and-dvs":             {keys: []string{"id"}},
	"deltars-checkpoint-cdf-table":                   {keys: []string{"id"}, partitionBy: "birthday"},
	"deltars-simple_table_with_cdc":                  {keys: []string{"id"}},
	"kernelrs-cdf-column-mapping-id-mode":            {keys: []string{"id"}},
	"kernelrs-cdf-column-mapping-name-mode":          {keys: []string{"id"}},
	"kernelrs-cdf-column-mapping-name-mode-3-7":      {keys: []string{"id"}},
	"kernelrs-cdf-table-backtick-column-names":       {keys: []string{"id.num"}},
	"kernelrs-cdf-table-data-change":                 {keys: []string{"id"}},
	"kernelrs-cdf-table-delete-conditional-all-rows": {keys: []string{"id"}},
	"kernelrs-cdf-table-delete-conditional-two-rows": {keys: []string{"id"}},
	"kernelrs-cdf-table-delete-unconditional":        {keys: []string{"id"}},
	"kernelrs-cdf-table-partitioned":                 {keys: []string{"id"}, partitionBy: "part"},
	"kernelrs-cdf-table-simple": {keys: []string{"id"}, inconsistent: map[int64]string{
		2: "a 'Manual Update' commit adds a change data file of 5 inserts and no data file"}},
	"kernelrs-cdf-table-update-ops":      {keys: []string{"id"}, failAt: 1, failError: ErrUnknownChangeType},
	"kernelrs-cdf-table-with-dv":         {keys: []string{"value"}},
	"kernelrs-compacted-log-files-table": {keys: []string{"id"}},
	// Its add and cdc paths are fake/path/N: written to test log replay only.
	"kernelrs-table-with-cdf": {keys: []string{"id"}, firstRunError: delta.ErrFileNotFound},
}

// syncModes are the three ways rows are removed.
var syncModes = []struct {
	name    string
	mode    write.Mode
	del     merge.DeleteMode
	label   string // merge.Result.Mode
	version int    // Iceberg format version
}{
	{"copy-on-write", write.CopyOnWrite, merge.DeleteAuto, "copy-on-write", 2},
	{"merge-on-read", write.MergeOnRead, merge.DeleteAuto, "merge-on-read", 2},
	{"equality-deletes", write.MergeOnRead, merge.DeleteEquality, "merge-on-read (equality deletes)", 2},
	{"deletion-vectors-v3", write.MergeOnRead, merge.DeleteAuto, "merge-on-read", 3},
}

// TestSyncFixtures syncs every shared Delta table with Change Data Feed
// into Iceberg version by version, in each mode, and checks after each run
// that the Iceberg table equals the Delta snapshot at the applied version
// (read by package delta from the log, the data files and the deletion
// vectors), that the watermark is that version, and that a run with nothing
// new commits nothing.
func TestSyncFixtures(t *testing.T) {
	root := testdir.Shared(t, "delta")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	seen := 0
	for _, e := range entries {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".expected") {
			continue
		}
		name := e.Name()
		src, err := delta.Open(ctx, filepath.Join(root, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cdf, err := cdfEnabledSomewhere(ctx, src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cfg, ok := fixtureSyncs[name]
		if !cdf {
			if ok {
				t.Errorf("%s: configured for sync but has no Change Data Feed", name)
			}
			continue
		}
		if !ok {
			t.Errorf("%s has Change Data Feed but no entry in fixtureSyncs", name)
			continue
		}
		seen++
		for _, m := range syncModes {
			t.Run(name+"/"+m.name, func(t *testing.T) {
				syncFixture(t, src, cfg, m.mode, m.del, m.version)
			})
		}
	}
	if seen != len(fixtureSyncs) {
		t.Errorf("synced %d fixtures, %d configured", seen, len(fixtureSyncs))
	}
}

func cdfEnabledSomewhere(ctx context.Context, src *delta.Table) (bool, error) {
	first, err := src.EarliestVersion(ctx)
	if err != nil {
		return false, err
	}
	last, err := src.LatestVersion(ctx)
	if err != nil {
		return false, err
	}
	for v := first; v <= last; v++ {
		meta, _, err := src.Metadata(ctx, v)
		if err != nil {
			return false, err
		}
		if meta.ChangeDataFeedEnabled() {
			return true, nil
		}
	}
	return false, nil
}

func syncFixture(t *testing.T, src *delta.Table, cfg fixtureSync, mode write.Mode, del merge.DeleteMode, version int) {
	ctx := context.Background()
	cat := openCatalog(t)
	ident := table.Identifier{"fixtures", "t"}
	start, err := src.EarliestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := src.LatestVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{EqualityColumns: cfg.keys, PartitionBy: cfg.partitionBy, Mode: mode, DeleteMode: del, FormatVersion: version,
		Start: delta.AtVersion(start), End: delta.AtVersion(start)}
	res, err := Sync(ctx, cat, src, ident, opts)
	if cfg.firstRunError != nil {
		if !errors.Is(err, cfg.firstRunError) {
			t.Fatalf("first run: got %v, want %v", err, cfg.firstRunError)
		}
		if w := watermark(t, cat, ident); w != "" {
			t.Fatalf("failed first run left watermark %q", w)
		}
		if tbl, _ := cat.Load(ctx, ident); tbl != nil && tbl.CurrentSnapshot() != nil {
			t.Fatalf("failed first run committed snapshot %d", tbl.CurrentSnapshot().SnapshotID)
		}
		return
	}
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	if !res.Created || !res.Migrated || res.MigratedVersion != start || res.Watermark != start || len(res.Batches) != 0 {
		t.Fatalf("first run: %+v", res)
	}
	model, names := deltaRows(t, src, start)
	check := func(v int64, want [][]string) {
		t.Helper()
		got := icebergRows(t, cat, ident, names)
		if d := diffRows(got, want); d != "" {
			t.Fatalf("after syncing version %d, the Iceberg table differs from the Delta snapshot:\n%s", v, d)
		}
		if w := watermark(t, cat, ident); w != strconv.FormatInt(v, 10) {
			t.Fatalf("after syncing version %d the watermark is %q", v, w)
		}
	}
	check(start, model)
	opts.Start, opts.EqualityColumns = delta.Bound{}, nil // the table's identifier fields from now on
	for v := start + 1; v <= latest; v++ {
		opts.End = delta.AtVersion(v)
		before := tableState(t, cat, ident)
		res, err := Sync(ctx, cat, src, ident, opts)
		if cfg.failError != nil && v >= cfg.failAt {
			if !errors.Is(err, cfg.failError) {
				t.Fatalf("version %d: got error %v, want %v", v, err, cfg.failError)
			}
			if after := tableState(t, cat, ident); after != before {
				t.Fatalf("version %d: failed run committed (metadata %s, was %s)", v, after, before)
			}
			check(cfg.failAt-1, model)
			continue
		}
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if res.StartWatermark != v-1 || res.Watermark != v || len(res.Batches) != 1 || !res.Committed {
			t.Fatalf("version %d: %+v", v, res)
		}
		model = replayChanges(t, src, v, model, names)
		snap, _ := deltaRows(t, src, v)
		if why, ok := cfg.inconsistent[v]; ok {
			if diffRows(model, snap) == "" {
				t.Fatalf("version %d is listed as inconsistent (%s), but its change data gives its snapshot", v, why)
			}
			check(v, model)
			// The sync follows the change data; the next check starts over
			// from the snapshot only when the two agree again.
			continue
		}
		if d := diffRows(model, snap); d != "" {
			t.Fatalf("version %d: replaying the change data literally does not give the snapshot:\n%s", v, d)
		}
		check(v, snap)
	}
	// Nothing new: no commit.
	before := tableState(t, cat, ident)
	opts.End = delta.Bound{}
	res, err = Sync(ctx, cat, src, ident, opts)
	if cfg.failError != nil {
		if !errors.Is(err, cfg.failError) {
			t.Fatalf("final run: got %v, want %v", err, cfg.failError)
		}
	} else if err != nil || res.Committed || len(res.Batches) != 0 {
		t.Fatalf("run with nothing new: %+v, %v", res, err)
	}
	if after := tableState(t, cat, ident); after != before {
		t.Fatalf("run with nothing new committed (metadata %s, was %s)", after, before)
	}
}

// replayChanges applies the change rows of version v to rows literally: a
// delete or pre-image removes one equal row, an insert or post-image adds
// one. It is the Change Data Feed's own account of the snapshot, with no
// keys involved.
func replayChanges(t *testing.T, src *delta.Table, v int64, rows [][]string, names []string) [][]string {
	t.Helper()
	schema, seq, err := src.Changes(context.Background(), delta.ChangesOptions{Start: delta.AtVersion(v), End: delta.AtVersion(v)})
	if err != nil {
		t.Fatalf("changes of version %d: %v", v, err)
	}
	changes, err := drain(schema, seq, append(append([]string{}, names...), "_change_type"))
	if err != nil {
		t.Fatalf("changes of version %d: %v", v, err)
	}
	out := append([][]string{}, rows...)
	for _, c := range changes {
		row, kind := c[:len(names)], c[len(names)]
		switch kind {
		case `"insert"`, `"update_postimage"`:
			out = append(out, row)
		case `"delete"`, `"update_preimage"`:
			found := false
			for i, r := range out {
				if strings.Join(r, "\x00") == strings.Join(row, "\x00") {
					out = append(out[:i], out[i+1:]...)
					found = true
					break
				}
			}
			if !found {
				t.Logf("version %d: %s of a row that is not there: %v", v, kind, row)
			}
		default:
			t.Fatalf("version %d: change type %s", v, kind)
		}
	}
	return out
}

// diffRows compares rows as multisets.
func diffRows(got, want [][]string) string {
	return deltatestDiff(got, want)
}
