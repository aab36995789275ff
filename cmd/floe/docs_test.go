package main_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/internal/cli"
	"github.com/floedata/floe/internal/testdir"
)

// TestDocs runs every command example of README.md, docs/*.md and floe's
// --help texts with the real binary, so none can rot.
//
// Markdown: the lines of each ```sh or ```console block run in order, all
// blocks of one document in one fresh work folder (so later examples see
// what earlier ones made), after that document's prelude (docsPreludes:
// the input files its examples name). A command spans lines while a quote
// is open or a line ends with a backslash. Which lines run:
//
//   - floe ... (also with VAR=value before it, or piped from cat/echo), and
//     go run ./cmd/floe ... (run as floe ...): through bash, with the
//     binary first on PATH; it must exit 0, or N when its comment starts
//     with "exit N" (floe status p.yaml --check   # exit 3);
//   - echo, printf and cat lines that make input files: through bash;
//   - floe lines that run until a signal (--every, floe serve): skipped,
//     counted (background_test.go covers them);
//   - anything else (go install, go test, bash .ci/..., a cron line, a
//     program built on package cmdline): skipped, counted.
//
// A block preceded by <!-- docs-test: skip (REASON) --> is skipped and
// counted; one without a reason fails the test. [--opt ARG] in a synopsis
// line runs without the optional part; ID stands for the current snapshot
// id of the line's first table that has one, else of shop.orders (the
// first one after --start-snapshot-id; the example ids the docs use count
// as ID too);
// the time of --as-of stands for a time after the examples' commits, so
// the test passes the current time.
//
// Cobra: the Example lines of every command of cli's command tree run the
// same way, each command's examples in a fresh work folder after
// helpPrelude; docsHelpSkips names the few that cannot run here.
func TestDocs(t *testing.T) {
	root := testdir.ModuleRoot()
	if root == "" {
		t.Fatal("no module root")
	}
	docs := []string{filepath.Join(root, "README.md")}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, more...)
	defer func() {
		t.Logf("docs test: %d commands run, %d blocks and %d lines skipped", docsRan.Load(), docsSkippedBlocks.Load(), docsSkippedLines.Load())
	}()
	t.Run("markdown", func(t *testing.T) {
		for _, path := range docs {
			name, _ := filepath.Rel(root, path)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				text, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				blocks, err := docBlocks(string(text))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				work := docsWork(t)
				if p := docsPreludes[name]; p != "" {
					runPrelude(t, work, p)
				}
				for _, b := range blocks {
					if b.skip != "" {
						t.Logf("%s:%d: block skipped (%s)", name, b.line, b.skip)
						docsSkippedBlocks.Add(1)
						continue
					}
					for _, c := range b.cmds {
						runDocCmd(t, work, fmt.Sprintf("%s:%d", name, c.line), c)
					}
				}
			})
		}
	})
	t.Run("help", func(t *testing.T) {
		var walk func(c *cobra.Command)
		walk = func(c *cobra.Command) {
			path := c.CommandPath()
			if ex := c.Example; ex != "" {
				t.Run(strings.ReplaceAll(path, " ", "_"), func(t *testing.T) {
					t.Parallel()
					cmds, err := exampleCmds(ex)
					if err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					work := docsWork(t)
					runPrelude(t, work, filesPrelude+pipelinePrelude)
					if !helpFromEmpty[path] {
						runPrelude(t, work, shopPrelude)
					}
					if p := helpSetup[path]; p != "" {
						runPrelude(t, work, p)
					}
					for _, c := range cmds {
						if why := helpSkip(path, c.text); why != "" {
							t.Logf("%s: %q skipped (%s)", path, c.text, why)
							docsSkippedLines.Add(1)
							continue
						}
						runDocCmd(t, work, path+" --help", c)
					}
				})
			}
			for _, sub := range c.Commands() {
				walk(sub)
			}
		}
		walk(cli.NewCommand(nil, io.Discard, io.Discard))
	})
}

// Counts for the summary TestDocs prints.
var docsRan, docsSkippedBlocks, docsSkippedLines atomic.Int64

// docsHelpSkips lists --help examples that cannot run against a fresh
// local warehouse, by command path and a text of the line, with the reason.
var docsHelpSkips = []struct{ cmd, text, why string }{
	{"", "s3://", "needs S3"},
	{"", "--catalog lake", "needs a configured catalog named lake"},
	{"", "--storage lake", "needs a configured storage named lake"},
	{"", "/data/lake", "writes outside the work folder"},
	{"", "/tmp/floe-demo", "writes outside the work folder"},
	{"floe table register", "", "registers tables of other engines' warehouses (e2e scripts register the shared ones)"},
}

func helpSkip(cmd, line string) string {
	for _, s := range docsHelpSkips {
		if (s.cmd == "" || s.cmd == cmd) && strings.Contains(line, s.text) {
			return s.why
		}
	}
	if longRunning(line) {
		return "runs until a signal"
	}
	return ""
}

// docsPreludes holds, per document, the shell lines that make the input
// files and the tables its examples name but do not make (floe is on PATH).
var docsPreludes = map[string]string{
	"README.md":         readmePrelude,
	"docs/pipelines.md": filesPrelude + pipelinePrelude + shopPrelude,
}

const readmePrelude = `
set -e
printf '{"id":1,"customer":"ann","status":"open","amount":150.00,"ts":"2024-05-02T10:00:00Z","tags":["a"]}\n{"id":2,"customer":"bob","status":"open","amount":20.50,"ts":"2024-05-03T11:00:00Z","tags":[]}\n' > events.jsonl
printf 'id,customer,status,amount,ts\n3,cy,cancelled,10.00,2024-05-04T09:00:00Z\n' > more.csv
printf '{"id":7,"customer":"dee","status":"open","amount":99.00,"ts":"2024-05-05T09:00:00Z","tags":null}\n' > new.jsonl
printf '{"id":4,"customer":"eve","status":"open","amount":300.00,"ts":"2024-05-01T08:00:00Z","tags":["b"]}\n' >> events.jsonl
floe namespace create tmp >/dev/null 2>&1
floe table create tmp.o --schema "id long not null, customer string, status string, amount decimal(10,2), ts timestamp, tags list<string>" --key id >/dev/null 2>&1
floe table append tmp.o events.jsonl >/dev/null 2>&1
floe table scan tmp.o --where "id = 4" --output orders.parquet >/dev/null 2>&1
floe table scan tmp.o --where "id = 2" --output fixed.parquet >/dev/null 2>&1
sed -i '/"id":4/d' events.jsonl
floe table drop tmp.o --purge >/dev/null 2>&1
floe namespace drop tmp >/dev/null 2>&1
printf '{"id":1,"status":"open","seq":1,"_change_type":"UPDATE_AFTER"}\n{"id":2,"seq":2,"_change_type":"DELETE"}\n' > cdc.jsonl
floe --warehouse legacy namespace create x >/dev/null 2>&1
floe --warehouse legacy table create x.t --schema "id long" >/dev/null 2>&1
mkdir -p DIR/path/to/metadata
cp "$(find legacy -name '*.metadata.json' | sort | tail -1)" DIR/path/to/metadata/v4.metadata.json
floe namespace create scratch >/dev/null 2>&1
floe table create scratch.events --schema "id long" >/dev/null 2>&1
floe namespace create shop >/dev/null 2>&1
floe table create shop.active --schema "id long not null, buyer string, status string, note string, amount decimal(12,2), ts timestamp, tags list<string>" --key id >/dev/null 2>&1
floe table create shop.orders_copy --schema "id long not null, buyer string, status string, note string, amount decimal(12,2), ts timestamp, tags list<string>" --key id >/dev/null 2>&1
cat > pipeline.yaml <<'YAML'
transforms:
  - name: open_orders
    type: sync
    source: shop.orders
    destination: shop.open_orders
    key: [id]
    filter: "status = 'open'"
    columns: [id, buyer, amount]
YAML
`

// filesPrelude writes the input files the --help examples and
// docs/pipelines.md name, and namespaces a drop example can drop.
const filesPrelude = `
set -e
printf '{"id":1,"status":"open","region":"eu","seq":1,"_change_type":"UPDATE_AFTER"}\n' > cdc.jsonl
printf 'id,status\n5,open\n' > orders.csv
printf 'id,status,region\n6,open,eu\n' > orders-2.csv
printf '{"id":6,"status":"open","region":"eu"}\n' > new.jsonl
floe namespace create scratch >/dev/null 2>&1
floe namespace create staging >/dev/null 2>&1
floe table create staging.t --schema "id long" >/dev/null 2>&1
floe namespace create analytics >/dev/null 2>&1
floe namespace create archive >/dev/null 2>&1
floe namespace create analytics.daily >/dev/null 2>&1
floe table create analytics.daily.t --schema "id long not null, status string, region string" >/dev/null 2>&1
floe table append analytics.daily.t orders-2.csv >/dev/null 2>&1
floe table scan analytics.daily.t --columns id,status --output orders.parquet >/dev/null 2>&1
floe table scan analytics.daily.t --output orders-1.parquet >/dev/null 2>&1
floe table drop analytics.daily.t --purge >/dev/null 2>&1
`

// pipelinePrelude writes pipeline.yaml: two transforms of shop's tables.
const pipelinePrelude = `
cat > pipeline.yaml <<'YAML'
transforms:
  - name: active_orders
    type: sync
    source: shop.orders
    destination: shop.active_orders
    key: [id]
    filter: "status = 'active'"
    columns: [id, customer, amount]
    freshness: {warn_after: 30m, error_after: 2h}
  - name: big_orders
    type: filter
    source: shop.orders_log
    destination: shop.big_orders
    filter: "amount > 100"
YAML
`

// shopPrelude makes table shop.orders with a few snapshots, shop.orders_log
// and shop.active, and changes.parquet: what most examples start from.
const shopPrelude = `
set -e
floe namespace create shop >/dev/null 2>&1
floe table create shop.orders --schema "id long not null, customer string, status string, amount decimal(10,2), price decimal(10,2), qty int, legacy string, region string not null, ts timestamp" --key id --partition-by "day(ts)" >/dev/null 2>&1
printf '{"id":1,"customer":"ann","status":"active","amount":150.00,"price":3.50,"qty":1,"region":"eu","ts":"2024-05-01T10:00:00Z"}\n' | floe table append shop.orders - --input-format jsonl >/dev/null 2>&1
printf '{"id":2,"customer":"bob","status":"test","amount":20.00,"price":12.00,"qty":2,"region":"us","ts":"2024-05-03T10:00:00Z"}\n' | floe table append shop.orders - --input-format jsonl >/dev/null 2>&1
floe table create shop.orders_log --schema "id long not null, amount decimal(10,2), ts timestamp" >/dev/null 2>&1
printf '{"id":1,"amount":150.00,"ts":"2024-05-01T10:00:00Z"}\n' | floe table append shop.orders_log - --input-format jsonl >/dev/null 2>&1
floe table create shop.active --schema "id long not null, customer string, status string, amount decimal(10,2), price decimal(10,2), qty int, legacy string, region string, ts timestamp" --key id >/dev/null 2>&1
floe changelog shop.orders --output changes.parquet >/dev/null 2>&1
floe table create shop.orders_copy --schema "id long not null, customer string, status string, amount decimal(10,2), price decimal(10,2), qty int, legacy string, region string not null, ts timestamp" --key id >/dev/null 2>&1
floe table scan shop.orders --where "id = 2" --output day-2024-05-01.parquet >/dev/null 2>&1
`

// helpFromEmpty lists the commands whose examples start from a warehouse
// without table shop.orders (they make it).
var helpFromEmpty = map[string]bool{
	"floe": true, "floe namespace": true, "floe namespace create": true,
	"floe table": true, "floe table create": true, "floe init": true, "floe demo": true,
}

// helpSetup holds what one command's examples need beyond the preludes.
var helpSetup = map[string]string{
	"floe table branch drop":      "floe table branch create shop.orders audit",
	"floe table scan":             "floe table branch create shop.orders audit",
	"floe table properties unset": "floe table properties set shop.orders commit.retry.num-retries=10",
	"floe table drop":             "floe table create shop.orders_old --schema 'id long' && floe table create shop.scratch --schema 'id long'",
	"floe table":                  "floe namespace create shop",
	"floe table create":           "floe namespace create shop",
	"floe table tag drop":         "floe table tag create shop.orders eom-2024-05",
}

// docCmd is one command line of an example.
type docCmd struct {
	line int    // first line in its document (1-based)
	text string // the command, lines joined, comment removed
	// what: "floe", "shell" (makes a file), or why it is skipped
	what string
	exit int // the exit status it must have
}

type docBlock struct {
	line int
	skip string // the reason it is skipped, if it is
	cmds []docCmd
}

var (
	fenceRe    = regexp.MustCompile("^```\\s*(\\w*)")
	skipRe     = regexp.MustCompile(`^<!--\s*docs-test:\s*skip\b\s*(.*?)\s*-->$`)
	exitRe     = regexp.MustCompile(`^#\s*exit (\d+)\b`)
	optionalRe = regexp.MustCompile(`\s\[[^\]]*\]`)
	docIDRe    = regexp.MustCompile(`(=|\s)(ID|3051729675574597004|305|912)(\s|$)`)
	asOfRe     = regexp.MustCompile(`--as-of \d{4}-\d\d-\d\dT[\d:]+Z`)
	fileCmdRe  = regexp.MustCompile(`^(echo|printf|cat)\b.*>`)
)

// docBlocks returns the sh and console blocks of a Markdown text.
func docBlocks(text string) ([]docBlock, error) {
	var out []docBlock
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRe.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		start := i
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		if m[1] != "sh" && m[1] != "console" {
			continue
		}
		b := docBlock{line: start + 1}
		prev := ""
		for j := start - 1; j >= 0; j-- {
			if s := strings.TrimSpace(lines[j]); s != "" {
				prev = s
				break
			}
		}
		if sm := skipRe.FindStringSubmatch(prev); sm != nil {
			reason := strings.TrimSuffix(strings.TrimPrefix(sm[1], "("), ")")
			if strings.TrimSpace(reason) == "" {
				return nil, fmt.Errorf("line %d: a docs-test skip without a reason", start+1)
			}
			b.skip = reason
		}
		cmds, err := commandLines(body, start+2, m[1] == "console")
		if err != nil {
			return nil, fmt.Errorf("block at line %d: %v", start+1, err)
		}
		b.cmds = cmds
		out = append(out, b)
	}
	return out, nil
}

// exampleCmds returns the command lines of a cobra Example text.
func exampleCmds(ex string) ([]docCmd, error) {
	return commandLines(strings.Split(ex, "\n"), 1, false)
}

// commandLines joins continued lines into commands, splits off their
// comments and classifies them. In a console block only lines starting
// with "$ " are commands.
func commandLines(lines []string, first int, console bool) ([]docCmd, error) {
	var out []docCmd
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if console {
			if !strings.HasPrefix(l, "$ ") {
				continue
			}
			l = strings.TrimPrefix(l, "$ ")
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := docCmd{line: first + i}
		text := l
		for {
			code, comment, open := splitComment(text)
			if open != 0 || strings.HasSuffix(code, "\\") {
				if i+1 >= len(lines) {
					return nil, fmt.Errorf("line %d: the command does not end", c.line)
				}
				i++
				if open != 0 {
					text += "\n" + lines[i]
				} else {
					text = strings.TrimRight(strings.TrimSuffix(code, "\\"), " ") + " " + strings.TrimSpace(lines[i])
				}
				continue
			}
			c.text = strings.TrimSpace(code)
			if m := exitRe.FindStringSubmatch(comment); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			break
		}
		c.what = classify(c.text)
		if strings.HasPrefix(c.text, "go run ./cmd/floe") {
			c.text = "floe" + strings.TrimPrefix(c.text, "go run ./cmd/floe")
		}
		out = append(out, c)
	}
	return out, nil
}

// splitComment splits a shell line at its comment (a # after a space,
// outside quotes); open is the quote left open at the end, if any.
func splitComment(s string) (code, comment string, open byte) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case open != 0:
			if c == open {
				open = 0
			}
		case c == '"' || c == '\'':
			open = c
		case c == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return strings.TrimRight(s[:i], " \t"), strings.TrimSpace(s[i:]), 0
		}
	}
	return s, "", open
}

var floeCmdRe = regexp.MustCompile(`^([A-Z_]+=\S*\s+)*floe\s|^(cat|echo|printf)\b[^|]*\|\s*floe\s`)

func classify(text string) string {
	switch {
	case strings.HasPrefix(text, "go run ./cmd/floe"):
		return "floe"
	case floeCmdRe.MatchString(text):
		if longRunning(text) {
			return "runs until a signal"
		}
		return "floe"
	case fileCmdRe.MatchString(text):
		return "shell"
	}
	return "not a floe command"
}

func longRunning(text string) bool {
	return strings.Contains(text, "--every ") || regexp.MustCompile(`\bfloe\s+serve\b`).MatchString(text)
}

// docsWork returns a fresh work folder with a bin folder holding floe.
func docsWork(t *testing.T) string {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, ".home"), 0o755); err != nil {
		t.Fatal(err)
	}
	return work
}

func docsEnv(work string) []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(k, "FLOE_") || strings.HasPrefix(k, "PYICEBERG_") || strings.HasPrefix(k, "AWS_") || k == "HOME" || k == "PATH" {
			continue
		}
		env = append(env, e)
	}
	return append(env, "HOME="+filepath.Join(work, ".home"),
		"PATH="+filepath.Dir(floeBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func bash(t *testing.T, work, script string) (string, int) {
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = work
	cmd.Env = docsEnv(work)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return out.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), 0
}

func runPrelude(t *testing.T, work, script string) {
	t.Helper()
	if out, code := bash(t, work, script); code != 0 {
		t.Fatalf("prelude: exit %d\n%s", code, out)
	}
}

// runDocCmd runs one example line in work and checks its exit status.
func runDocCmd(t *testing.T, work, where string, c docCmd) {
	t.Helper()
	switch c.what {
	case "floe", "shell":
	default:
		t.Logf("%s: skipped (%s): %s", where, c.what, firstLine(c.text))
		docsSkippedLines.Add(1)
		return
	}
	docsRan.Add(1)
	text := optionalRe.ReplaceAllString(c.text, "")
	if strings.Contains(text, "./events") {
		linkEvents(t, work)
	}
	text = asOfRe.ReplaceAllString(text, "--as-of "+time.Now().Add(time.Minute).UTC().Format(time.RFC3339))
	var b strings.Builder
	last := 0
	for _, m := range docIDRe.FindAllStringSubmatchIndex(text, -1) {
		first := strings.HasSuffix(strings.TrimSpace(text[:m[2]+1]), "--start-snapshot-id")
		b.WriteString(text[last:m[4]])
		b.WriteString(snapshotOf(t, work, text, first))
		last = m[5]
	}
	text = b.String() + text[last:]
	out, code := bash(t, work, text)
	if code != c.exit {
		t.Errorf("%s: %s\nexit %d, want %d\n%s", where, text, code, c.exit, out)
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

var tableArgRe = regexp.MustCompile(`\s([a-z_]+\.[a-z_0-9]+)(\s|$)`)

// snapshotOf returns the current (or with first, the first) snapshot id
// of the first table named in a command line that has one, else of
// shop.orders (the source table of the examples).
func snapshotOf(t *testing.T, work, line string, first bool) string {
	for _, m := range append(tableArgRe.FindAllStringSubmatch(line, -1), []string{"", "shop.orders"}) {
		out, code := bash(t, work, "floe table snapshots "+m[1]+" --format csv")
		rows := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(rows) < 2 {
			continue
		}
		row := rows[len(rows)-1]
		if first {
			row = rows[1]
		}
		return strings.SplitN(row, ",", 2)[0]
	}
	t.Fatalf("no table with a snapshot in %q to take an id from", line)
	return ""
}

// linkEvents makes ./events a copy of a shared Delta table with a Change
// Data Feed (skipping the test when the shared data is absent).
func linkEvents(t *testing.T, work string) {
	dst := filepath.Join(work, "events")
	if _, err := os.Stat(dst); err == nil {
		return
	}
	src := testdir.Shared(t, "delta", "deltars-cdf-table")
	if out, code := bash(t, work, fmt.Sprintf("cp -r %q events", src)); code != 0 {
		t.Fatalf("copy %s: %s", src, out)
	}
}

func TestDocBlocks(t *testing.T) {
	md := "text\n```sh\nfloe a --x \"q # r\"   # exit 3\ncat x | floe b -\nprintf 'a\\n' > f.txt\ngo test ./...\nfloe c \\\n  --d e\nfloe m \"MERGE\n  INTO t\"\nfloe run p.yaml --every 1m\n```\n\n" +
		"<!-- docs-test: skip (needs S3) -->\n```sh\nfloe s3\n```\n```yaml\nfloe: no\n```\n"
	blocks, err := docBlocks(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[1].skip != "needs S3" || blocks[0].skip != "" {
		t.Fatalf("blocks %+v", blocks)
	}
	want := []docCmd{
		{line: 3, text: `floe a --x "q # r"`, what: "floe", exit: 3},
		{line: 4, text: "cat x | floe b -", what: "floe"},
		{line: 5, text: `printf 'a\n' > f.txt`, what: "shell"},
		{line: 6, text: "go test ./...", what: "not a floe command"},
		{line: 7, text: "floe c --d e", what: "floe"},
		{line: 9, text: "floe m \"MERGE\n  INTO t\"", what: "floe"},
		{line: 11, text: "floe run p.yaml --every 1m", what: "runs until a signal"},
	}
	if got := blocks[0].cmds; !slices.Equal(got, want) {
		t.Errorf("commands\n got %+v\nwant %+v", got, want)
	}
	if _, err := docBlocks("<!-- docs-test: skip -->\n```sh\nfloe x\n```\n"); err == nil {
		t.Error("a skip without a reason was accepted")
	}
}
