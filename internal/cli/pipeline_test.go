package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/tableops"
)

// runProgram runs a program built with package cmdline on transforms, in a
// temporary working directory (where it keeps its run history).
func runProgram(t *testing.T, warehouse string, transforms []*transform.Transform, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	var out, errb bytes.Buffer
	code = RunTransforms(context.Background(), "prog", transforms, append([]string{"--warehouse", warehouse}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// copyTransform copies ns.src into ns.<dst>; before (when not nil) runs
// first in its compute.
func copyTransform(name, dst string, before func(ctx *transform.Context) error) *transform.Transform {
	return transform.New(name, func(ctx *transform.Context) error {
		if before != nil {
			if err := before(ctx); err != nil {
				return err
			}
		}
		rows, err := ctx.Input("source").Current()
		if err != nil {
			return err
		}
		defer rows.Release()
		return ctx.Output("output").Replace(rows)
	}, transform.WithInput("source", "ns.src"), transform.WithOutput("output", "ns."+dst, transform.Identifier("id")))
}

func sourceTable(t *testing.T) *tabletest.Env {
	t.Helper()
	e := tabletest.New(t)
	tbl, err := e.Create("src", "id long not null", "", []string{"id"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tableops.Append(e.Ctx, e.Target("src", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), [][]any{{1}, {2}})); err != nil {
		t.Fatal(err)
	}
	return e
}

func warehouseOf(t *testing.T, e *tabletest.Env) string {
	t.Helper()
	w := e.Cat.Warehouse()
	if w == "" {
		t.Skip("the test catalog has no warehouse folder")
	}
	return w
}

// TestStoppedBeforeAnyTransformFinished (issue 12, item 10): a signal
// during the first of three builds stops the run after 0 of 3
// transforms, not 1.
func TestStoppedBeforeAnyTransformFinished(t *testing.T) {
	e := sourceTable(t)
	wh := warehouseOf(t, e)
	e.Cat.Close()
	signalled := func(ctx *transform.Context) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}
	ts := []*transform.Transform{copyTransform("a", "a", signalled), copyTransform("b", "b", nil), copyTransform("c", "c", nil)}
	code, stdout, stderr := runProgram(t, wh, ts, "run", "--once")
	if code != ExitFailure || !strings.Contains(stderr, "stopped by a signal after 0 of 3 transforms (the build in progress stopped before committing)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "a: stopped before committing") {
		t.Fatalf("stdout:\n%s", stdout)
	}
}

// TestLoserOfARaceExitsZero (issue 12, item 10): a run whose transform
// another process built meanwhile (here: in the middle of its build)
// exits 0 and says so.
func TestLoserOfARaceExitsZero(t *testing.T) {
	e := sourceTable(t)
	wh := warehouseOf(t, e)
	var tr *transform.Transform
	raced := false
	tr = copyTransform("copy", "out", func(ctx *transform.Context) error {
		if raced {
			return nil
		}
		raced = true
		_, err := (&transform.Runner{Catalog: e.Cat}).Build(ctx, tr)
		return err
	})
	code, stdout, stderr := runProgram(t, wh, []*transform.Transform{tr}, "run", "--once", "--quiet")
	if code != ExitOK || !strings.Contains(stdout, "copy: built by another run meanwhile, nothing left to build") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestMetricsAddressLoopback (issue 12, item 11): an address without a
// host binds the loopback interface, and the documented examples give one.
func TestMetricsAddressLoopback(t *testing.T) {
	for in, want := range map[string]string{":9090": "127.0.0.1:9090", "127.0.0.1:9090": "127.0.0.1:9090",
		"0.0.0.0:9090": "0.0.0.0:9090", "[::]:9090": "[::]:9090", "localhost:0": "localhost:0"} {
		if got := listenAddr(in); got != want {
			t.Errorf("listenAddr(%q) = %q, want %q", in, got, want)
		}
	}
	bare := regexp.MustCompile(`--(metrics-addr|http)[ =]:\d`)
	for _, doc := range []string{"README.md", "docs/pipelines.md"} {
		b, err := os.ReadFile(filepath.Join(testdir.ModuleRoot(), doc))
		if err != nil {
			t.Fatal(err)
		}
		if m := bare.Find(b); m != nil {
			t.Errorf("%s shows %q: examples give the loopback address", doc, m)
		}
	}
	root := NewCommand(strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
	for _, path := range [][]string{{"run"}, {"serve"}, {"delta", "sync"}} {
		c, _, err := root.Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := bare.FindString(c.Example + c.Long); m != "" {
			t.Errorf("floe %s --help shows %q", strings.Join(path, " "), m)
		}
	}

}

// TestOutcomeJSONAnswerLost: --format json says answer_lost for an output
// whose commit's answer was lost and found.
func TestOutcomeJSONAnswerLost(t *testing.T) {
	j := toJSON(pipeline.Outcome{Step: "copy", Kind: pipeline.OutcomeIncremental, Result: &transform.Result{
		Outputs: []transform.OutputResult{{Name: "out", Table: "ns.copy", Committed: true, AnswerLost: true}, {Name: "b", Table: "ns.b", Committed: true}}}})
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), `"answer_lost":true`) != 1 {
		t.Fatalf("%s", b)
	}
}
