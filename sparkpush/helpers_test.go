package sparkpush

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/cli"
	"github.com/floedata/floe/pushdown"
)

// EnvRequired turns the skip of a test that needs a Spark Connect server
// into a failure (.ci/spark.sh sets it).
const EnvRequired = "FLOE_SPARK_REQUIRED"

// remote returns the Spark Connect server of the tests, skipping (or
// failing under FLOE_SPARK_REQUIRED) when there is none.
func remote(t *testing.T) string {
	t.Helper()
	r := os.Getenv(pushdown.EnvRemote)
	if r == "" {
		msg := "no Spark Connect server: run the tests under .ci/spark.sh (it starts one and sets " + pushdown.EnvRemote + ")"
		if os.Getenv(EnvRequired) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return r
}

func init() { pushdown.Open = Open }

// wh is a warehouse driven through floe's command line, in process.
type wh struct {
	t   *testing.T
	dir string
}

func newWH(t *testing.T) *wh {
	t.Helper()
	return &wh{t: t, dir: t.TempDir()}
}

// run runs floe with args; it returns stdout, stderr and the exit status.
func (w *wh) try(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := cli.Run(ctx, append([]string{"--warehouse", w.dir}, args...), strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func (w *wh) run(args ...string) string {
	w.t.Helper()
	out, errs, code := w.try(args...)
	if code != 0 {
		w.t.Fatalf("floe %s: exit %d: %s", strings.Join(args, " "), code, errs)
	}
	return out
}

// file writes a JSON Lines file of rows into the warehouse folder.
func (w *wh) file(name string, rows ...string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// rows reads a table with floe as sorted JSON lines.
func (w *wh) rows(table string) []string {
	w.t.Helper()
	out := w.run("table", "scan", table, "--format", "jsonl")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	sort.Strings(lines)
	return lines
}

func (w *wh) same(a, b string) {
	w.t.Helper()
	ra, rb := w.rows(a), w.rows(b)
	if strings.Join(ra, "\n") != strings.Join(rb, "\n") {
		w.t.Fatalf("%s and %s differ:\n%s:\n  %s\n%s:\n  %s", a, b, a, strings.Join(ra, "\n  "), b, strings.Join(rb, "\n  "))
	}
}

// props returns a table's properties and its main head's summary.
func (w *wh) props(table string) (map[string]string, map[string]string) {
	w.t.Helper()
	cat, err := catalog.Open(context.Background(), catalog.Options{Warehouse: w.dir})
	if err != nil {
		w.t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(context.Background(), table)
	if err != nil {
		w.t.Fatal(err)
	}
	summary := map[string]string{}
	if s := tbl.CurrentSnapshot(); s != nil && s.Summary != nil {
		summary = s.Summary.Properties
	}
	return tbl.Properties(), summary
}

func (w *wh) refs(table string) []string {
	w.t.Helper()
	cat, err := catalog.Open(context.Background(), catalog.Options{Warehouse: w.dir})
	if err != nil {
		w.t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(context.Background(), table)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []string
	for n := range tbl.Metadata().Refs() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func row(id int, status string, amount float64) string {
	b, _ := json.Marshal(map[string]any{"id": id, "status": status, "amount": amount})
	return string(b)
}

func change(ct string, id int, status string, amount float64) string {
	b, _ := json.Marshal(map[string]any{"id": id, "status": status, "amount": amount, "_change_type": ct})
	return string(b)
}

var _ = fmt.Sprintf
