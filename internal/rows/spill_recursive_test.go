package rows_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

var skewSchema = arrow.NewSchema([]arrow.Field{
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "pad", Type: arrow.BinaryTypes.String},
}, nil)

// skewedKeys returns n distinct keys whose hashes agree in their lowest
// bits, so that they all fall into one partition of the first level (and
// of the second when bits is 12).
func skewedKeys(n, bits int) []int64 {
	var out []int64
	one := array.NewInt64Builder(memory.DefaultAllocator)
	defer one.Release()
	sch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64}}, nil)
	for k := int64(0); len(out) < n; k += 1 << 16 {
		for i := range int64(1 << 16) {
			one.Append(k + i)
		}
		arr := one.NewArray()
		rec := array.NewRecordBatch(sch, []arrow.Array{arr}, int64(arr.Len()))
		arr.Release()
		for i, h := range rows.HashKeys(rec, []int{0}, nil) {
			if h&(1<<bits-1) == 0 && len(out) < n {
				out = append(out, k+int64(i))
			}
		}
		rec.Release()
	}
	return out
}

// skewBatches builds batches of rows (seq, key, 100 bytes of padding)
// over keys, each key repeated reps times, in rounds.
func skewBatches(keys []int64, reps int) []arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, skewSchema)
	defer b.Release()
	pad := fmt.Sprintf("%0100d", 0)
	var out []arrow.RecordBatch
	seq := int64(0)
	for r := range reps {
		for _, k := range keys {
			b.Field(0).(*array.Int64Builder).Append(seq)
			b.Field(1).(*array.Int64Builder).Append(k)
			b.Field(2).(*array.StringBuilder).Append(pad)
			seq++
			if seq%500 == 0 {
				out = append(out, b.NewRecordBatch())
			}
		}
		_ = r
	}
	if rec := b.NewRecordBatch(); rec.NumRows() > 0 {
		out = append(out, rec)
	} else {
		rec.Release()
	}
	return out
}

// TestPartitionerRepartitions: keys that all fall into one partition of
// the first level (and of the second) spill past a small budget, and the
// partitioner splits that partition again by other bits of the hash until
// every partition it hands back fits the budget; a key repeated more
// often than the budget holds comes back whole, alone. Every row comes
// back once, the rows of a key together and in order.
func TestPartitionerRepartitions(t *testing.T) {
	const budget = 64 << 10
	for _, tc := range []struct {
		name string
		keys []int64
		reps int
	}{
		{"one first-level partition", skewedKeys(3000, 6), 2},
		{"one second-level partition", skewedKeys(1500, 12), 3},
		{"a hot key", []int64{7}, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := skewBatches(tc.keys, tc.reps)
			defer releaseAll(recs)
			total := int64(0)
			for _, r := range recs {
				total += r.NumRows()
			}
			p := rows.NewPartitionerWith(skewSchema, []int{1}, rows.PartitionOptions{Budget: budget, TempDir: t.TempDir(), Whole: true})
			defer p.Close()
			for _, r := range recs {
				if err := p.Add(context.Background(), r); err != nil {
					t.Fatal(err)
				}
			}
			if !p.Spilled() {
				t.Fatal("no spill past the budget")
			}
			seen := make([]int, total)
			partOfKey := map[int64]int{}
			parts := 0
			for got, err := range p.Partitions() {
				if err != nil {
					t.Fatal(err)
				}
				size := int64(0)
				keys := map[int64]bool{}
				last := int64(-1)
				for _, rec := range got {
					size += rows.RecordSize(rec)
					seqs, ks := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
					for i := range seqs.Len() {
						if seqs.Value(i) <= last {
							t.Fatalf("partition %d: row %d after %d", parts, seqs.Value(i), last)
						}
						last = seqs.Value(i)
						seen[last]++
						k := ks.Value(i)
						keys[k] = true
						if q, ok := partOfKey[k]; ok && q != parts {
							t.Fatalf("key %d in partitions %d and %d", k, q, parts)
						}
						partOfKey[k] = parts
					}
					rec.Release()
				}
				if size > budget && len(keys) > 1 {
					t.Errorf("partition %d holds %d bytes of %d keys, over the budget of %d", parts, size, len(keys), budget)
				}
				parts++
			}
			if i := slices.IndexFunc(seen, func(n int) bool { return n != 1 }); i >= 0 {
				t.Fatalf("row %d came back %d times", i, seen[i])
			}
			if len(tc.keys) > 1 && parts < 4 {
				t.Errorf("%d partitions: the skewed partition was not split", parts)
			}
		})
	}
}

// TestPartitionerWhole: within the budget, Whole hands back the records
// as added, unpartitioned and uncopied; past it they are partitioned.
func TestPartitionerWhole(t *testing.T) {
	recs := skewBatches([]int64{1, 2, 3, 4, 5, 6, 7, 8}, 200)
	defer releaseAll(recs)
	p := rows.NewPartitionerWith(skewSchema, []int{1}, rows.PartitionOptions{Budget: 1 << 30, Whole: true})
	for _, r := range recs {
		if err := p.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for got, err := range p.Partitions() {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if len(got) != len(recs) {
			t.Fatalf("%d records back, %d added", len(got), len(recs))
		}
		for i := range got {
			if got[i] != recs[i] {
				t.Fatalf("record %d came back as another record", i)
			}
			got[i].Release()
		}
	}
	p.Close()
	if n != 1 {
		t.Fatalf("%d partitions, want 1", n)
	}
}

// TestPartitionerCombine: Combine reduces each partition's rows before
// they spill (here to the last row of each key), and what comes back is
// the combination of the spilled runs.
func TestPartitionerCombine(t *testing.T) {
	keys := []int64{}
	for k := range int64(300) {
		keys = append(keys, k)
	}
	recs := skewBatches(keys, 20)
	defer releaseAll(recs)
	combined := 0
	lastPerKey := lastPerKeyCounting(&combined)
	p := rows.NewPartitionerWith(skewSchema, []int{1}, rows.PartitionOptions{Budget: 32 << 10, TempDir: t.TempDir(), Whole: true, Combine: lastPerKey})
	defer p.Close()
	for _, r := range recs {
		if err := p.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int64]int64{} // key -> greatest seq seen
	rowsBack := 0
	for part, err := range p.Partitions() {
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range part {
			seqs, ks := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
			for i := range ks.Len() {
				rowsBack++
				got[ks.Value(i)] = max(got[ks.Value(i)], seqs.Value(i))
			}
			rec.Release()
		}
	}
	if combined == 0 {
		t.Fatal("Combine was never called")
	}
	if rowsBack >= 300*20 {
		t.Fatalf("%d rows back: nothing was combined", rowsBack)
	}
	for i, k := range keys {
		if want := int64(19*300 + i); got[k] != want {
			t.Fatalf("key %d: last row %d, want %d", k, got[k], want)
		}
	}
}

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		r.Release()
	}
}

// lastPerKeyCounting is a Combine that keeps the last row of each key, in
// the order of those rows, counting its calls in combined.
func lastPerKeyCounting(combined *int) func(context.Context, []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	return func(ctx context.Context, in []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
		*combined++
		last := map[int64][2]int{}
		var order []int64
		for b, r := range in {
			ks := r.Column(1).(*array.Int64)
			for i := range ks.Len() {
				if _, ok := last[ks.Value(i)]; !ok {
					order = append(order, ks.Value(i))
				}
				last[ks.Value(i)] = [2]int{b, i}
			}
		}
		// Keep them in the order of their last rows.
		slices.SortFunc(order, func(a, b int64) int {
			x, y := last[a], last[b]
			if x[0] != y[0] {
				return x[0] - y[0]
			}
			return x[1] - y[1]
		})
		bld := array.NewRecordBuilder(memory.DefaultAllocator, skewSchema)
		defer bld.Release()
		for _, k := range order {
			at := last[k]
			r := in[at[0]]
			bld.Field(0).(*array.Int64Builder).Append(r.Column(0).(*array.Int64).Value(at[1]))
			bld.Field(1).(*array.Int64Builder).Append(k)
			bld.Field(2).(*array.StringBuilder).Append(r.Column(2).(*array.String).Value(at[1]))
		}
		releaseAll(in)
		return []arrow.RecordBatch{bld.NewRecordBatch()}, nil
	}
}

// TestPartitionerCombineHotKey: one key repeated far more often than the
// budget holds, among keys that all fall into one first-level partition,
// comes back within the budget when a Combine reduces each key's rows as
// they spill (as Apply's collapse to the winning change does): no
// partition handed back is over the budget, and each key's last row is
// what comes back for it.
func TestPartitionerCombineHotKey(t *testing.T) {
	const budget = 32 << 10
	keys := skewedKeys(1000, 6)
	var recs []arrow.RecordBatch
	recs = append(recs, skewBatches([]int64{keys[0]}, 20_000)...) // the hot key: about 2.4 MB of rows
	defer releaseAll(recs)
	combined := 0
	p := rows.NewPartitionerWith(skewSchema, []int{1}, rows.PartitionOptions{Budget: budget, TempDir: t.TempDir(), Whole: true, Combine: lastPerKeyCounting(&combined)})
	defer p.Close()
	for _, r := range recs {
		if err := p.Add(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	// Then every skewed key once, with sequence numbers after the hot key's.
	b := array.NewRecordBuilder(memory.DefaultAllocator, skewSchema)
	defer b.Release()
	for i, k := range keys {
		b.Field(0).(*array.Int64Builder).Append(int64(20_000 + i))
		b.Field(1).(*array.Int64Builder).Append(k)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%0100d", i))
	}
	tail := b.NewRecordBatch()
	defer tail.Release()
	if err := p.Add(context.Background(), tail); err != nil {
		t.Fatal(err)
	}
	got := map[int64]int64{}
	for part, err := range p.Partitions() {
		if err != nil {
			t.Fatal(err)
		}
		size := int64(0)
		for _, rec := range part {
			size += rows.RecordSize(rec)
			seqs, ks := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
			for i := range ks.Len() {
				got[ks.Value(i)] = max(got[ks.Value(i)], seqs.Value(i))
			}
			rec.Release()
		}
		if size > budget {
			t.Errorf("a partition of %d bytes came back, over the budget of %d", size, budget)
		}
	}
	if combined == 0 || !p.Spilled() {
		t.Fatalf("combined %d times, spilled %v: want both", combined, p.Spilled())
	}
	if len(got) != len(keys) {
		t.Fatalf("%d keys back, want %d", len(got), len(keys))
	}
	for i, k := range keys {
		if want := int64(20_000 + i); got[k] != want {
			t.Fatalf("key %d: last row %d, want %d", k, got[k], want)
		}
	}
}
