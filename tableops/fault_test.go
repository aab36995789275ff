package tableops_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/faultfs"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestFailedCreateDuringRewrite: a file create that fails while a
// copy-on-write delete (or a compaction) rewrites a partitioned table's
// files must fail the command with nothing committed. iceberg-go v0.7's
// partitioned writer can end without reporting the error; before floe
// checked the rows written, the delete succeeded and dropped the rows of
// the file it failed to write (found by internal/faultsuite).
func TestFailedCreateDuringRewrite(t *testing.T) {
	for _, op := range []string{"delete", "compact"} {
		for nth := 1; nth <= 4; nth++ {
			e := tabletest.New(t)
			props := iceberg.Properties{"format-version": "2"}
			if op == "compact" {
				props["write.delete.mode"] = "merge-on-read"
			}
			if _, err := e.Create("t", "id long not null, v string", "bucket(4, id)", []string{"id"}, props); err != nil {
				t.Fatal(err)
			}
			var data [][]any
			for i := int64(1); i <= 24; i++ {
				data = append(data, []any{i, fmt.Sprint("a", i)})
			}
			if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
				t.Fatal(err)
			}
			p := &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
				ids := rec.Column(0).(*array.Int64)
				out := make([]bool, rec.NumRows())
				for i := range out {
					out[i] = ids.Value(i) >= 2 && ids.Value(i) <= 9
				}
				return out, nil
			}}
			if op == "compact" {
				if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), p); err != nil {
					t.Fatal(err)
				}
			}
			before, err := e.Rows(e.Load("t"), scan.At{})
			if err != nil {
				t.Fatal(err)
			}
			inj := faultfs.New(&faultfs.Rule{Ops: []faultfs.Op{faultfs.OpCreate}, Path: faultfs.PathContains("/data/"), Nth: nth})
			e.Cat.Wrap(catalog.Wrap{IO: inj.Wrap})
			if op == "delete" {
				_, err = tableops.Delete(e.Ctx, e.Target("t", ""), p)
			} else {
				_, err = tableops.Compact(e.Ctx, e.Target("t", ""))
			}
			hits := inj.Hits()
			inj.Reset()
			after, rerr := e.Rows(e.Load("t"), scan.At{})
			if rerr != nil {
				t.Fatal(rerr)
			}
			if len(hits) == 0 {
				continue // fewer creates than nth
			}
			if err == nil {
				t.Fatalf("%s with create %d failing (%v): no error; rows %d, before %d", op, nth, hits, len(after), len(before))
			}
			if strings.Join(after, " ") != strings.Join(before, " ") {
				t.Fatalf("%s failed (%v) but changed the rows", op, err)
			}
		}
	}
}
