package delta

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestListLog checks which _delta_log entries count: commits, checkpoints of
// each layout (complete multi-part sets only), nothing else.
func TestListLog(t *testing.T) {
	dir := t.TempDir()
	logDir := filepath.Join(dir, "_delta_log")
	names := []string{
		"00000000000000000000.json",
		"00000000000000000001.json",
		"00000000000000000002.json",
		"00000000000000000002.checkpoint.parquet",
		"00000000000000000003.json",
		"00000000000000000003.checkpoint.0000000001.0000000002.parquet",
		"00000000000000000003.checkpoint.0000000002.0000000002.parquet",
		"00000000000000000004.json",
		"00000000000000000004.checkpoint.0000000001.0000000003.parquet",
		"00000000000000000004.checkpoint.0000000003.0000000003.parquet",
		"00000000000000000005.json",
		"00000000000000000005.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json",
		"00000000000000000000.00000000000000000003.compacted.json",
		"00000000000000000005.crc",
		"_last_checkpoint",
		"0000000000000000006.json",                  // 19 digits
		"00000000000000000007.checkpoint.x.parquet", // not a UUID
		".00000000000000000005.json.crc",
	}
	if err := os.MkdirAll(filepath.Join(logDir, "_sidecars"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(logDir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tbl := &Table{root: tableRoot{path: filepath.ToSlash(dir)}, fs: LocalFS{}}
	l, err := tbl.listLog(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := l.versions; len(got) != 6 || got[0] != 0 || got[5] != 5 {
		t.Fatalf("commit versions %v", got)
	}
	type cp struct {
		v     int64
		kind  checkpointKind
		files int
	}
	want := []cp{{2, checkpointClassic, 1}, {3, checkpointMultiPart, 2}, {5, checkpointV2, 1}}
	if len(l.checkpoints) != len(want) {
		t.Fatalf("checkpoints %+v", l.checkpoints)
	}
	for i, w := range want {
		c := l.checkpoints[i]
		if c.version != w.v || c.kind != w.kind || len(c.files) != w.files {
			t.Errorf("checkpoint %d: %d/%d/%d, want %+v", i, c.version, c.kind, len(c.files), w)
		}
	}
	if _, ok := l.incomplete[4]; !ok {
		t.Error("the incomplete 3-part checkpoint at 4 must be recorded as ignored")
	}
	if l.latest() != 5 || l.earliest() != 0 {
		t.Errorf("latest %d earliest %d", l.latest(), l.earliest())
	}
	seg, err := tbl.segment(l, 4)
	if err != nil {
		t.Fatal(err)
	}
	if seg.checkpoint == nil || seg.checkpoint.version != 3 || len(seg.commits) != 1 || seg.versions[0] != 4 {
		t.Errorf("segment of 4: checkpoint %+v commits %v", seg.checkpoint, seg.versions)
	}
}
