//go:build interop

package interop_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floedata/floe/internal/faultproxy"
	"github.com/floedata/floe/interop"
)

// TestRESTFaults is issue 11's test against Apache Iceberg's REST catalog
// server: a fault-injecting proxy (internal/faultproxy) sits between floe
// and the server, and every floe command that commits is run, as the real
// binary, under one fault at a time (and under random faults): error answers
// before the server sees the commit, error answers and reset connections
// after it landed, an outage that starts with a lost commit answer (with and
// without recovery), and failed table loads. After each trial:
//
//   - floe never panics and exits 0 or 1;
//   - every file any snapshot of the table references exists;
//   - the table is either as before the command (nothing landed) or exactly as
//     one successful run leaves it: rows equal an expectation computed here
//     from the trial's inputs, the watermark properties are set, and the
//     command's snapshots landed once (never twice), each with its own
//     floe.commit-id;
//   - the exit status says what happened: 0 when the commit landed (with a
//     note that its answer was lost, when it was) or was retried after a
//     failure the catalog answered; non-zero only when nothing landed after a
//     load failure, or, when the catalog stayed unreachable, with an error
//     that says the outcome is unknown and names the table and commit id;
//   - a rerun of the same command without faults converges: the table exactly
//     as one successful run leaves it, and a sync, pipeline build or Delta sync
//     whose commit landed commits nothing;
//   - a sample of final tables read with PyIceberg (Spark for tables with
//     equality deletes) has the expected rows.
//
// One REST server and one proxy serve every trial; each trial works in its
// own namespace with its own fault plan (the proxy plan's scope), so workers
// run trials concurrently. Sizing and replay: FLOE_INTEROP_SEED (the trials'
// random choices), FLOE_INTEROP_FAULT_TRIALS (total, default two per command
// and fault kind), FLOE_INTEROP_FAULT_WORKERS (default 2),
// FLOE_INTEROP_FAULT_TRIAL (comma-separated trial numbers to run alone, as a
// failure prints), FLOE_INTEROP_FAULT_ENGINES=0 (skip the PyIceberg/Spark
// samples), FLOE_INTEROP_FAULT_BIN (a floe binary to test instead of this
// module's ./cmd/floe).
func TestRESTFaults(t *testing.T) {
	e := interop.Require(t)
	seed := uint64(envInt(t, "FLOE_INTEROP_SEED", 20261201))
	workers := max(envInt(t, "FLOE_INTEROP_FAULT_WORKERS", 2), 1)
	total := envInt(t, "FLOE_INTEROP_FAULT_TRIALS", 2*len(faultCommands)*len(faultKinds))
	engines := os.Getenv("FLOE_INTEROP_FAULT_ENGINES") != "0"
	only := map[int]bool{}
	if s := os.Getenv("FLOE_INTEROP_FAULT_TRIAL"); s != "" {
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("FLOE_INTEROP_FAULT_TRIAL=%q: want trial numbers", s)
			}
			only[n] = true
		}
	}
	t.Logf("random seed %d, %d trials, %d workers (set FLOE_INTEROP_SEED, FLOE_INTEROP_FAULT_TRIALS, FLOE_INTEROP_FAULT_WORKERS; FLOE_INTEROP_FAULT_TRIAL=N replays one)",
		seed, total, workers)

	ctx := testCtx(t)
	srv, err := interop.StartREST(ctx, e, interop.RESTOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	proxy, err := faultproxy.New(srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	direct, err := rest.NewCatalog(ctx, "direct", srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "floe-proxy.yaml")
	if err := os.WriteFile(cfg, []byte("catalog:\n  rest:\n    type: rest\n    uri: "+proxy.URL()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("FLOE_INTEROP_FAULT_BIN") // another build of floe to try, e.g. a branch's
	if bin == "" {
		bin = interop.FloeBinary(t)
	} else {
		t.Logf("floe binary %s (FLOE_INTEROP_FAULT_BIN)", bin)
	}
	env := &faultEnv{
		ctx: ctx, srv: srv, proxy: proxy, direct: direct, bin: bin,
		global: []string{"--config", cfg, "--catalog", "rest"}, dir: dir, engines: engines,
	}
	env.py = interop.SharedPy(t) // delta-rs writes the Delta tables
	if engines {
		spark := interop.SharedSpark(t)
		env.spark = spark
		env.sess = spark.TestSession(t, interop.SparkRESTCatalog("floe", srv.URI))
	}

	trials := planTrials(seed, total)
	results := make([]*trialResult, len(trials))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				results[i] = trials[i].run(env)
			}
		}()
	}
	start := time.Now()
	for i := range trials {
		if len(only) > 0 && !only[i] {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start)

	var done []*trialResult
	for i, r := range results {
		if r == nil {
			continue
		}
		done = append(done, r)
		if len(r.problems) > 0 {
			t.Errorf("trial %d failed: %s / %s (%s): %s\n%s\nreplay: FLOE_INTEROP_SEED=%d FLOE_INTEROP_FAULT_TRIALS=%d FLOE_INTEROP_FAULT_TRIAL=%d go test -tags interop -count=1 -v -run TestRESTFaults ./interop/",
				i, r.cmd, r.fault, r.detail, strings.Join(r.problems, "; "), r.log.String(), seed, total, i)
		} else if os.Getenv(interop.VerboseEnv) != "" {
			t.Logf("trial %d ok: %s / %s (%s)\n%s", i, r.cmd, r.fault, r.detail, r.log.String())
		}
	}
	t.Logf("%d trials in %s\n%s", len(done), elapsed.Round(time.Second), summarize(done))
}

// faultEnv is what every trial shares: the server, the proxy, the floe
// binary configured to reach the server through the proxy, iceberg-go's REST
// catalog on the server itself (to look at tables without faults), and the
// engines that sample-read the results.
type faultEnv struct {
	ctx     context.Context
	srv     *interop.RESTServer
	proxy   *faultproxy.Proxy
	direct  *rest.Catalog
	bin     string
	global  []string
	dir     string
	engines bool
	py      *interop.Py
	spark   *interop.Spark
	sess    string
}

// trial is one command under one fault.
type trial struct {
	index int
	cmd   *faultCommand
	fault *faultKind
	seed  uint64
}

// planTrials cycles through every command and fault kind until total
// trials; each trial's random choices come from (seed, its index).
func planTrials(seed uint64, total int) []*trial {
	var out []*trial
	for i := 0; len(out) < total; i++ {
		c := faultCommands[i%len(faultCommands)]
		f := faultKinds[(i/len(faultCommands))%len(faultKinds)]
		out = append(out, &trial{index: len(out), cmd: c, fault: f, seed: seed})
	}
	return out
}

// trialResult is what a trial found.
type trialResult struct {
	cmd, fault string
	detail     string // the command's variant and the fault's parameters
	problems   []string
	log        strings.Builder
	exit       int
	landed     bool
	fired      bool
	// engineReads counts the final tables read by PyIceberg and Spark.
	engineReads map[string]int
}

func (r *trialResult) problemf(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *trialResult) logf(format string, args ...any) {
	fmt.Fprintf(&r.log, "    "+format+"\n", args...)
}

// floeRun is one run of the floe binary.
type floeRun struct {
	args           []string
	stdout, stderr string
	exit           int // -1: did not start or was killed
	err            error
}

func (f *floeRun) String() string {
	s := fmt.Sprintf("floe %s: exit %d", shellJoin(f.args), f.exit)
	if f.stderr != "" {
		s += "\n      stderr: " + strings.ReplaceAll(strings.TrimSpace(truncateText(f.stderr, 3000)), "\n", "\n      ")
	}
	return s
}

// commandTimeout bounds one floe run; a run killed by it is a hang.
const commandTimeout = 2 * time.Minute

// runFloe runs the floe binary with the proxy's catalog in dir.
func (env *faultEnv) runFloe(dir string, args ...string) *floeRun {
	ctx, cancel := context.WithTimeout(env.ctx, commandTimeout)
	defer cancel()
	full := append(append([]string{}, env.global...), args...)
	cmd := exec.CommandContext(ctx, env.bin, full...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := &floeRun{args: args, stdout: stdout.String(), stderr: stderr.String(), err: err}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	default:
		r.exit = -1
	}
	if ctx.Err() != nil {
		r.exit = -1
	}
	return r
}

var panicRE = regexp.MustCompile(`panic:|goroutine \d+ \[|runtime error:`)

// unknownRE is what floe's error must say when the catalog stayed
// unreachable after a commit was sent.
var unknownRE = regexp.MustCompile(`(?i)outcome.{0,40}unknown|unknown.{0,40}outcome`)

// unknownIDRE finds the commit id in an unknown-outcome error.
var unknownIDRE = regexp.MustCompile(`commit ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})`)

// lostNoteRE is what floe must print when it succeeded although a commit's
// answer was lost.
var lostNoteRE = regexp.MustCompile(`(?i)answer.{0,80}\blost\b`)

// commitIDKey is the snapshot summary property carrying floe's commit id;
// lastCommitIDKey the table property with the id of the last commit (the
// only place a commit that moves a ref and writes no snapshot can leave it).
const (
	commitIDKey     = "floe.commit-id"
	lastCommitIDKey = "floe.last-commit-id"
)

// run runs the trial and checks it.
func (tr *trial) run(env *faultEnv) *trialResult {
	res := &trialResult{cmd: tr.cmd.name, fault: tr.fault.name, engineReads: map[string]int{}}
	r := rand.New(rand.NewPCG(tr.seed, uint64(tr.index)))
	ns := fmt.Sprintf("f%d", tr.index)
	dir := filepath.Join(env.dir, ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		res.problemf("setup: %v", err)
		return res
	}
	defer os.RemoveAll(dir)
	x := &trialCtx{env: env, r: r, ns: ns, dir: dir, res: res, fault: tr.fault}
	st, err := tr.cmd.prepare(x)
	if err != nil {
		res.problemf("setup: %v", err)
		return res
	}
	res.detail = st.variant

	// The model of the table before the command must be what floe reads
	// (a wrong model would make every later check meaningless).
	before := map[string]*tableState{}
	scan := tr.fault.name == "none" || r.IntN(3) == 0 // floe's read of the setup: sampled, it costs a run
	for _, ex := range st.tables {
		s := x.stateOf(ex, scan)
		before[ex.name] = s
		if problem := ex.matchesBefore(s); problem != "" {
			res.problemf("setup: %s before the command: %s", ex.name, problem)
			return res
		}
	}

	rules, desc := tr.fault.rules(r, st.posts)
	if desc != "" {
		res.detail += "; " + desc
	}
	plan := env.proxy.Start(faultproxy.Plan{Scope: "/v1/namespaces/" + ns + "/**", Rules: rules, Seed: r.Uint64()})
	run := env.runFloe(dir, st.args...)
	plan.Stop()
	plan.Wait() // a late commit lands before the table is looked at
	res.exit = run.exit
	res.logf("faulted run: %s", run)
	var firedLanded, firedCommit bool
	lostOn := map[string]bool{} // tables whose commit landed with its answer lost
	for _, e := range plan.Events() {
		res.logf("  %s", e)
		if e.Fired() {
			res.fired = true
			if e.Method == "POST" && faultproxy.Match(commitPath, e.Path) {
				firedCommit = true
				switch e.Fault.Action {
				case faultproxy.FailAfter, faultproxy.ResetAfter, faultproxy.DelayAfter:
					// The server took the commit and floe did not get its
					// answer.
					if e.Landed() && e.Status != e.Upstream {
						firedLanded = true
						parts := strings.Split(strings.Trim(e.Path, "/"), "/")
						lostOn[parts[len(parts)-3]+"."+parts[len(parts)-1]] = true
					}
				}
			}
		}
	}

	// The faulted run.
	checkRun(res, run, "faulted run")
	if tr.fault.name == "none" {
		if n := plan.Count("POST", commitPath); n != st.posts {
			res.problemf("a run without faults sent %d commit(s), the trial expects %d", n, st.posts)
		}
	}
	after, heads := x.states(st.tables)
	landed := map[string]bool{}
	anyLanded, allLanded := false, true
	var ids []string // of the commits that landed without an answer
	for _, ex := range st.tables {
		l, newIDs := ex.check(res, before[ex.name], after[ex.name], heads)
		landed[ex.name] = l
		anyLanded = anyLanded || l
		allLanded = allLanded && l
		if lostOn[ex.name] {
			ids = append(ids, newIDs...)
		}
	}
	res.landed = anyLanded
	switch {
	case run.exit == 0:
		if !allLanded {
			res.problemf("exit 0 but the change is not (all) there")
		}
		if firedLanded && !lostNoteRE.MatchString(run.stderr) {
			res.problemf("exit 0 after a lost commit answer, without a note that the answer was lost")
		}
	case run.exit == 1:
		switch {
		case tr.fault.unreachable && firedLanded:
			// The catalog stayed down after the commit went out: floe cannot
			// know, and must say so.
			if !unknownRE.MatchString(run.stderr) {
				res.problemf("the catalog stayed unreachable after a commit was sent, but the error does not say the outcome is unknown")
			}
			if !strings.Contains(run.stderr, ns+".") {
				res.problemf("the unknown-outcome error does not name the table")
			}
			for _, id := range ids {
				if !strings.Contains(run.stderr, id) {
					res.problemf("the unknown-outcome error does not name the landed commit id %s", id)
				}
			}
		case tr.fault.mayFail:
			if anyLanded && !unknownRE.MatchString(run.stderr) {
				res.problemf("exit 1 although a commit landed, and the error does not say the outcome is unknown")
			}
		case tr.fault.unreachable && !firedCommit:
			// The outage never started (no commit was sent): a failure
			// must leave nothing.
			if anyLanded {
				res.problemf("exit 1 although a commit landed")
			}
		default:
			res.problemf("exit 1 although the catalog answered again after the fault (floe must find out what happened and finish)")
		}
	}

	// The rerun, without faults.
	args := st.args
	if st.rerun == rerunWithCommitID {
		switch m := unknownIDRE.FindStringSubmatch(run.stderr); {
		case run.exit == 0:
			res.logf("no rerun: the command is not idempotent and it succeeded")
			return res
		case m != nil:
			args = append(append([]string{}, args...), "--commit-id", m[1])
		case anyLanded:
			res.problemf("the change landed, but the error names no commit id to rerun the command with")
			return res
		}
	}
	rerun := env.runFloe(dir, args...)
	res.logf("rerun: %s", rerun)
	checkRun(res, rerun, "rerun")
	if rerun.exit != 0 && !(anyLanded && st.rerunError != nil && st.rerunError.MatchString(rerun.stderr)) {
		res.problemf("the rerun failed")
	}
	final, heads := x.states(st.tables)
	for _, ex := range st.tables {
		ex.checkFinal(res, before[ex.name], after[ex.name], final[ex.name], landed[ex.name], st.guard, heads)
	}
	if env.engines && r.IntN(4) == 0 {
		for _, ex := range st.tables {
			x.engineRead(ex, final[ex.name])
		}
	}
	return res
}

// states reads every table of a trial, and their main heads.
func (x *trialCtx) states(tables []*expectTable) (map[string]*tableState, map[string]int64) {
	states := map[string]*tableState{}
	heads := map[string]int64{}
	for _, ex := range tables {
		s := x.state(ex)
		states[ex.name] = s
		heads[ex.name] = s.head()
	}
	return states, heads
}

// checkRun checks what every run must satisfy.
func checkRun(res *trialResult, run *floeRun, what string) {
	if panicRE.MatchString(run.stderr) {
		res.problemf("%s: a Go panic or runtime error reached the user", what)
	}
	if run.exit != 0 && run.exit != 1 {
		switch run.exit {
		case -1:
			res.problemf("%s: floe did not finish within %s or could not start (%v)", what, commandTimeout, run.err)
		case 70:
			res.problemf("%s: exit 70, an internal error (a panic caught by cmd/floe)", what)
		default:
			res.problemf("%s: exit status %d", what, run.exit)
		}
	}
	if run.exit != 0 && !strings.HasPrefix(run.stderr, "floe: ") && !strings.Contains(run.stderr, "\nfloe: ") {
		res.problemf("%s: the failure printed no floe: message", what)
	}
}

// summarize prints trials/failures per command and fault kind.
func summarize(results []*trialResult) string {
	type cell struct{ n, fail, exit0, landed int }
	cells := map[[2]string]*cell{}
	get := func(c, f string) *cell {
		k := [2]string{c, f}
		if cells[k] == nil {
			cells[k] = &cell{}
		}
		return cells[k]
	}
	for _, r := range results {
		for _, k := range [][2]string{{r.cmd, r.fault}, {r.cmd, "all"}, {"all", r.fault}, {"all", "all"}} {
			c := get(k[0], k[1])
			c.n++
			if len(r.problems) > 0 {
				c.fail++
			}
			if r.exit == 0 {
				c.exit0++
			}
			if r.landed {
				c.landed++
			}
		}
	}
	var b strings.Builder
	b.WriteString("trials/failures per command (rows) and fault (columns):\n")
	cols := []string{}
	for _, f := range faultKinds {
		cols = append(cols, f.name)
	}
	cols = append(cols, "all")
	fmt.Fprintf(&b, "%-16s", "")
	for _, c := range cols {
		fmt.Fprintf(&b, " %14s", c)
	}
	b.WriteString("\n")
	rows := []string{}
	for _, c := range faultCommands {
		rows = append(rows, c.name)
	}
	rows = append(rows, "all")
	for _, row := range rows {
		fmt.Fprintf(&b, "%-16s", row)
		for _, col := range cols {
			c := cells[[2]string{row, col}]
			if c == nil {
				fmt.Fprintf(&b, " %14s", "-")
				continue
			}
			fmt.Fprintf(&b, " %14s", fmt.Sprintf("%d/%d", c.n, c.fail))
		}
		b.WriteString("\n")
	}
	reads := map[string]int{}
	for _, r := range results {
		for k, n := range r.engineReads {
			reads[k] += n
		}
	}
	fmt.Fprintf(&b, "final tables PyIceberg read as expected: %d, Spark: %d\n", reads["PyIceberg"], reads["Spark"])
	b.WriteString("outcomes per fault (trials: exit 0, landed):\n")
	var names []string
	for _, f := range faultKinds {
		names = append(names, f.name)
	}
	sort.Strings(names)
	for _, f := range append(names, "all") {
		if c := cells[[2]string{"all", f}]; c != nil {
			fmt.Fprintf(&b, "  %-16s %4d trials, %4d failed, %4d exit 0, %4d landed\n", f, c.n, c.fail, c.exit0, c.landed)
		}
	}
	return b.String()
}

// shellJoin quotes args for a log line a shell can rerun.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"*$();<>|&\n\t=") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		} else {
			out[i] = a
		}
	}
	return strings.Join(out, " ")
}
