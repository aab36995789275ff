package merge

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

// keyRecord builds a record (id long, name string) of the given keys.
func keyRecord(ids []int64, names []string) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	b.Field(1).(*array.StringBuilder).AppendValues(names, nil)
	return b.NewRecordBatch()
}

// TestKeyIndex inserts keys, duplicates among them, and finds them again,
// with the real hash and with hashes that collide, so that every match
// must be confirmed value by value.
func TestKeyIndex(t *testing.T) {
	// Two-column keys; (1,"a") appears twice, (1,"b") and (2,"a") differ
	// from it in one column only.
	ids := []int64{1, 1, 2, 1, 3, 4, 5, 6, 7, 8, 9, 10}
	names := []string{"a", "b", "a", "a", "c", "d", "e", "f", "g", "h", "i", "j"}
	wantSlot := []int32{0, 1, 2, 0, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct {
		name string
		hash func(real uint64) uint64
	}{
		{"real hash", func(h uint64) uint64 { return h }},
		{"every hash equal", func(uint64) uint64 { return 42 }},
		{"two hashes", func(h uint64) uint64 { return h & 1 }},
		{"equal low bits", func(h uint64) uint64 { return h << 40 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := keyRecord(ids, names)
			defer rec.Release()
			cols := []int{0, 1}
			x := newKeyIndex([]arrow.RecordBatch{rec}, cols, len(ids))
			defer x.release()
			hashes := rows.HashKeys(rec, cols, nil)
			seen := map[int32]bool{}
			for i := range ids {
				slot, added := x.insert(c.hash(hashes[i]), 0, i)
				if slot != wantSlot[i] || added == seen[wantSlot[i]] {
					t.Errorf("insert row %d (%d,%s): slot %d added %v, want slot %d added %v", i, ids[i], names[i], slot, added, wantSlot[i], !seen[wantSlot[i]])
				}
				seen[wantSlot[i]] = true
			}
			if len(x.rowOf) != 11 {
				t.Errorf("%d slots, want 11 distinct keys", len(x.rowOf))
			}
			// Look the keys up from another record, plus keys not inserted.
			probe := keyRecord([]int64{2, 1, 10, 2, 11, 1}, []string{"a", "a", "j", "b", "a", "c"})
			defer probe.Release()
			ph := rows.HashKeys(probe, cols, nil)
			for i, want := range []int32{2, 0, 10, -1, -1, -1} {
				if got := x.find(c.hash(ph[i]), probe, i); got != want {
					t.Errorf("find row %d of the probe: slot %d, want %d", i, got, want)
				}
			}
		})
	}
}
