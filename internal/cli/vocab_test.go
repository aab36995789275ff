package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/transform"
)

// TestUnknownSubcommandsExit2: a command that only groups others fails
// with a usage error on an unknown subcommand (cobra printed the parent's
// help and exited 0), and prints its help alone.
func TestUnknownSubcommandsExit2(t *testing.T) {
	for _, args := range [][]string{{"table", "frob", "shop.x"}, {"namespace", "frob"}, {"table", "tag", "frob"},
		{"table", "properties", "frob"}, {"delta", "frob"}, {"table", "branch", "frob"}} {
		var out, errb bytes.Buffer
		if got := Run(t.Context(), args, strings.NewReader(""), &out, &errb); got != 2 || !strings.Contains(errb.String(), `unknown command "frob"`) {
			t.Errorf("floe %v: exit %d, stderr %q", args, got, errb.String())
		}
	}
	var out, errb bytes.Buffer
	if got := Run(t.Context(), []string{"table"}, strings.NewReader(""), &out, &errb); got != 0 || !strings.Contains(out.String(), "Available Commands") {
		t.Errorf("floe table: exit %d, stdout %q", got, out.String())
	}
}

// TestBuildJSONShape: floe sync prints a build as floe run does, snake_case
// with units in the names.
func TestBuildJSONShape(t *testing.T) {
	var out bytes.Buffer
	a := &app{stdout: &out, stderr: &bytes.Buffer{}, format: "jsonl"}
	res := &transform.Result{Transform: "sync a -> b", Reason: "output b does not exist", Started: time.Unix(1, 0), Duration: 1500 * time.Microsecond,
		Inputs:  []transform.InputRange{{Name: "source", Table: "a", End: "7", Snapshots: 1}},
		Outputs: []transform.OutputResult{{Name: "destination", Table: "b", Operation: "replace", Committed: true, SnapshotID: 9, RowsAdded: 2}}}
	if err := a.reportBuild(res); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "duration_ms,inputs,outcome,outputs,reason,started,transform" || got["duration_ms"] != 1.5 ||
		got["outcome"] != "full" || got["transform"] != "sync a -> b" {
		t.Errorf("got %s", out.String())
	}
	o := got["outputs"].([]any)[0].(map[string]any)
	if o["rows_added"] != 2.0 || o["snapshot_id"] != 9.0 {
		t.Errorf("output %v", o)
	}
}

// TestOldSpellingsWarn: the old names of --key work and warn on stderr,
// never on stdout.
func TestOldSpellingsWarn(t *testing.T) {
	wh := t.TempDir()
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(t.Context(), append([]string{"--warehouse", wh}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	run("namespace", "create", "shop")
	code, out, errb := run("table", "create", "shop.t", "--schema", "id long not null", "--identifier", "id")
	if code != 0 || out != "" || !strings.Contains(errb, "--identifier is an old spelling of --key") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errb)
	}
	code, out, errb = run("table", "describe", "shop.t", "--format", "json")
	if code != 0 || !strings.Contains(out, `"identifier_fields": [`+"\n"+`    "id"`) || errb != "" {
		t.Errorf("the table's key: exit %d %s %s", code, out, errb)
	}
	code, out, errb = run("changelog", "shop.t", "--identifier-columns", "id", "--format", "jsonl")
	if code != 0 || out != "" || !strings.Contains(errb, "--identifier-columns is an old spelling of --key") {
		t.Errorf("changelog: exit %d, stdout %q, stderr %q", code, out, errb)
	}
}

// TestOutputFormatFromExtension: --output takes its format from the file's
// extension unless --format names one.
func TestOutputFormatFromExtension(t *testing.T) {
	for path, want := range map[string]rowfile.OutputFormat{"a.csv": rowfile.OutputCSV, "a.JSONL": rowfile.OutputJSONL,
		"a.ndjson": rowfile.OutputJSONL, "a.json": rowfile.OutputJSON, "a.parquet": rowfile.OutputParquet} {
		if got, ok := outputFormatOf(path); !ok || got != want {
			t.Errorf("%s: %v %v", path, got, ok)
		}
	}
	if _, ok := outputFormatOf("a.txt"); ok {
		t.Errorf("a.txt has no format of its own")
	}
	wh := t.TempDir()
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		if code := Run(t.Context(), append([]string{"--warehouse", wh}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("floe %v: %s", args, errb.String())
		}
	}
	run("namespace", "create", "shop")
	run("table", "create", "shop.t", "--schema", "id long")
	in := filepath.Join(dir, "in.csv")
	if err := os.WriteFile(in, []byte("id\n1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("table", "append", "shop.t", in)
	for name, want := range map[string]string{"o.csv": "id\n1\n", "o.jsonl": "{\"id\":1}\n", "o.json": "[\n{\"id\":1}\n]\n"} {
		p := filepath.Join(dir, name)
		run("table", "scan", "shop.t", "--output", p)
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s holds %q, want %q", name, b, want)
		}
	}
	p := filepath.Join(dir, "forced.csv")
	run("table", "scan", "shop.t", "--output", p, "--format", "jsonl")
	if b, _ := os.ReadFile(p); string(b) != "{\"id\":1}\n" {
		t.Errorf("--format jsonl into forced.csv: %q", b)
	}
}
