package transform_test

import (
	"strings"
	"testing"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/faultcat"
	"github.com/floedata/floe/internal/faultfs"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
)

// projection replaces ns.out with the source's columns cols.
func projection(version int, cols ...string) *transform.Transform {
	return transform.New("proj", func(ctx *transform.Context) error {
		rows, err := ctx.Input("source").Current()
		if err != nil {
			return err
		}
		if rows, err = rows.Select(cols...); err != nil {
			return err
		}
		return ctx.Output("output").Replace(rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("id")),
		transform.WithSemanticVersion(version))
}

// TestRebuildWithNewColumns: a full build whose columns no longer fit its
// output replaces the output's schema, rows and watermark in one commit
// (kept columns keep their field ids; a type that cannot widen is a new
// column), also when another writer commits to the output meanwhile.
func TestRebuildWithNewColumns(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, a string, b int", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "x", 10}, []any{2, "y", 20})
	e.build(projection(1, "id", "a"))
	before := e.Load("out")
	idField, _ := before.Schema().FindFieldByName("id")

	// The column list changes (a goes, b comes) and another writer appends
	// to the output while the rebuild commits: the catalog answers the
	// first commit with a conflict, the retry (computed on the table with
	// the other writer's row) reuses the written files, and no row of the
	// other writer stays.
	inj := faultcat.New(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.Before, Nth: 1, Err: faultcat.ErrConflict,
		Then: func() { e.exec("out", "insert", []any{99, "z"}) }})
	// The data files created, noted by a rule that never hits.
	var created []string
	watch := faultfs.New(&faultfs.Rule{Ops: []faultfs.Op{faultfs.OpCreate}, Path: func(p string) bool {
		if strings.Contains(p, "/data/") {
			created = append(created, p)
		}
		return false
	}})
	e.Cat.Wrap(catalog.Wrap{Catalog: inj.Wrap, IO: watch.Wrap})
	res := e.build(projection(2, "id", "b"))
	inj.Reset()
	watch.Reset()
	if len(created) != 2 {
		t.Errorf("%d data files written during the rebuild, want 2 (the other writer's and the rebuild's, reused by the retry): %v", len(created), created)
	}
	if res.Incremental || len(res.Outputs) != 1 || !res.Outputs[0].Committed {
		t.Fatalf("result %+v", res)
	}
	if got := res.Outputs[0].Attempts; got != 2 {
		t.Errorf("the rebuild took %d commit attempts, want 2 (a conflict, then the retry); faults %v", got, inj.Hits())
	}
	after := e.Load("out")
	var cols []string
	for _, f := range after.Schema().Fields() {
		cols = append(cols, f.Name+" "+ddl.FormatType(f.Type))
	}
	if strings.Join(cols, ", ") != "id long, b int" {
		t.Errorf("output columns %v", cols)
	}
	if f, _ := after.Schema().FindFieldByName("id"); f.ID != idField.ID || !f.Required {
		t.Errorf("id changed field id %d -> %d (required %v)", idField.ID, f.ID, f.Required)
	}
	if ids := after.Schema().IdentifierFieldIDs; len(ids) != 1 || ids[0] != idField.ID {
		t.Errorf("identifier fields %v", ids)
	}
	if got := e.rows("out"); got != "(1,10) (2,20)" {
		t.Errorf("rows %s", got)
	}
	if got, want := after.Properties()[state.PropWatermark], formatID(e.Load("src").CurrentSnapshot().SnapshotID); got != want {
		t.Errorf("watermark %s, want %s", got, want)
	}
	// One commit for the rebuild: the snapshot after the other writer's.
	snaps := after.Metadata().Snapshots()
	if len(snaps) != 3 {
		t.Errorf("%d snapshots, want 3 (first build, other writer, rebuild)", len(snaps))
	}
	if o := res.Outputs[0]; o.RowsRemoved != 3 {
		t.Errorf("the rebuild removed %d rows, want 3 (the retry replaces the other writer's row too)", o.RowsRemoved)
	}

	// A type that cannot widen (int to string) is a new column: a new id.
	bField, _ := after.Schema().FindFieldByName("b")
	e.build(transform.New("proj", func(ctx *transform.Context) error {
		rows, err := ctx.Input("source").Current()
		if err != nil {
			return err
		}
		if rows, err = rows.Select("id", "a"); err != nil {
			return err
		}
		return ctx.Output("output").Replace(rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("id")), transform.WithSemanticVersion(3)))
	final := e.Load("out")
	if f, ok := final.Schema().FindFieldByName("a"); !ok || f.ID == bField.ID || f.ID <= bField.ID {
		t.Errorf("column a: %+v (b was %d)", f, bField.ID)
	}
	if got := e.rows("out"); got != "(1,'x') (2,'y')" {
		t.Errorf("rows %s", got)
	}
}
