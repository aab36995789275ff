//go:build cgo

package duckdb_test

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
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/arrowtest"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/sqltx"
	"github.com/floedata/floe/tableops"
)

type env struct {
	*tabletest.Env
	t *testing.T
}

func newEnv(t *testing.T) *env { return &env{Env: tabletest.New(t), t: t} }

func (e *env) create(name, schema string, identifier []string, props iceberg.Properties) {
	e.t.Helper()
	if _, err := e.Create(name, schema, "", identifier, props); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) insert(name string, data ...[]any) {
	e.t.Helper()
	tbl := e.Load(name)
	if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(tabletest.ArrowSchema(tbl), data)); err != nil {
		e.t.Fatal(err)
	}
}

func where(ids ...int64) *tableops.Predicate {
	set := map[int64]bool{}
	for _, id := range ids {
		set[id] = true
	}
	return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		a := rec.Column(0).(*array.Int64)
		out := make([]bool, rec.NumRows())
		for i := range out {
			out[i] = a.IsValid(i) && set[a.Value(i)]
		}
		return out, nil
	}}
}

func (e *env) del(name string, ids ...int64) {
	e.t.Helper()
	if _, err := tableops.Delete(e.Ctx, e.Target(name, ""), where(ids...)); err != nil {
		e.t.Fatal(err)
	}
}

// update replaces the rows whose id is in ids with set(old row).
func (e *env) update(name string, set func(row []any) []any, ids ...int64) {
	e.t.Helper()
	_, err := tableops.Update(e.Ctx, e.Target(name, ""), where(ids...), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
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

func (e *env) rowsOf(name string) string {
	e.t.Helper()
	_, seq, err := scan.Rows(e.Ctx, e.Load(name), scan.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	return render(collect(e.t, seq))
}

// build runs one build of tr.
func (e *env) build(tr *transform.Transform) (*transform.Result, error) {
	r := &transform.Runner{Catalog: e.Cat}
	return r.Build(e.Ctx, tr)
}

// recompute runs query in full over the current rows of the tables it
// reads, in a fresh session: the expected content of a destination.
func (e *env) recompute(query string) string {
	e.t.Helper()
	s, err := sqltx.Open(e.Ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer s.Close()
	plan, err := sqltx.Analyze(e.Ctx, s, query)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, name := range plan.Tables {
		tbl, err := e.Cat.LoadTable(e.Ctx, name)
		if err != nil {
			e.t.Fatal(err)
		}
		sch, seq, err := scan.Rows(e.Ctx, tbl, scan.Options{})
		if err != nil {
			e.t.Fatal(err)
		}
		ns, tn, _ := strings.Cut(name, ".")
		if err := s.Bind(e.Ctx, ns, tn, transform.NewRows(sch, seq)); err != nil {
			e.t.Fatal(err)
		}
	}
	_, seq, err := s.Query(e.Ctx, query)
	if err != nil {
		e.t.Fatal(err)
	}
	return render(collect(e.t, seq))
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

// summary is the snapshot summary of the current snapshot of ns.<name>.
func (e *env) summary(name string) iceberg.Properties {
	e.t.Helper()
	s := e.Load(name).CurrentSnapshot()
	if s == nil || s.Summary == nil {
		return nil
	}
	return s.Summary.Properties
}

var _ table.Identifier

// checkRule fails t unless query, keyed by keys (comma-separated), follows
// want, or, when reason is set, is rebuilt in full for a reason that
// contains it.
func checkRule(t *testing.T, ctx context.Context, s sqltx.Session, query, keys, want, reason string) {
	t.Helper()
	p, err := sqltx.Analyze(ctx, s, query)
	if err != nil {
		t.Errorf("%s: %v", query, err)
		return
	}
	var ks []string
	if keys != "" {
		ks = strings.Split(keys, ",")
	}
	rule, why := p.RuleFor(ks)
	switch {
	case reason == "" && rule != want:
		t.Errorf("%s: rule %s (%s), want %s", query, rule, why, want)
	case reason != "" && (rule != sqltx.RuleFull || !strings.Contains(why, reason)):
		t.Errorf("%s: rule %s (%s), want full because of %q", query, rule, why, reason)
	}
}
