package merge_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// partRows builds change rows (id, v, p, _change_type) for ids with the
// given partition values and kinds.
func partRows(ids, parts []int64, kinds []string, tag string) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "p", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String},
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		if kinds[i] == merge.Delete {
			// No before-image: the table says where the row is.
			b.Field(1).AppendNull()
			b.Field(2).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", tag, id))
			b.Field(2).(*array.Int64Builder).Append(parts[i])
		}
		b.Field(3).(*array.StringBuilder).Append(kinds[i])
	}
	return b.NewRecordBatch()
}

// TestEqualityDeletesPerPartition: on tables partitioned outside the key,
// equality deletes are filed under the partitions (and specs) of the data
// files holding the keys, one file per touched partition holding the key
// column only, and the table reads back (through floe's reader and
// iceberg-go's) as the same changes applied copy-on-write give it, over
// rounds of changes that move rows between many partitions, including
// tables whose spec evolved under their data.
func TestEqualityDeletesPerPartition(t *testing.T) {
	layouts := []struct {
		name      string
		partition string
		evolve    []tableops.Alter // after the first two appends each
	}{
		{"identity", "p", nil},
		{"bucket-of-non-key", "bucket(5, p)", nil},
		{"evolved", "bucket(3, p)", []tableops.Alter{{DropPartitionFields: []string{"bucket(3, p)"}, AddPartitionFields: []string{"p"}}}},
		{"evolved-from-unpartitioned", "", []tableops.Alter{{AddPartitionFields: []string{"truncate(4, p)"}}, {AddPartitionFields: []string{"bucket(2, v)"}}}},
		// The current spec is derived from the key: its files take deletes
		// without a read; those of the older spec are read.
		{"evolved-to-key", "p", []tableops.Alter{{DropPartitionFields: []string{"p"}, AddPartitionFields: []string{"bucket(4, id)"}}}},
	}
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(l.name))))
			e := tabletest.New(t)
			tables := []string{"cow", "eq"}
			for _, n := range tables {
				if _, err := e.Create(n, "id long not null, v string, p long", l.partition, nil, iceberg.Properties{"format-version": "2"}); err != nil {
					t.Fatal(err)
				}
			}
			apply := func(name string, rec arrow.RecordBatch, mode merge.DeleteMode) *merge.Result {
				t.Helper()
				res, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, rec.Schema(), seqOf(rec), []string{"id"}, merge.WithDeleteMode(mode))
				if err != nil {
					t.Fatalf("apply to %s: %v", name, err)
				}
				return res
			}
			// Initial rows in several appends (so a partition has several
			// files), the spec evolving between them.
			const perAppend, nParts = 150, 23
			live := map[int64]bool{}
			next := int64(0)
			for a := 0; a < 2+2*len(l.evolve); a++ {
				if a >= 2 && a%2 == 0 {
					for _, n := range tables {
						if _, err := tableops.AlterTable(e.Ctx, e.Cat, e.Target(n, "").Ident, l.evolve[a/2-1]); err != nil {
							t.Fatal(err)
						}
					}
				}
				var ids, parts []int64
				var kinds []string
				for range perAppend {
					ids = append(ids, next)
					parts = append(parts, rng.Int64N(nParts))
					kinds = append(kinds, merge.Insert)
					live[next] = true
					next++
				}
				rec := partRows(ids, parts, kinds, "init")
				for _, n := range tables {
					apply(n, rec, merge.DeleteAuto)
				}
				rec.Release()
			}
			if specs := len(e.Load("eq").Metadata().PartitionSpecs()); specs < 1+len(l.evolve) {
				t.Fatalf("the table has %d partition specs, want at least %d", specs, 1+len(l.evolve))
			}
			for round := range 3 {
				// Changes spread over the whole table: updates moving rows to
				// random partitions, deletes, inserts of new keys.
				var ids, parts []int64
				var kinds []string
				var deleted, updated int64
				for id := range next {
					if !live[id] || rng.IntN(4) != 0 {
						continue
					}
					ids = append(ids, id)
					parts = append(parts, rng.Int64N(nParts))
					if rng.IntN(3) == 0 {
						kinds = append(kinds, merge.Delete)
						delete(live, id)
						deleted++
					} else {
						kinds = append(kinds, merge.UpdateAfter)
						updated++
					}
				}
				for range 40 {
					ids = append(ids, next)
					parts = append(parts, rng.Int64N(nParts))
					kinds = append(kinds, merge.Insert)
					live[next] = true
					next++
				}
				tag := fmt.Sprint("r", round)
				rec := partRows(ids, parts, kinds, tag)
				apply("cow", rec, merge.DeleteAuto)
				before := e.Load("eq")
				res := apply("eq", rec, merge.DeleteEquality)
				rec.Release()
				if res.Upserts != updated+40 || res.Deletes != deleted {
					t.Fatalf("round %d: %d upserts and %d deletes, want %d and %d", round, res.Upserts, res.Deletes, updated+40, deleted)
				}
				after := e.Load("eq")
				checkEqualityDeleteFiles(t, e, before, after, int64(len(ids))-40)

				want, err := e.Rows(e.Load("cow"), scan.At{})
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(live) {
					t.Fatalf("round %d: copy-on-write table has %d rows, want %d", round, len(want), len(live))
				}
				got, err := e.Rows(after, scan.At{})
				if err != nil {
					t.Fatal(err)
				}
				if d := diffRows(got, want); d != "" {
					t.Fatalf("round %d: equality deletes give a table other than copy-on-write's: %s", round, d)
				}
				if d := diffRows(icebergGoRows(t, after), want); d != "" {
					t.Fatalf("round %d: iceberg-go reads a table other than copy-on-write's: %s", round, d)
				}
			}
		})
	}
}

// checkEqualityDeleteFiles checks the equality delete files the snapshot
// of after added over before: each holds the id column only (equality
// field id of id), is filed under the spec and partition of a data file of
// before that holds one of its keys, at most one per (spec, partition) in
// the partitions not derived from the key, and together they hold at
// one and at most maxKeys keys (the changed keys of the table: each is
// in one live row).
func checkEqualityDeleteFiles(t *testing.T, e *tabletest.Env, before, after *table.Table, maxKeys int64) {
	t.Helper()
	idField, _ := after.Schema().FindFieldByName("id")
	files := map[string]iceberg.DataFile{}
	dataParts := map[string]bool{}
	old := map[string]bool{}
	tasks, err := scan.Plan(e.Ctx, before, before.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		dataParts[partOf(task.File)] = true
		for _, f := range task.Deletes.Eq {
			old[f.FilePath()] = true
		}
	}
	tasks, err = scan.Plan(e.Ctx, after, after.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		for _, f := range task.Deletes.Eq {
			files[f.FilePath()] = f
		}
	}
	perPart := map[string]int{}
	var keys, keyedKeys int64
	for _, f := range files {
		if old[f.FilePath()] {
			continue
		}
		if ids := f.EqualityFieldIDs(); !slices.Equal(ids, []int{idField.ID}) {
			t.Fatalf("equality delete file %s has equality ids %v, want [%d]", f.FilePath(), ids, idField.ID)
		}
		if len(f.ValueCounts()) != 1 {
			t.Fatalf("equality delete file %s has statistics of %d columns, want the key column only", f.FilePath(), len(f.ValueCounts()))
		}
		spec := after.Metadata().PartitionSpecByID(int(f.SpecID()))
		if spec == nil {
			t.Fatalf("equality delete file %s has unknown spec %d", f.FilePath(), f.SpecID())
		}
		keyDerived := !spec.IsUnpartitioned()
		for _, pf := range spec.Fields() {
			if pf.SourceID() != idField.ID {
				keyDerived = false
			}
		}
		if keyDerived {
			// A row per changed key, new ones included.
			keyedKeys += f.Count()
			continue
		}
		{
			// Filed where a data file is: no partition without rows.
			if !dataParts[partOf(f)] {
				t.Fatalf("equality delete file %s is filed under %s, where no data file is", f.FilePath(), partOf(f))
			}
			perPart[partOf(f)]++
			if perPart[partOf(f)] > 1 {
				t.Fatalf("two equality delete files in %s", partOf(f))
			}
		}
		keys += f.Count()
	}
	if keys == 0 || keys > maxKeys {
		t.Fatalf("equality delete files filed by data file hold %d keys, want 1..%d", keys, maxKeys)
	}
	if keyedKeys > maxKeys+40 {
		t.Fatalf("equality delete files filed by key hold %d keys, want at most %d", keyedKeys, maxKeys+40)
	}
}

// partOf renders a file's spec and partition tuple.
func partOf(f iceberg.DataFile) string {
	p := f.Partition()
	var ks []int
	for k := range p {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var b strings.Builder
	fmt.Fprintf(&b, "spec %d", f.SpecID())
	for _, k := range ks {
		fmt.Fprintf(&b, " %d=%v", k, p[k])
	}
	return b.String()
}

// icebergGoRows reads the table through iceberg-go's own scan, deletes
// applied, as sorted tuples.
func icebergGoRows(t *testing.T, tbl *table.Table) []string {
	t.Helper()
	_, recs, err := tbl.Scan().ToArrowRecords(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, err := rows.FormatSorted(recs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
