package main_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/pqdamage"
)

// TestDamagedDataFile: table scan, changelog, apply (copy-on-write), table
// compact, delete and update, merge and sync from a table whose Parquet
// data file is damaged exit 1 with
// an error naming the table, the file and what is wrong, and no runtime
// trace; nothing is committed. Before, a footer with a column chunk of
// negative length made arrow-go panic in a goroutine of iceberg-go's scan,
// and floe crashed with a trace.
func TestDamagedDataFile(t *testing.T) {
	work := t.TempDir()
	var rows strings.Builder
	for i := 1; i <= 6000; i++ {
		fmt.Fprintf(&rows, "{\"id\":%d,\"v\":\"value %d\"}\n", i, i*104729)
	}
	files := map[string]string{
		"rows.jsonl":    rows.String(),
		"changes.jsonl": `{"id":7,"v":"changed","_change_type":"UPDATE_AFTER"}` + "\n",
		"merge.jsonl":   `{"id":8,"v":"merged"}` + "\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"namespace", "create", "s"},
		{"table", "create", "s.t", "--schema", "id long not null, v string", "--identifier", "id", "--property", "write.delete.mode=merge-on-read"},
		{"table", "append", "s.t", "rows.jsonl"},
		{"table", "delete", "s.t", "--where", "id = 3"},
		{"table", "create", "s.dst", "--schema", "id long not null, v string", "--identifier", "id"},
	} {
		if out := runFloe(t, work, args); !strings.HasPrefix(out, "exit 0") {
			t.Fatalf("floe %s: %s", strings.Join(args, " "), out)
		}
	}
	// The data file is the largest Parquet file of the table.
	var path string
	var size int64
	err := filepath.WalkDir(filepath.Join(work, "wh"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Size() > size {
			path, size = p, info.Size()
		}
		return err
	})
	if err != nil || path == "" {
		t.Fatalf("no data file: %v", err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The file as runFloe prints it.
	rel, err := filepath.Rel(work, path)
	if err != nil {
		t.Fatal(err)
	}
	named := "corrupt data file: table s.t: file://<WORK>/" + uuidRe.ReplaceAllString(filepath.ToSlash(rel), "<UUID>") + ": "
	snapshots := func() string {
		return runFloe(t, work, []string{"table", "snapshots", "s.t", "--format", "jsonl"}) +
			runFloe(t, work, []string{"table", "snapshots", "s.dst", "--format", "jsonl"})
	}
	before := snapshots()
	for _, d := range []struct {
		name   string
		damage func([]byte) ([]byte, error)
		want   string
	}{
		{"truncated", pqdamage.Truncate, "does not end with the Parquet magic bytes"},
		{"garbage metadata", pqdamage.GarbageFooter, "footer metadata does not parse"},
		{"negative column chunk length", pqdamage.NegativeChunk, "outside the file"},
	} {
		bad, err := d.damage(good)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"table", "scan", "s.t"},
			{"changelog", "s.t"},
			{"apply", "s.t", "--changes", "changes.jsonl", "--key", "id"},
			{"table", "compact", "s.t"},
			{"table", "delete", "s.t", "--where", "id = 5"},
			{"table", "update", "s.t", "--set", "v = 'x'", "--where", "id = 6"},
			{"merge", "MERGE INTO s.t t USING 'merge.jsonl' s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *"},
			{"sync", "s.t", "s.dst", "--key", "id"},
		} {
			out := runFloe(t, work, args)
			for _, bad := range []string{"goroutine ", "runtime.", "panic"} {
				if strings.Contains(out, bad) {
					t.Fatalf("%s: floe %s: the output holds %q:\n%.3000s", d.name, strings.Join(args, " "), bad, out)
				}
			}
			if !strings.HasPrefix(out, "exit 1") {
				t.Errorf("%s: floe %s: want exit 1, got\n%.2000s", d.name, strings.Join(args, " "), out)
			}
			for _, s := range []string{named, d.want} {
				if !strings.Contains(out, s) {
					t.Errorf("%s: floe %s: the error does not say %q:\n%.2000s", d.name, strings.Join(args, " "), s, out)
				}
			}
		}
		if got := snapshots(); got != before {
			t.Fatalf("%s: a failed command committed:\n%s\nbefore:\n%s", d.name, got, before)
		}
	}
}
