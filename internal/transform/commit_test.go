package transform_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
)

// TestOutputCommit checks the contract of Output.Commit: the request
// carries the build's watermarks and compare-and-swap properties, the
// output is created first when asked, errors are wrapped with the output
// and operation, and a second write in one build is refused.
func TestOutputCommit(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "a"})
	var got []transform.CommitRequest
	fail := errors.New("writer failed")
	tr := transform.New("custom", func(ctx *transform.Context) error {
		rows, err := ctx.Input("source").Current()
		if err != nil {
			return err
		}
		defer rows.Release()
		out := ctx.Output("output")
		err = out.Commit("custom", rows.Schema(), func(_ context.Context, req transform.CommitRequest) (transform.CommitResult, error) {
			got = append(got, req)
			if len(got) == 2 {
				return transform.CommitResult{}, fail
			}
			return transform.CommitResult{}, nil
		})
		if err != nil {
			return err
		}
		if err := out.Commit("again", nil, nil); !errors.Is(err, transform.ErrAlreadyWritten) {
			t.Errorf("a second write in one build: %v", err)
		}
		return nil
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out", transform.Identifier("id")))
	res := e.build(tr)
	if len(got) != 1 || res.Incremental {
		t.Fatalf("%d requests, result %+v", len(got), res)
	}
	req := got[0]
	head := formatID(e.Load("src").CurrentSnapshot().SnapshotID)
	if !req.Replace || req.SetProperties[state.PropWatermark] != head || req.SetProperties[state.PropTransform] != "custom" ||
		req.SnapshotProperties["floe.transform.name"] != "custom" || req.Catalog != e.Cat || strings.Join(req.Table, ".") != "ns.out" {
		t.Fatalf("request %+v", req)
	}
	if _, ok := req.Expect[state.PropWatermark]; !ok {
		t.Fatalf("the request must expect the watermark property (absent here): %v", req.Expect)
	}
	// The output was created before the writer ran, with the identifier.
	if ids := e.Load("out").Schema().IdentifierFieldIDs; len(ids) != 1 {
		t.Fatalf("identifier fields %v", ids)
	}
	// The writer committed nothing: the next build is full again, and its
	// error names the output and the operation.
	_, err := e.runner.Build(e.Ctx, tr)
	if !errors.Is(err, fail) || !strings.Contains(err.Error(), "output ns.out: custom: writer failed") {
		t.Fatalf("error %v", err)
	}
}

// TestConcurrentFirstBuilds: two builds find the output missing; the one
// that commits second must fail (nothing committed), not append its rows
// again on top of the first one's.
func TestConcurrentFirstBuilds(t *testing.T) {
	e := newEnv(t)
	if _, err := e.Create("src", "id long not null, status string", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	e.exec("src", "insert", []any{1, "a"}, []any{2, "b"})
	started, release := make(chan struct{}), make(chan struct{})
	appendOnly := func(wait bool) *transform.Transform {
		return transform.New("copy", func(ctx *transform.Context) error {
			if wait {
				close(started)
				<-release
			}
			rows, err := ctx.Input("source").Added()
			if err != nil {
				return err
			}
			return ctx.Output("output").Write(rows)
		}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns.out"))
	}
	errc := make(chan error, 1)
	go func() {
		_, err := e.runner.Build(e.Ctx, appendOnly(true))
		errc <- err
	}()
	<-started
	e.build(appendOnly(false))
	close(release)
	err := <-errc
	if !errors.Is(err, commit.ErrWatermarkMoved) {
		t.Fatalf("the second build must fail with ErrWatermarkMoved, got %v", err)
	}
	if got := e.rows("out"); got != "(1,'a') (2,'b')" {
		t.Fatalf("rows %s", got)
	}
}
