package tableops_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// TestCopyOnWriteKeepsEqualityDeletes: a copy-on-write rewrite of a data
// file drops the rows an equality delete removed from it, also when the
// change's filter does not overlap the delete file's column bounds. Before,
// iceberg-go's planner pruned such delete files by the filter (right for
// reading the rows that match it, wrong for rewriting whole files): an
// apply or delete of row 7 brought back row 9, deleted before by an equality delete.
func TestCopyOnWriteKeepsEqualityDeletes(t *testing.T) {
	id7 := func() *tableops.Predicate {
		p := tabletest.ColEq("id", false, 7)
		p.Iceberg = iceberg.EqualTo(iceberg.Reference("id"), int64(7))
		return p
	}
	for _, c := range []struct {
		name string
		run  func(e *tabletest.Env) error
		want func(rows []string) []string
	}{
		{"apply", func(e *tabletest.Env) error { return apply(e) }, func(rows []string) []string {
			return append(slices.DeleteFunc(rows, func(r string) bool { return r == "(7,'v7')" }), "(7,'changed')")
		}},
		{"delete", func(e *tabletest.Env) error {
			_, err := tableops.Delete(e.Ctx, e.Target("t", ""), id7())
			return err
		}, func(rows []string) []string {
			return slices.DeleteFunc(rows, func(r string) bool { return r == "(7,'v7')" })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := tabletest.New(t)
			props := iceberg.Properties{"format-version": "2", "write.delete.mode": "copy-on-write",
				"write.update.mode": "copy-on-write", "write.merge.mode": "copy-on-write"}
			if _, err := e.Create("t", "id long not null, v string", "", []string{"id"}, props); err != nil {
				t.Fatal(err)
			}
			var data [][]any
			for i := int64(1); i <= 10; i++ {
				data = append(data, []any{i, fmt.Sprint("v", i)})
			}
			if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
				t.Fatal(err)
			}
			sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "_change_type", Type: arrow.BinaryTypes.String}}, nil)
			if _, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch, tabletest.Seq(sch, [][]any{{int64(9), "DELETE"}})(),
				[]string{"id"}, merge.WithDeleteMode(merge.DeleteEquality)); err != nil {
				t.Fatal(err)
			}
			before, err := e.Rows(e.Load("t"), scan.At{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.run(e); err != nil {
				t.Fatal(err)
			}
			got, err := e.Rows(e.Load("t"), scan.At{})
			if err != nil {
				t.Fatal(err)
			}
			want := c.want(slices.Clone(before))
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("after %s, the table holds\n%s\nwant\n%s", c.name, strings.Join(got, " "), strings.Join(want, " "))
			}
		})
	}
}

// apply applies an update of row 7 to ns.t
// (upserts by id, in the table's write.merge.mode).
func apply(e *tabletest.Env, opts ...merge.Option) error {
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String}}, nil)
	rec, err := tabletest.Record(sch, [][]any{{int64(7), "changed", "UPDATE_AFTER"}})
	if err != nil {
		return err
	}
	defer rec.Release()
	_, err = merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch, func(yield func(arrow.RecordBatch, error) bool) {
		rec.Retain()
		yield(rec, nil)
	}, []string{"id"}, opts...)
	return err
}
