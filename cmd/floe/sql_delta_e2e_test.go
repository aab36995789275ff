package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLPipelineDelta runs a pipeline whose sql transform joins a Delta
// table (one delta-rs wrote, with Change Data Feed, replayed one version
// at a time) with an Iceberg table, through the binary: after every run
// the destination equals floe query of the same SELECT, the runs after
// the first are incremental, and floe status measures the Delta input in
// Delta versions.
func TestSQLPipelineDelta(t *testing.T) {
	src := filepath.Join("..", "..", "..", "shared", "testdata", "delta", "deltars-cdf-table")
	logs, _ := filepath.Glob(filepath.Join(src, "_delta_log", "*.json"))
	if len(logs) < 2 {
		t.Skipf("the real Delta table %s is not there (../shared/testdata/delta)", src)
	}
	work := t.TempDir()
	if err := os.CopyFS(filepath.Join(work, "people"), os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(work, "people", "_delta_log")
	if err := os.RemoveAll(log); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(log, 0o755); err != nil {
		t.Fatal(err)
	}
	const query = `SELECT p.id, p.name, p.birthday, n.nick FROM delta."people" p LEFT JOIN shop.nicks n ON p.id = n.id`
	files := map[string]string{
		"p.yaml": `transforms:
  - name: people
    type: sql
    query: '` + query + `'
    key: id
    destination: shop.people
`,
		"nicks.csv": "id,nick\n1,one\n2,two\n7,seven\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	floe := func(args ...string) string {
		t.Helper()
		out := runFloe(t, work, args)
		if !strings.HasPrefix(out, "exit 0\n") {
			t.Fatalf("floe %v:\n%s", args, out)
		}
		return out
	}
	floe("namespace", "create", "shop")
	floe("table", "create", "shop.nicks", "--schema", "id int not null, nick string", "--identifier", "id", "--quiet")
	floe("table", "append", "shop.nicks", "nicks.csv", "--quiet")
	for i, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(log, filepath.Base(l)), b, 0o644); err != nil {
			t.Fatal(err)
		}
		out := floe("run", "p.yaml", "--once")
		if i > 0 && !strings.Contains(out, "people: incremental build") {
			t.Fatalf("version %d: not incremental:\n%s", i, out)
		}
		got := floe("query", "SELECT * FROM shop.people ORDER BY id", "--format", "csv")
		want := floe("query", "SELECT * FROM ("+query+") ORDER BY id", "--format", "csv")
		if got != want {
			t.Fatalf("version %d: shop.people\n%s\nfloe query of the SELECT\n%s", i, got, want)
		}
	}
	st := floe("status", "p.yaml", "--format", "json")
	if !strings.Contains(st, `"watermarks":["delta:people=3"`) || strings.Contains(st, "did not answer") {
		t.Fatalf("status:\n%s", st)
	}
}
