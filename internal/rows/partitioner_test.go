package rows_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/rows"
)

// TestPartitioner feeds batches with repeated keys (NULLs included) to a
// partitioner, in memory and spilling, and checks what Partitions hands
// back: every row exactly once, all rows of a key in one partition, and
// the rows of a partition in the order they were added.
func TestPartitioner(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
		{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	var batches []arrow.RecordBatch
	seq := 0
	for b := range 7 {
		var data [][]any
		for range 50 + 13*b {
			var k any = int64(seq % 37)
			if seq%11 == 0 {
				k = nil
			}
			var s any = fmt.Sprintf("v%d", seq%5)
			if seq%7 == 0 {
				s = nil
			}
			data = append(data, []any{seq, k, s})
			seq++
		}
		batches = append(batches, arrowtest.Record(sch, data))
	}
	// One batch whose rows all have one key, so it goes whole to one
	// partition.
	batches = append(batches, arrowtest.Record(sch, [][]any{{seq, 5, "x"}, {seq + 1, 5, "y"}}))
	seq += 2
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	for _, tc := range []struct {
		name      string
		budget    int64
		keyCols   []int
		wantSpill bool
	}{
		{"in memory, key k", 0, []int{1}, false},
		{"spill every batch, key k", 1, []int{1}, true},
		{"spill sometimes, key k and s", 4000, []int{1, 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := rows.NewPartitioner(sch, tc.keyCols, tc.budget, t.TempDir())
			defer p.Close()
			for _, b := range batches {
				if err := p.Add(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			if p.Spilled() != tc.wantSpill {
				t.Fatalf("spilled = %t, want %t", p.Spilled(), tc.wantSpill)
			}
			seen := make([]int, seq)
			partOfKey := map[string]int{}
			part := 0
			for recs, err := range p.Partitions() {
				if err != nil {
					t.Fatal(err)
				}
				last := int64(-1)
				for _, rec := range recs {
					if !arrow.TypeEqual(rec.Column(2).DataType(), arrow.BinaryTypes.String) {
						t.Fatalf("column s came back as %s", rec.Column(2).DataType())
					}
					seqs := rec.Column(0).(*array.Int64)
					for i := range seqs.Len() {
						v := seqs.Value(i)
						if v <= last {
							t.Fatalf("partition %d: row %d after row %d: order lost", part, v, last)
						}
						last = v
						seen[v]++
						key := string(rows.AppendKey(nil, rec, tc.keyCols, i))
						if q, ok := partOfKey[key]; ok && q != part {
							t.Fatalf("key %q in partitions %d and %d", key, q, part)
						}
						partOfKey[key] = part
					}
					rec.Release()
				}
				part++
			}
			if i := slices.IndexFunc(seen, func(n int) bool { return n != 1 }); i >= 0 {
				t.Fatalf("row %d came back %d times", i, seen[i])
			}
			if part < 2 {
				t.Fatalf("%d partitions for %d keys: rows are not spread", part, len(partOfKey))
			}
		})
	}
}

// TestPartitionerValues checks that spilled rows come back with their
// values, not only their count.
func TestPartitionerValues(t *testing.T) {
	sch := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec := arrowtest.Record(sch, [][]any{{1, "a"}, {2, nil}, {3, "ccc"}, {1, "d"}, {4, ""}})
	defer rec.Release()
	want := arrowtest.Strings(rec)
	for _, budget := range []int64{0, 1} {
		p := rows.NewPartitioner(sch, []int{0}, budget, t.TempDir())
		if err := p.Add(context.Background(), rec); err != nil {
			t.Fatal(err)
		}
		var got []arrow.RecordBatch
		for recs, err := range p.Partitions() {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, recs...)
		}
		if g := arrowtest.Strings(got...); !slices.Equal(g, want) {
			t.Errorf("budget %d: got %v, want %v", budget, g, want)
		}
		for _, r := range got {
			r.Release()
		}
		p.Close()
	}
}
