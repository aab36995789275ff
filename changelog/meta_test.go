package changelog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/internal/arrowtest"
)

// TestMetaColumnsShared checks the metadata columns withMeta appends over
// batch sizes, kinds and snapshots: every row has its batch's kind,
// ordinal and snapshot, batches of the same length and values share one
// array per column, and a batch built after the cache was cleared (more
// than maxMetaArrays pairs) or released is still right.
func TestMetaColumnsShared(t *testing.T) {
	data := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	full := arrow.NewSchema([]arrow.Field{data.Field(0),
		{Name: ChangeTypeColumn, Type: arrow.BinaryTypes.String},
		{Name: ChangeOrdinalColumn, Type: arrow.PrimitiveTypes.Int32},
		{Name: CommitSnapshotColumn, Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	m := newMetaColumns(full)
	batch := func(n int) arrow.RecordBatch {
		rs := make([][]any, n)
		for i := range rs {
			rs[i] = []any{int64(i)}
		}
		return arrowtest.Record(data, rs)
	}
	type call struct {
		n        int
		kind     string
		ordinal  int
		snapshot int64
	}
	var calls []call
	for _, n := range []int{1, 7, 1000, 7, 1, 1000, 0} {
		for _, kind := range []string{Insert, Delete} {
			calls = append(calls, call{n, kind, 0, 11}, call{n, kind, 2, 12})
		}
	}
	var outs []arrow.RecordBatch
	defer func() {
		for _, o := range outs {
			o.Release()
		}
	}()
	for i, c := range calls {
		if i == len(calls)/2 {
			m.release()
		}
		rec := batch(c.n)
		out, err := m.withMeta(rec, c.kind, c.ordinal, c.snapshot)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, out)
		if out.NumRows() != int64(c.n) || out.NumCols() != 4 || !out.Schema().Equal(full) {
			t.Fatalf("%+v: %d rows, schema %s", c, out.NumRows(), out.Schema())
		}
		kinds := out.Column(1).(*array.String)
		ords := out.Column(2).(*array.Int32)
		snaps := out.Column(3).(*array.Int64)
		for r := range c.n {
			if kinds.Value(r) != c.kind || ords.Value(r) != int32(c.ordinal) || snaps.Value(r) != c.snapshot || out.Column(0).(*array.Int64).Value(r) != int64(r) {
				t.Fatalf("%+v: row %d is %s %d %d (data %d)", c, r, kinds.Value(r), ords.Value(r), snaps.Value(r), out.Column(0).(*array.Int64).Value(r))
			}
		}
		if len(m.arrays) > maxMetaArrays {
			t.Fatalf("%d arrays kept, at most %d", len(m.arrays), maxMetaArrays)
		}
	}
	// Two batches of one length and values in a row share their arrays.
	a, b := batch(5), batch(5)
	defer a.Release()
	defer b.Release()
	oa, err := m.withMeta(a, Delete, 3, 99)
	if err != nil {
		t.Fatal(err)
	}
	defer oa.Release()
	ob, err := m.withMeta(b, Delete, 3, 99)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Release()
	for c := 1; c < 4; c++ {
		if oa.Column(c) != ob.Column(c) {
			t.Fatalf("column %s: two batches of 5 rows got different arrays", full.Field(c).Name)
		}
	}
}
