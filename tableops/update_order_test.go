package tableops_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// A copy-on-write UPDATE writes each updated row in its row's place: the
// rewritten file holds the rows in the old file's order (so the next
// changelog finds the columns the update left alone byte-identical).
func TestUpdateKeepsRowOrder(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{"format-version": "2", "write.update.mode": "copy-on-write"}
	if _, err := e.Create("t", "id long not null, v string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	as := tabletest.ArrowSchema(e.Load("t"))
	var data [][]any
	for i := int64(1); i <= 300; i++ {
		data = append(data, []any{i, fmt.Sprint("v", i)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(as, data)); err != nil {
		t.Fatal(err)
	}
	_, err := tableops.Update(e.Ctx, e.Target("t", ""), idMod7(3), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, rec.Schema())
		defer b.Release()
		ids := rec.Column(0).(*array.Int64)
		for i, tch := range touched {
			if tch {
				b.Field(0).(*array.Int64Builder).Append(ids.Value(i))
				b.Field(1).(*array.StringBuilder).Append(fmt.Sprint("u", ids.Value(i)))
			}
		}
		return b.NewRecordBatch(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl := e.Load("t")
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := scan.LoadState(e.Ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Data) != 1 {
		t.Fatalf("%d data files after the update, want 1", len(st.Data))
	}
	r, err := scan.NewReader(e.Ctx, tbl, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, seq, err := r.Live(e.Ctx, st.Data[0].File, scan.Deletes{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(1)
	for b, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		ids, vs := b.Rec.Column(0).(*array.Int64), b.Rec.Column(1).(*array.String)
		for i := range ids.Len() {
			v := fmt.Sprint("v", want)
			if want%7 == 3 {
				v = fmt.Sprint("u", want)
			}
			if ids.Value(i) != want || vs.Value(i) != v {
				t.Fatalf("row %d of the rewritten file is (%d, %s), want (%d, %s)", want-1, ids.Value(i), vs.Value(i), want, v)
			}
			want++
		}
		b.Release()
	}
	if want != 301 {
		t.Fatalf("the rewritten file has %d rows, want 300", want-1)
	}
}

// idMod7 selects the rows whose id is r modulo 7.
func idMod7(r int64) *tableops.Predicate {
	return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		ids := rec.Column(0).(*array.Int64)
		out := make([]bool, ids.Len())
		for i := range out {
			out[i] = ids.Value(i)%7 == r
		}
		return out, nil
	}}
}
