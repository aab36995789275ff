package scan_test

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/testdir"
)

func openFixture(t *testing.T, folder, metadata string) *table.Table {
	t.Helper()
	root := testdir.Shared(t, "iceberg", folder)
	tbl, err := catalog.OpenTableAt(context.Background(), table.Identifier{"fixture", filepath.Base(folder)}, metadata, root)
	if err != nil {
		t.Fatalf("open %s: %v", metadata, err)
	}
	return tbl
}

func readAll(t *testing.T, tbl *table.Table, opts scan.Options) ([]string, error) {
	t.Helper()
	_, seq, err := scan.Rows(context.Background(), tbl, opts)
	if err != nil {
		return nil, err
	}
	return rows.FormatSorted(seq)
}

// snapshotsInOrder lists a table's snapshots by sequence number.
func snapshotsInOrder(tbl *table.Table) []table.Snapshot {
	snaps := append([]table.Snapshot(nil), tbl.Metadata().Snapshots()...)
	sort.Slice(snaps, func(i, j int) bool {
		return snaps[i].SequenceNumber < snaps[j].SequenceNumber || (snaps[i].SequenceNumber == snaps[j].SequenceNumber && snaps[i].TimestampMs < snaps[j].TimestampMs)
	})
	return snaps
}

func TestSparkEqualityDeletes(t *testing.T) {
	for _, tc := range []struct {
		name, metadata string
		current        string
		counts         []int
		broken         int64 // a snapshot whose manifest list is missing upstream
	}{
		{
			name:     "mytable",
			metadata: "data/persistent/equality_deletes/warehouse/mydb/mytable/metadata/v7.metadata.json",
			current:  "('d',4) ('e',5)",
			counts:   []int{4, 2, 1, 3, 2},
			broken:   7342794868382145167,
		},
		{
			name:     "mytable_partitioned",
			metadata: "data/persistent/equality_deletes/warehouse/mydb/mytable_partitioned/metadata/v6.metadata.json",
			current:  "('a',1) ('d',4) ('e',5)",
			counts:   []int{4, 3, 2, 4, 3},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := openFixture(t, "duckdb_equality_deletes", tc.metadata)
			got, err := readAll(t, tbl, scan.Options{Columns: []string{"name", "id"}})
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tc.current {
				t.Errorf("current rows %s, want %s", g, tc.current)
			}
			var counts []int
			for _, s := range snapshotsInOrder(tbl) {
				id := s.SnapshotID
				rowsAt, err := readAll(t, tbl, scan.Options{At: scan.At{SnapshotID: &id}})
				if id == tc.broken {
					if err == nil {
						t.Errorf("snapshot %d has no manifest list upstream; reading it must fail", id)
					} else if !strings.Contains(err.Error(), "snap-7342794868382145167") {
						t.Errorf("error for the missing manifest list should name it: %v", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("snapshot %d: %v", id, err)
				}
				counts = append(counts, len(rowsAt))
			}
			if len(counts) != len(tc.counts) {
				t.Fatalf("counts %v, want %v", counts, tc.counts)
			}
			for i := range counts {
				if counts[i] != tc.counts[i] {
					t.Errorf("counts %v, want %v", counts, tc.counts)
					break
				}
			}
		})
	}
}

func TestSparkLineitem(t *testing.T) {
	tbl := openFixture(t, "duckdb_lineitem_iceberg/data/persistent/iceberg", "lineitem_iceberg/metadata/v2.metadata.json")
	var counts []int
	for _, s := range snapshotsInOrder(tbl) {
		id := s.SnapshotID
		got, err := readAll(t, tbl, scan.Options{At: scan.At{SnapshotID: &id}, Columns: []string{"l_orderkey", "l_linenumber"}})
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, len(got))
	}
	if len(counts) != 2 || counts[0] != 60175 || counts[1] != 51793 {
		t.Errorf("row counts per snapshot %v, want [60175 51793]", counts)
	}
}

func TestHivePartitionColumnsFromManifests(t *testing.T) {
	tbl := openFixture(t, "duckdb_hive_partitioned_table", "data/persistent/hive_partitioned_table/metadata/v4.metadata.json")
	got, err := readAll(t, tbl, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 {
		t.Fatalf("got %d rows, want 6: %v", len(got), got)
	}
	sc := tbl.Schema()
	dateCol, typeCol := -1, -1
	for i, f := range sc.Fields() {
		switch f.Name {
		case "event_date":
			dateCol = i
		case "event_type":
			typeCol = i
		}
	}
	if dateCol < 0 || typeCol < 0 {
		t.Fatalf("schema lacks the partition columns: %s", sc)
	}
	for _, r := range got {
		if strings.Contains(r, "NULL") {
			t.Errorf("row %s has NULLs: partition columns must come from the manifests", r)
		}
	}
	t.Logf("rows: %v", got)
}

func TestInvalidDeletionVectorIsRejected(t *testing.T) {
	tbl := openFixture(t, "duckdb_legacy_bare_deletion_vector", "data/persistent/legacy_bare_deletion_vector/warehouse/default/legacy_bare_deletion_vector/metadata/00002-legacy-bare-dv.metadata.json")
	got, err := readAll(t, tbl, scan.Options{})
	if err == nil {
		t.Fatalf("an invalid deletion vector was read as valid; rows %v", got)
	}
	if !strings.Contains(strings.ToLower(err.Error()), "deletion vector") {
		t.Errorf("error should say the deletion vector is invalid: %v", err)
	}
	t.Logf("error: %v", err)
}
