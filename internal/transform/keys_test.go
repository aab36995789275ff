package transform_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/merge"
)

// byStatus replicates ns.src into ns.out by the key status, which is not
// unique in ns.src: Changelog and Replace must refuse instead of keeping
// one row per status.
func byStatus(opts ...transform.OutputOption) *transform.Transform {
	return transform.New("by_status", func(ctx *transform.Context) error {
		changes, err := ctx.Input("source").Changelog("status")
		if err != nil {
			return err
		}
		out := ctx.Output("output")
		if !ctx.IsIncremental() {
			sel, err := changes.Select("id", "status")
			if err != nil {
				return err
			}
			return out.ApplyChangelog(sel, "status")
		}
		return out.ApplyChangelog(changes, "status")
	}, transform.WithInput("source", "ns.src"),
		transform.WithOutput("output", "ns.out", append([]transform.OutputOption{transform.Identifier("status")}, opts...)...),
		transform.WithReadMode(transform.Changelog))
}

func TestChangelogRefusesDuplicateKeysOnFullBuild(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{2, "active"}, []any{3, "closed"})
	_, err := e.runner.Build(e.Ctx, byStatus())
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), `status="active"`) {
		t.Fatalf("got %v, want %v naming status=\"active\"", err, transform.ErrKeyNotUnique)
	}
	if tbl, lerr := e.Cat.Load(e.Ctx, []string{"ns", "out"}); lerr == nil && tbl.CurrentSnapshot() != nil {
		t.Fatalf("a build that failed committed snapshot %d", tbl.CurrentSnapshot().SnapshotID)
	}
}

func TestChangelogRefusesKeysDuplicatedByLaterChanges(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{3, "closed"})
	tr := byStatus()
	e.build(tr)
	before := e.rows("out")
	wm := e.Load("out").Properties()[state.PropWatermark]
	// Row 2 joins status 'active' alone in its snapshot: the changelog has
	// one change for the key, the source two rows.
	e.exec("src", "insert", []any{2, "active"})
	_, err := e.runner.Build(e.Ctx, tr)
	if !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), `status="active"`) {
		t.Fatalf("got %v, want %v", err, transform.ErrKeyNotUnique)
	}
	if got := e.rows("out"); got != before {
		t.Fatalf("out changed to %s (was %s)", got, before)
	}
	if got := e.Load("out").Properties()[state.PropWatermark]; got != wm {
		t.Fatalf("watermark moved from %s to %s", wm, got)
	}
	// The source fixed, the changes since the last build still hold the
	// key's two histories (latest: row 1's delete, though row 2 has the
	// key): the incremental build refuses them, a full one repairs.
	e.exec("src", "delete id=1")
	if _, err := e.runner.Build(e.Ctx, tr); !errors.Is(err, transform.ErrKeyNotUnique) || !strings.Contains(err.Error(), "--full") {
		t.Fatalf("got %v, want %v asking for a full rebuild", err, transform.ErrKeyNotUnique)
	}
	full := &transform.Runner{Catalog: e.Cat, Full: true}
	if _, err := full.Build(e.Ctx, tr); err != nil {
		t.Fatal(err)
	}
	if got := e.rows("out"); got != "(2,'active') (3,'closed')" {
		t.Fatalf("out %s", got)
	}
	// Changes to keys that stay unique go through incrementally.
	e.exec("src", "set status=open where id=3")
	if r := e.build(tr); !r.Incremental {
		t.Fatalf("want an incremental build, got %s", r.Reason)
	}
	if got := e.rows("out"); got != "(2,'active') (3,'open')" {
		t.Fatalf("out %s", got)
	}
}

func TestReplaceRefusesDuplicateIdentifiers(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{2, "active"})
	tr := transform.New("copy", func(ctx *transform.Context) error {
		rows, err := ctx.Input("source").Current()
		if err != nil {
			return err
		}
		sel, err := rows.Select("status")
		if err != nil {
			return err
		}
		return ctx.Output("output").Replace(sel)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("status")))
	if _, err := e.runner.Build(e.Ctx, tr); !errors.Is(err, transform.ErrKeyNotUnique) {
		t.Fatalf("got %v, want %v", err, transform.ErrKeyNotUnique)
	}
}

func TestApplyChangelogRefusesNonIdentifierKey(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create("out", "id long not null, status string not null", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active"}, []any{3, "closed"})
	if _, err := e.runner.Build(e.Ctx, byStatus()); !errors.Is(err, merge.ErrKeyNotIdentifier) {
		t.Fatalf("got %v, want %v", err, merge.ErrKeyNotIdentifier)
	}
	e.build(byStatus(transform.AllowNonIdentifierKey()))
	if got := e.rows("out"); got != "(1,'active') (3,'closed')" {
		t.Fatalf("out %s", got)
	}
}

// With a filter, a key shared with a filtered-out row still breaks the
// changelog by key: inserting the closed row 3 with v = 1 reads as a DELETE
// of v = 1 (it does not match the filter), which would remove row 1 from
// the output. The check refuses it and the output keeps its row.
func TestChangelogKeyCheckWithAFilter(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string, v long", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "active", 1}, []any{2, "closed", 2})
	tr := transform.New("by_v", func(ctx *transform.Context) error {
		changes, err := ctx.Input("source").Filter("status = 'active'").Changelog("v")
		if err != nil {
			return err
		}
		sel, err := changes.Select("v", "status")
		if err != nil {
			return err
		}
		return ctx.Output("output").ApplyChangelog(sel, "v")
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("v")),
		transform.WithReadMode(transform.Changelog))
	e.build(tr)
	// Changes to other keys, filtered out or not, go through.
	e.exec("src", "insert", []any{3, "closed", 3}, []any{4, "active", 4})
	if r := e.build(tr); !r.Incremental {
		t.Fatalf("want an incremental build, got %s", r.Reason)
	}
	if got := e.rows("out"); got != "(1,'active') (4,'active')" {
		t.Fatalf("out %s", got)
	}
	e.exec("src", "insert", []any{5, "closed", 1})
	if _, err := e.runner.Build(e.Ctx, tr); !errors.Is(err, transform.ErrKeyNotUnique) {
		t.Fatalf("got %v, want %v", err, transform.ErrKeyNotUnique)
	}
	if got := e.rows("out"); got != "(1,'active') (4,'active')" {
		t.Fatalf("out %s", got)
	}
}
