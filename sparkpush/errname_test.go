package sparkpush

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/pushdown"
)

// TestErrorsNameTheOutputOnce: a pushed-down build's error names its
// output once ("output ns.out:"), whether the engine failed before Spark
// (the output missing from the engine's catalog) or at Spark (no server),
// through the transform the sync command runs. No Spark server is needed:
// the engine is opened without its first session.
func TestErrorsNameTheOutputOnce(t *testing.T) {
	w := newWH(t)
	w.run("namespace", "create", "ns")
	w.run("table", "create", "ns.src", "--schema", "id long not null, status string", "--identifier", "id")
	w.run("table", "append", "ns.src", w.file("a.jsonl", `{"id":1,"status":"a"}`))
	w.run("sync", "ns.src", "ns.out", "--key", "id")
	w.run("table", "append", "ns.src", w.file("b.jsonl", `{"id":2,"status":"b"}`))
	defer func(o func(context.Context, pushdown.Settings, *catalog.Catalog) (pushdown.Engine, error)) {
		pushdown.Open = o
	}(pushdown.Open)
	for _, tc := range []struct {
		name string
		// cat is the engine's catalog (nil: the command's).
		cat  func(t *testing.T) *catalog.Catalog
		want string
	}{
		{name: "output-missing", want: "does not exist", cat: func(t *testing.T) *catalog.Catalog {
			c, err := catalog.Open(context.Background(), catalog.Options{Warehouse: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}},
		{name: "unreachable", want: ErrUnreachable.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runErr error
			pushdown.Open = func(ctx context.Context, s pushdown.Settings, cat *catalog.Catalog) (pushdown.Engine, error) {
				if tc.cat != nil {
					cat = tc.cat(t)
				}
				e := &Engine{s: s.WithDefaults(), cat: cat, log: s.Logger, catName: "floe", LostWait: time.Second}
				if e.log == nil {
					e.log = slog.New(slog.DiscardHandler)
				}
				return recordErr{e, &runErr}, nil
			}
			_, errs, code := w.try("sync", "ns.src", "ns.out", "--key", "id", "--engine", "spark", "--spark-remote", "sc://127.0.0.1:1")
			if code == 0 {
				t.Fatalf("the build succeeded without Spark: %s", errs)
			}
			if n := strings.Count(errs, "output ns.out:"); n != 1 {
				t.Fatalf(`the error names "output ns.out:" %d times, want once: %s`, n, errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Fatalf("the error does not say %q: %s", tc.want, errs)
			}
			if runErr == nil || !strings.HasPrefix(runErr.Error(), "output ns.out: ") {
				t.Fatalf("Run's error does not start with the output's name: %v", runErr)
			}
			if tc.name == "unreachable" && !errors.Is(runErr, ErrUnreachable) {
				t.Fatalf("Run's error does not wrap ErrUnreachable: %v", runErr)
			}
		})
	}
}

// recordErr is an engine that keeps the error of its Run.
type recordErr struct {
	*Engine
	err *error
}

func (r recordErr) Run(ctx context.Context, job pushdown.Job) (*pushdown.Result, error) {
	res, err := r.Engine.Run(ctx, job)
	*r.err = err
	return res, err
}
