package delta_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/testdir"
)

// copyTable copies a shared fixture table into a temporary directory, so a
// test can damage it.
func copyTable(t *testing.T, name string) string {
	t.Helper()
	src := testdir.Shared(t, "delta", name)
	dst := filepath.Join(t.TempDir(), name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func logFile(dir string, v int) string {
	return filepath.Join(dir, "_delta_log", strings.Repeat("0", 20-len(itoa(v)))+itoa(v)+".json")
}

func itoa(v int) string {
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v /= 10 {
		b = append([]byte{byte('0' + v%10)}, b...)
	}
	return string(b)
}

// editFile rewrites a file through f.
func editFile(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readAllChanges reads the whole change feed from version start, returning
// the first error (from Changes or from the sequence).
func readAllChanges(dir string, start int64) error {
	tbl, err := delta.Open(context.Background(), dir)
	if err != nil {
		return err
	}
	schema, seq, err := tbl.Changes(context.Background(), delta.ChangesOptions{Start: delta.AtVersion(start)})
	if err != nil {
		return err
	}
	_, err = deltatest.Rows(schema, seq, nil)
	return err
}

// readSnapshot reads all rows of the snapshot at version (latest when < 0).
func readSnapshot(dir string, version int64) error {
	ctx := context.Background()
	tbl, err := delta.Open(ctx, dir)
	if err != nil {
		return err
	}
	var s *delta.Snapshot
	if version < 0 {
		s, err = tbl.LatestSnapshot(ctx)
	} else {
		s, err = tbl.Snapshot(ctx, version)
	}
	if err != nil {
		return err
	}
	schema, seq, err := s.Scan(ctx, delta.ScanOptions{})
	if err != nil {
		return err
	}
	_, err = deltatest.Rows(schema, seq, nil)
	return err
}

// TestCorruptTables damages copies of fixture tables and checks that each
// damage is reported with the right sentinel and a message that says where.
func TestCorruptTables(t *testing.T) {
	tests := []struct {
		name   string
		table  string
		damage func(t *testing.T, dir string)
		read   func(dir string) error
		want   error
		// mention lists what the message must name.
		mention []string
	}{
		{
			name:  "truncated JSON line",
			table: "deltars-cdf-table",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 1), func(b []byte) []byte {
					lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
					last := lines[len(lines)-1]
					lines[len(lines)-1] = last[:len(last)/2]
					return bytes.Join(lines, []byte("\n"))
				})
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrCorruptLog,
			mention: []string{"00000000000000000001.json", "line 13"},
		},
		{
			name:  "truncated JSON line in a snapshot",
			table: "deltars-cdf-table",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 2), func(b []byte) []byte { return b[:len(b)-40] })
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrCorruptLog,
			mention: []string{"00000000000000000002.json", "line"},
		},
		{
			name:  "checkpoint missing after log cleanup",
			table: "deltars-checkpoint-cdf-table",
			damage: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "_delta_log", "00000000000000000003.checkpoint.parquet")); err != nil {
					t.Fatal(err)
				}
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrVersionNotFound,
			mention: []string{"cleaned up", "version 3"},
		},
		{
			name:  "missing data file",
			table: "deltars-cdf-table-non-partitioned",
			damage: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "part-00000-a9118234-f574-4613-b674-deb4d1b82aee-c000.snappy.parquet")); err != nil {
					t.Fatal(err)
				}
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrFileNotFound,
			mention: []string{"part-00000-a9118234-f574-4613-b674-deb4d1b82aee-c000.snappy.parquet", "version"},
		},
		{
			name:  "missing change data file",
			table: "deltars-cdf-table-non-partitioned",
			damage: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "_change_data", "cdc-00000-4a1d2de0-dda2-4651-8239-f53ca8761e0e.c000.snappy.parquet")); err != nil {
					t.Fatal(err)
				}
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrFileNotFound,
			mention: []string{"change data file", "cdc-00000-4a1d2de0"},
		},
		{
			name:  "unknown reader feature",
			table: "deltars-table-with-dv-small",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 0), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"readerFeatures":["deletionVectors"]`), []byte(`"readerFeatures":["deletionVectors","fancyNewThing"]`), 1)
				})
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrUnsupportedFeature,
			mention: []string{"fancyNewThing", "deltars-table-with-dv-small"},
		},
		{
			name:  "unknown reader version",
			table: "deltars-cdf-table",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 0), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"minReaderVersion":1`), []byte(`"minReaderVersion":4`), 1)
				})
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrUnsupportedFeature,
			mention: []string{"reader version 4", "deltars-cdf-table"},
		},
		{
			name:  "deletion vector with a bad CRC",
			table: "deltars-table-with-dv-small",
			damage: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"), func(b []byte) []byte {
					b[len(b)-1] ^= 0xFF // last byte of the CRC
					return b
				})
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrCorruptDeletionVector,
			mention: []string{"CRC-32", "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"},
		},
		{
			name:  "deletion vector with a damaged bitmap",
			table: "deltars-table-with-dv-small",
			damage: func(t *testing.T, dir string) {
				editFile(t, filepath.Join(dir, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"), func(b []byte) []byte {
					b[1+4+10] ^= 0x01 // a byte inside the bitmap
					return b
				})
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrCorruptDeletionVector,
			mention: []string{"CRC-32"},
		},
		{
			name:  "deletion vector size does not match its descriptor",
			table: "deltars-table-with-dv-small",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 1), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"sizeInBytes":36`), []byte(`"sizeInBytes":35`), 1)
				})
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrCorruptDeletionVector,
			mention: []string{"sizeInBytes 35"},
		},
		{
			name:  "inline deletion vector that is not Z85",
			table: "kernelrs-cdf-table-with-dv",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 3), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`^Bg9^0rr91`), []byte(`~Bg9^0rr91`), 1)
				})
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrCorruptDeletionVector,
			mention: []string{"inline deletion vector", "invalid z85 character"},
		},
		{
			name:  "path escaping the table root",
			table: "deltars-cdf-table-non-partitioned",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 4), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"path":"part-`), []byte(`"path":"../../etc/part-`), 1)
				})
			},
			read:    func(dir string) error { return readSnapshot(dir, -1) },
			want:    delta.ErrPathEscapesRoot,
			mention: []string{"../../etc/part-", "version 4"},
		},
		{
			name:  "absolute path outside the table root",
			table: "deltars-cdf-table-non-partitioned",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 4), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"path":"part-`), []byte(`"path":"file:///tmp/elsewhere/part-`), 1)
				})
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrPathEscapesRoot,
			mention: []string{"file:///tmp/elsewhere/part-"},
		},
		{
			name:  "data file that is not Parquet",
			table: "deltars-cdf-table-non-partitioned",
			damage: func(t *testing.T, dir string) {
				if err := os.WriteFile(filepath.Join(dir, "part-00000-a9118234-f574-4613-b674-deb4d1b82aee-c000.snappy.parquet"), []byte("not parquet"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrCorruptDataFile,
			mention: []string{"part-00000-a9118234"},
		},
		{
			name:  "action with a field of the wrong type",
			table: "deltars-cdf-table",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 3), func(b []byte) []byte {
					return bytes.Replace(b, []byte(`"size":`), []byte(`"size":"big",`+`"x":`), 1)
				})
			},
			read:    func(dir string) error { return readAllChanges(dir, 0) },
			want:    delta.ErrCorruptLog,
			mention: []string{"00000000000000000003.json", "line"},
		},
		{
			name:  "partition value that does not parse",
			table: "deltars-cdf-table",
			damage: func(t *testing.T, dir string) {
				editFile(t, logFile(dir, 3), func(b []byte) []byte {
					return bytes.ReplaceAll(b, []byte(`"birthday":"2023-12-29"`), []byte(`"birthday":"2023-13-45"`))
				})
			},
			read:    func(dir string) error { return readAllChanges(dir, 3) },
			want:    delta.ErrCorruptLog,
			mention: []string{`"2023-13-45"`, "birthday", "version 3"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTable(t, tc.table)
			if err := tc.read(dir); err != nil {
				t.Fatalf("undamaged copy does not read: %v", err)
			}
			tc.damage(t, dir)
			err := tc.read(dir)
			if !errors.Is(err, tc.want) {
				t.Fatalf("want an error wrapping %v, got %v", tc.want, err)
			}
			t.Logf("%v", err)
			for _, m := range tc.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}
