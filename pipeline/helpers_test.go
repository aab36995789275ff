package pipeline_test

import (
	"context"
	"fmt"
	"iter"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// env is an embedded catalog in a temporary warehouse with namespace ns.
type env struct {
	*tabletest.Env
	t *testing.T
}

func newEnv(t *testing.T) *env {
	return &env{Env: tabletest.New(t), t: t}
}

// create creates ns.<name>.
func (e *env) create(name, schema string, identifier []string, props iceberg.Properties) {
	e.t.Helper()
	if _, err := e.Create(name, schema, "", identifier, props); err != nil {
		e.t.Fatal(err)
	}
}

// insert appends tuples to ns.<name>.
func (e *env) insert(name string, data ...[]any) {
	e.t.Helper()
	tbl := e.Load(name)
	if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(tabletest.ArrowSchema(tbl), data)); err != nil {
		e.t.Fatal(err)
	}
}

// where is a predicate on one int64 column: the rows whose value is in ids.
func where(col string, ids ...int64) *tableops.Predicate {
	set := map[int64]bool{}
	for _, id := range ids {
		set[id] = true
	}
	return &tableops.Predicate{Columns: []string{col}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		a := rec.Column(0).(*array.Int64)
		out := make([]bool, rec.NumRows())
		for i := range out {
			out[i] = a.IsValid(i) && set[a.Value(i)]
		}
		return out, nil
	}}
}

// del deletes the rows of ns.<name> whose id is in ids.
func (e *env) del(name string, ids ...int64) {
	e.t.Helper()
	if _, err := tableops.Delete(e.Ctx, e.Target(name, ""), where("id", ids...)); err != nil {
		e.t.Fatal(err)
	}
}

// update sets the columns of the rows whose id is in ids with set, which
// returns the new row for an old one (as Go values).
func (e *env) update(name string, set func(row []any) []any, ids ...int64) {
	e.t.Helper()
	_, err := tableops.Update(e.Ctx, e.Target(name, ""), where("id", ids...), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
		var data [][]any
		for i, tch := range touched {
			if tch {
				data = append(data, set(arrowtest.RowValues(rec, i)))
			}
		}
		return tabletest.Record(rec.Schema(), data)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// overwrite replaces the rows whose id is in ids with data, in one snapshot.
func (e *env) overwrite(name string, ids []int64, data ...[]any) {
	e.t.Helper()
	tbl := e.Load(name)
	if _, err := tableops.Overwrite(e.Ctx, e.Target(name, ""), where("id", ids...), tabletest.Seq(tabletest.ArrowSchema(tbl), data)); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) compact(name string) {
	e.t.Helper()
	if _, err := tableops.Compact(e.Ctx, e.Target(name, "")); err != nil {
		e.t.Fatal(err)
	}
}

// rollback moves main of ns.<name> back to snapshot id.
func (e *env) rollback(name string, id int64) {
	e.t.Helper()
	tbl := e.Load(name)
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(id); err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Commit(e.Ctx); err != nil {
		e.t.Fatal(err)
	}
}

// rowsOf returns the rows of ns.<name> as Go values (int64, string, nil...).
func (e *env) rowsOf(name string) [][]any {
	e.t.Helper()
	_, seq, err := scan.Rows(e.Ctx, e.Load(name), scan.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	return collect(e.t, seq)
}

func collect(t *testing.T, seq iter.Seq2[arrow.RecordBatch, error]) [][]any {
	t.Helper()
	out, err := arrowtest.Values(seq)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// render formats rows as sorted tuples.
func render(rs [][]any) string {
	var out []string
	for _, r := range rs {
		var parts []string
		for _, v := range r {
			switch x := v.(type) {
			case nil:
				parts = append(parts, "NULL")
			case string:
				parts = append(parts, "'"+x+"'")
			default:
				parts = append(parts, fmt.Sprint(x))
			}
		}
		out = append(out, "("+strings.Join(parts, ",")+")")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// head returns the current snapshot id of ns.<name> (0 when none).
func (e *env) head(name string) int64 {
	if s := e.Load(name).CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}
