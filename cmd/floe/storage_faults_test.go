package main_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/objstoretest"
)

// faultCommand is one command kind of the storage fault trials. args may
// use {N} (the trial number) and {DELTA}; files are written before it runs.
type faultCommand struct {
	name   string
	args   string
	files  func(n int) map[string]string
	tables []string // tables whose rows are compared
	// apart: each table is its own commit (a pipeline's transforms), so a
	// failed run may have committed some of them; each table must still be
	// unchanged or complete (the comparison with local disk after the rerun).
	apart bool
}

var faultCommands = []faultCommand{
	{name: "append", args: "table append f.cow add{N}.csv", tables: []string{"f.cow"}, files: func(n int) map[string]string {
		var b strings.Builder
		b.WriteString("id,status,amount\n")
		for i := range 20 {
			fmt.Fprintf(&b, "%d,%s,%d\n", 1000+n*100+i, []string{"open", "closed"}[i%2], i)
		}
		return map[string]string{fmt.Sprintf("add%d.csv", n): b.String()}
	}},
	{name: "delete (copy-on-write)", args: `table delete f.cow --where "id % 7 = {N} % 7"`, tables: []string{"f.cow"}},
	{name: "update (position deletes)", args: `table update f.pos --set "amount = amount + 1" --where "id % 5 = {N} % 5"`, tables: []string{"f.pos"}},
	{name: "delete (deletion vectors)", args: `table delete f.dv --where "id % 11 = {N} % 11"`, tables: []string{"f.dv"}},
	{name: "overwrite", args: `table overwrite f.cow ow{N}.csv --where "id < 5"`, tables: []string{"f.cow"}, files: func(n int) map[string]string {
		return map[string]string{fmt.Sprintf("ow%d.csv", n): fmt.Sprintf("id,status,amount\n1,open,%d\n2,closed,%d\n", n, n*2)}
	}},
	{name: "apply (equality deletes)", args: "apply f.eq --changes ch{N}.jsonl --key id --delete-mode equality", tables: []string{"f.eq"}, files: faultChanges},
	{name: "apply (position deletes)", args: "apply f.pos --changes ch{N}.jsonl --key id", tables: []string{"f.pos"}, files: faultChanges},
	{name: "merge", args: `merge "MERGE INTO f.dv t USING 'ch{N}.jsonl' s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *"`, tables: []string{"f.dv"}, files: faultChanges},
	{name: "sync", args: `sync f.pos f.synced --key id --filter "status = 'open'"`, tables: []string{"f.synced"}},
	{name: "compact", args: "table compact f.pos", tables: []string{"f.pos"}},
	{name: "delta sync", args: "delta sync {DELTA}/deltars-cdf-table-with-cdc-and-dvs f.delta --equality-columns id --max-versions 3", tables: []string{"f.delta"}},
	{name: "pipeline", args: "run faults.yaml --once --quiet", tables: []string{"f.p_sync", "f.p_filter"}, apart: true},
}

func faultChanges(n int) map[string]string {
	var b strings.Builder
	for i := range 12 {
		id := (n*13 + i*7) % 60
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, `{"id":%d,"status":null,"amount":null,"_change_type":"DELETE"}`+"\n", id)
		case 1:
			fmt.Fprintf(&b, `{"id":%d,"status":"new","amount":%d,"_change_type":"INSERT"}`+"\n", 500+n*20+i, i)
		default:
			fmt.Fprintf(&b, `{"id":%d,"status":"open","amount":%d,"_change_type":"UPDATE_AFTER"}`+"\n", id, n*10+i)
		}
	}
	return map[string]string{fmt.Sprintf("ch%d.jsonl", n): b.String()}
}

const faultsPipeline = `transforms:
  - name: p_sync
    type: sync
    source: f.eq
    destination: f.p_sync
    key: [id]
    filter: "status = 'open'"
  - name: p_filter
    type: filter
    source: f.cow
    destination: f.p_filter
    filter: "amount > 5"
`

// TestStorageFaults injects storage faults (503 SlowDown, 500, connection
// resets before and in the middle of an answer, stalls longer than the
// request timeout, latency) at a random point of every command kind, run
// on s3proxy through the fault proxy, in two shapes: a blip (one to three
// faults, which the retries must ride out) and an outage (every request
// from that point fails until the retry budget is spent, so the command
// must fail). After each trial the tables on S3 must hold exactly the rows
// of the same history on local disk (no partial commit, nothing lost); a
// failed command is rerun without faults and must converge. Counts are
// logged (docs/reliability.md, storage faults). FLOE_STORAGE_FAULT_TRIALS sets the
// number of trials (default 12), FLOE_STORAGE_FAULT_SEED the seed.
func TestStorageFaults(t *testing.T) {
	trials := 12
	if v := os.Getenv("FLOE_STORAGE_FAULT_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("FLOE_STORAGE_FAULT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seed = n
	}
	t.Logf("seed %d (FLOE_STORAGE_FAULT_SEED=%d replays it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 1))
	shared := sharedDelta(t)
	srv := objstoretest.StartS3(t)
	srv.CreateBucket(t, "faults")
	srv.Upload(t, filepath.Join(shared, "deltars-cdf-table-with-cdc-and-dvs"), "faults", "delta/deltars-cdf-table-with-cdc-and-dvs")
	px := objstoretest.NewProxy(t, srv.Endpoint)

	localWork, s3Work := t.TempDir(), t.TempDir()
	keys := s3Keys(srv, px.URL)
	keys["s3.request-timeout"] = "1s"
	keys["s3.retry.total-timeout"] = "3s"
	keys["s3.retry.max-wait-ms"] = "500"
	env := noAWSEnv(t)
	type side struct {
		work   string
		global []string
		delta  string
	}
	local := side{localWork, []string{"--warehouse", "wh"}, shared}
	remote := side{s3Work, []string{"--config", "floe.yaml", "--catalog", "lake"}, "s3://faults/delta"}
	// Write the configuration once through floeIn, then run directly.
	if code, stderr := floeIn(t, s3Work, "s3://faults/wh", keys, env, "namespace", "create", "f"); code != 0 {
		t.Fatal(stderr)
	}
	run := func(s side, n int, args string) (int, string) {
		t.Helper()
		a, err := splitArgs(strings.NewReplacer("{N}", strconv.Itoa(n), "{DELTA}", s.delta).Replace(args))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(floeBin, append(append([]string{}, s.global...), a...)...)
		cmd.Dir = s.work
		cmd.Env = append(append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true"), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), stderr.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, stdout.String()
	}
	must := func(s side, args string) {
		t.Helper()
		if code, out := run(s, 0, args); code != 0 {
			t.Fatalf("setup floe %s: %s", args, out)
		}
	}
	if code, out := run(local, 0, "namespace create f"); code != 0 {
		t.Fatal(out)
	}
	for _, s := range []side{local, remote} {
		if err := os.WriteFile(filepath.Join(s.work, "base.csv"), []byte(baseRows()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.work, "faults.yaml"), []byte(faultsPipeline), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, c := range []string{
			`table create f.cow --schema "id long not null, status string, amount double" --identifier id`,
			`table create f.pos --schema "id long not null, status string, amount double" --identifier id --property write.delete.mode=merge-on-read --property write.update.mode=merge-on-read --property write.merge.mode=merge-on-read`,
			`table create f.dv --schema "id long not null, status string, amount double" --identifier id --format-version 3 --property write.delete.mode=merge-on-read --property write.update.mode=merge-on-read --property write.merge.mode=merge-on-read`,
			`table create f.eq --schema "id long not null, status string, amount double" --identifier id --property write.merge.mode=merge-on-read`,
			"table append f.cow base.csv", "table append f.pos base.csv", "table append f.dv base.csv", "table append f.eq base.csv",
		} {
			must(s, c)
		}
	}
	scan := func(s side, table string) string {
		t.Helper()
		code, out := run(s, 0, "table scan "+table+" --format jsonl")
		if code != 0 {
			if strings.Contains(out, "no such table") || strings.Contains(out, "does not exist") {
				return "<no table>"
			}
			t.Fatalf("scan %s: %s", table, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		sort.Strings(lines)
		return strings.Join(lines, "\n")
	}
	orphans := func(table string) int {
		code, out := run(remote, 0, "table remove-orphans "+table+" --older-than 0s --dry-run --format jsonl")
		if code != 0 {
			return 0
		}
		return strings.Count(strings.TrimSpace(out), "\n") + 1 - boolInt(strings.TrimSpace(out) == "")
	}

	kinds := []objstoretest.Fault{objstoretest.SlowDown, objstoretest.InternalError, objstoretest.Reset, objstoretest.ResetMidBody, objstoretest.Pause, objstoretest.Latency}
	type tally struct{ trials, rode, failed, partial, created, converged, orphans int }
	byCmd := map[string]*tally{}
	injected := map[objstoretest.Fault]int{}
	for n := 1; n <= trials; n++ {
		c := faultCommands[(n-1)%len(faultCommands)]
		tl := byCmd[c.name]
		if tl == nil {
			tl = &tally{}
			byCmd[c.name] = tl
		}
		tl.trials++
		if c.files != nil {
			for name, content := range c.files(n) {
				for _, s := range []string{localWork, s3Work} {
					if err := os.WriteFile(filepath.Join(s, name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		before := map[string]string{}
		orphansBefore := map[string]int{}
		for _, tb := range c.tables {
			before[tb] = scan(remote, tb)
			orphansBefore[tb] = orphans(tb)
		}
		outage := r.IntN(2) == 0
		kind := kinds[r.IntN(len(kinds))]
		plan := objstoretest.FaultPlan{Rate: 1, Kinds: []objstoretest.Fault{kind}, After: int64(r.IntN(12)), Seed: r.Uint64(),
			Pause: 2 * time.Second, Latency: 300 * time.Millisecond, Limit: 1 + r.IntN(3)}
		if outage {
			plan.Limit = 0
			if kind == objstoretest.Latency {
				plan.Kinds = []objstoretest.Fault{objstoretest.SlowDown}
			}
		}
		px.SetFaults(plan)
		code, out := run(remote, n, c.args)
		px.SetFaults(objstoretest.FaultPlan{})
		for k, v := range px.Injected() {
			injected[k] += v
		}
		shape := "blip"
		if outage {
			shape = "outage"
		}
		if code == 0 {
			tl.rode++
		} else {
			tl.failed++
			// No partial commit: the tables are as before the command.
			for _, tb := range c.tables {
				got := scan(remote, tb)
				if before[tb] == "<no table>" && got == "" {
					// The command created its (empty) destination in its own
					// catalog commit before failing to fill it.
					tl.created++
					continue
				}
				if got != before[tb] && !c.apart {
					tl.partial++
					t.Errorf("trial %d (%s, %s of %v after request %d): the failed command changed %s:\nbefore:\n%s\nafter:\n%s\nerror: %s",
						n, c.name, shape, kind, plan.After, tb, before[tb], got, out)
				}
				tl.orphans += orphans(tb) - orphansBefore[tb]
			}
			if code2, out2 := run(remote, n, c.args); code2 != 0 {
				t.Fatalf("trial %d (%s): the rerun without faults failed: %s", n, c.name, out2)
			}
		}
		if code, out := run(local, n, c.args); code != 0 {
			t.Fatalf("trial %d (%s) on local disk: %s", n, c.name, out)
		}
		converged := true
		for _, tb := range c.tables {
			if l, s := scan(local, tb), scan(remote, tb); l != s {
				converged = false
				t.Errorf("trial %d (%s, %s of %v after request %d, exit %d): %s on S3 differs from local disk:\nlocal:\n%s\ns3:\n%s\noutput: %s",
					n, c.name, shape, kind, plan.After, code, tb, l, s, out)
			}
		}
		if converged && code != 0 {
			tl.converged++
		}
		t.Logf("trial %d: %s, %s of %v after request %d: exit %d", n, c.name, shape, kind, plan.After, code)
	}
	var names []string
	for k := range byCmd {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("| command | trials | rode out the faults | failed | partial commits | empty destination created | reruns converged | files left by failed attempts |\n|---|---|---|---|---|---|---|---|\n")
	var total tally
	for _, k := range names {
		v := byCmd[k]
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d |\n", k, v.trials, v.rode, v.failed, v.partial, v.created, v.converged, v.orphans)
		total.trials += v.trials
		total.rode += v.rode
		total.failed += v.failed
		total.partial += v.partial
		total.created += v.created
		total.converged += v.converged
		total.orphans += v.orphans
	}
	fmt.Fprintf(&b, "| **all** | %d | %d | %d | %d | %d | %d | %d |\n", total.trials, total.rode, total.failed, total.partial, total.created, total.converged, total.orphans)
	t.Logf("faults injected: %v\n%s", injected, b.String())
}

func baseRows() string {
	var b strings.Builder
	b.WriteString("id,status,amount\n")
	for i := range 60 {
		fmt.Fprintf(&b, "%d,%s,%d\n", i, []string{"open", "closed", "open"}[i%3], i)
	}
	return b.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
