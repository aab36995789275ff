package transform_test

import (
	"testing"
	"time"

	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
)

// TestSummaryRecordsSources: every snapshot a build commits names, in its
// summary, the input snapshot it reflects and that snapshot's commit time,
// whichever way the output was written (replace on a full build, apply by
// key, append, MERGE INTO), so that lag over time can be rebuilt from the
// output's snapshots alone.
func TestSummaryRecordsSources(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "a"}, []any{2, "b"})
	check := func(out, op string) {
		t.Helper()
		src := e.Load("src").CurrentSnapshot()
		head := e.Load(out).CurrentSnapshot()
		if head == nil || head.Summary == nil {
			t.Fatalf("%s: %s made no snapshot", out, op)
		}
		p := head.Summary.Properties
		at, ok := transform.ParseSummaryTime(p[transform.SourceSummaryKey("source", transform.SummarySourceCommittedAt)])
		if p[transform.SourceSummaryKey("source", transform.SummarySourceSnapshotID)] != formatID(src.SnapshotID) ||
			p[transform.SourceSummaryKey("source", transform.SummarySourceTable)] != "ns.src" ||
			!ok || !at.Equal(time.UnixMilli(src.TimestampMs)) || p[state.PropTransform] == "" {
			t.Fatalf("%s after %s: summary %v, source head %d at %d", out, op, p, src.SnapshotID, src.TimestampMs)
		}
	}
	apply := identityCDC()
	e.build(apply)
	check("out", "a full build (replace)")
	e.exec("src", "set status=c where id=1")
	e.build(apply)
	check("out", "an incremental build (apply by key)")

	appendOnly := transform.New("copy", func(ctx *transform.Context) error {
		rows, err := ctx.Input("source").Added()
		if err != nil {
			return err
		}
		defer rows.Release()
		return ctx.Output("output").Write(rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.appended"))
	e.build(appendOnly)
	check("appended", "a full build (write)")
	e.exec("src", "insert", []any{3, "d"})
	e.build(appendOnly)
	check("appended", "an incremental build (append)")

	merged := transform.New("merged", func(ctx *transform.Context) error {
		out := ctx.Output("output")
		rows, err := ctx.Input("source").Current()
		if err != nil {
			return err
		}
		defer rows.Release()
		if out.Table() == nil {
			return out.Replace(rows)
		}
		return out.Merge("MERGE INTO {output} t USING s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.merged", transform.Identifier("id")),
		transform.WithReadMode(transform.Changelog))
	e.build(merged)
	e.exec("src", "set status=e where id=2")
	e.build(merged)
	check("merged", "MERGE INTO")
}
