// Package faultsuite runs every commit path of floe under random catalog
// and storage faults (internal/faultcat, internal/faultfs) and checks, after
// each trial, that the table reads (every file it references exists), that
// its state is the state before the change or after it (after when the
// command succeeded, before when it failed with a definite error, either
// when the outcome was reported unknown), and that a rerun without faults
// converges to the after state with the change committed once.
//
// FLOE_FAULT_TRIALS sets the trials per commit path (default 6);
// FLOE_FAULT_SEED replays a run.
package faultsuite

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/faultcat"
	"github.com/floedata/floe/internal/faultfs"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
)

// fast makes retries quick; the table decides, as a user's would.
var fast = iceberg.Properties{commit.PropMinWaitMs: "1", commit.PropMaxWaitMs: "8", commit.PropNumRetries: "4"}

// env is one trial's catalog and injectors.
type env struct {
	*tabletest.Env
	cat *faultcat.Injector
	fs  *faultfs.Injector
	// id is fixed per trial: commands that take a commit id rerun with it.
	id   string
	data map[string]any // per-path setup state (a Delta table, ...)
}

// path is one commit path under test.
type path struct {
	name string
	// setup creates the tables and the state before the change.
	setup func(e *env) error
	// run makes the change (again, on a rerun: it must converge). It
	// reports whether a lost answer was resolved.
	run func(e *env) (answerLost bool, err error)
	// rerunOK accepts an error of a rerun that found the change done
	// (creating a ref that exists); nil accepts none.
	rerunOK func(err error) bool
	// tables are the tables whose state is compared and whose files are
	// checked.
	tables []string
	// state, when set, renders the state to compare instead of rows.
	state func(e *env, tbl *table.Table) (string, error)
	// op is the catalog call whose answers the commit faults hit (""
	// = OpCommit; a drop or rename path names its own).
	op faultcat.Op
	// verify, when set, checks more after the faulty run and after the
	// rerun (err: the run's error; removeFailed: removals were made to
	// fail).
	verify func(e *env, err error, removeFailed bool) error
}

func (p path) callOp() faultcat.Op {
	if p.op == "" {
		return faultcat.OpCommit
	}
	return p.op
}

type tally struct {
	mu       sync.Mutex
	outcomes map[string]int
	faults   map[string]int
	trials   int
	orphans  int
}

func (t *tally) add(outcome, fault string, orphans int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.trials++
	t.outcomes[outcome]++
	t.faults[fault]++
	t.orphans += orphans
}

func (t *tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d trials; outcomes:", t.trials)
	for _, k := range sortedKeys(t.outcomes) {
		fmt.Fprintf(&b, " %s=%d", k, t.outcomes[k])
	}
	b.WriteString("; faults:")
	for _, k := range sortedKeys(t.faults) {
		fmt.Fprintf(&b, " %s=%d", k, t.faults[k])
	}
	fmt.Fprintf(&b, "; unreferenced files left after the faulty runs and reruns: %d", t.orphans)
	return b.String()
}

func sortedKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func trialsPerPath() int {
	if n, err := strconv.Atoi(os.Getenv("FLOE_FAULT_TRIALS")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return 2
	}
	return 6
}

// TestFaults runs every commit path under random faults.
func TestFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("FLOE_FAULT_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (FLOE_FAULT_SEED replays it)", seed)
	n := trialsPerPath()
	total := &tally{outcomes: map[string]int{}, faults: map[string]int{}}
	for pi, p := range paths() {
		t.Run(p.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(pi)))
			cal := calibrate(t, p)
			per := &tally{outcomes: map[string]int{}, faults: map[string]int{}}
			for i := 0; i < n; i++ {
				f := pickFault(rng, cal)
				outcome, orphans := trial(t, p, cal, f)
				per.add(outcome, f.kind, orphans)
				total.add(outcome, f.kind, orphans)
			}
			t.Logf("%s: %s", p.name, per)
		})
	}
	t.Logf("all paths: %s", total)
}

// calibration is what a clean run of a path does.
type calibration struct {
	before, after      map[string]string // state per table
	snapshots          map[string]int    // snapshots the change adds per table
	writes, reads      int               // file operations
	commits, loads     int               // catalog calls (commits: of the path's op)
	afterSnapshotCount map[string]int
	op                 faultcat.Op
	// loadsBefore is the number of loads made before the first call of
	// op (0: not seen).
	loadsBefore int
}

func newEnv(t *testing.T) *env {
	e := &env{Env: tabletest.New(t), cat: faultcat.New(), fs: faultfs.New(), id: fmt.Sprintf("trial-%d", rand.Int64()), data: map[string]any{}}
	e.Cat.Wrap(catalog.Wrap{Catalog: e.cat.Wrap, IO: e.fs.Wrap})
	return e
}

func calibrate(t *testing.T, p path) *calibration {
	t.Helper()
	e := newEnv(t)
	if err := p.setup(e); err != nil {
		t.Fatalf("setup: %v", err)
	}
	c := &calibration{before: states(t, e, p), snapshots: map[string]int{}, afterSnapshotCount: map[string]int{}, op: p.callOp()}
	counts := snapshotCounts(e, p)
	e.cat.Reset()
	e.fs.Reset()
	e.Cat.Wrap(catalog.Wrap{Catalog: spyFirst(e.cat, c.op, &c.loadsBefore)})
	if _, err := p.run(e); err != nil {
		t.Fatalf("clean run: %v", err)
	}
	c.writes, c.reads = e.fs.Count(faultfs.WriteOps...), e.fs.Count(faultfs.ReadOps...)
	c.commits, c.loads = e.cat.Count(c.op), e.cat.Count(faultcat.OpLoad)
	c.after = states(t, e, p)
	for name, n := range snapshotCounts(e, p) {
		c.snapshots[name] = n - counts[name]
		c.afterSnapshotCount[name] = n
	}
	same := true
	for k, v := range c.before {
		same = same && c.after[k] == v
	}
	if same {
		t.Fatalf("the change leaves the state as it was: %v", c.before)
	}
	return c
}

// fault is what a trial injects.
type fault struct {
	kind string
	cat  []*faultcat.Rule
	fs   []*faultfs.Rule
}

var lostAnswers = []error{faultcat.ErrGatewayTimeout, faultcat.ErrBadGateway, faultcat.ErrReset, faultcat.ErrEOF, faultcat.ErrTimeout}

func pickFault(rng *rand.Rand, c *calibration) fault {
	anyOf := func(errs []error) error { return errs[rng.IntN(len(errs))] }
	nth := func(n int) int { return 1 + rng.IntN(max(n, 1)) }
	commits := max(c.commits, 1)
	op := c.op
	switch k := rng.IntN(10); k {
	case 0, 1:
		return fault{kind: "answer-lost", cat: []*faultcat.Rule{{Op: op, When: faultcat.After, Nth: nth(commits), Err: anyOf(lostAnswers)}}}
	case 2:
		return fault{kind: "commit-error-before-catalog", cat: []*faultcat.Rule{{Op: op, When: faultcat.Before, Nth: nth(commits),
			Err: anyOf(append(lostAnswers, faultcat.ErrConflict))}}}
	case 3:
		// The answer is lost (the commit reached the catalog or not) and
		// the catalog stays unreachable.
		when, kind := faultcat.After, "answer-lost-then-unreachable"
		if rng.IntN(2) == 0 {
			when, kind = faultcat.Before, "commit-error-then-unreachable"
		}
		return fault{kind: kind, cat: []*faultcat.Rule{
			{Op: op, When: when, Nth: 1, Err: anyOf(lostAnswers)},
			{Op: faultcat.OpLoad, Nth: c.loadsBeforeFirstCommit() + 1, Count: -1},
		}}
	case 4:
		return fault{kind: "load-fails", cat: []*faultcat.Rule{{Op: faultcat.OpLoad, Nth: nth(c.loads), Count: 1 + rng.IntN(3)}}}
	case 5, 6:
		return fault{kind: "storage-write", fs: []*faultfs.Rule{{Ops: faultfs.WriteOps, Nth: nth(c.writes)}}}
	case 7:
		return fault{kind: "storage-read", fs: []*faultfs.Rule{{Ops: faultfs.ReadOps, Nth: nth(c.reads)}}}
	case 8:
		// Removal fails while the answer of the commit is lost.
		return fault{kind: "answer-lost-and-remove-fails", cat: []*faultcat.Rule{{Op: op, When: faultcat.After, Nth: nth(commits), Err: anyOf(lostAnswers)}},
			fs: []*faultfs.Rule{{Ops: []faultfs.Op{faultfs.OpRemove}, Count: -1}}}
	default:
		return fault{kind: "slow-storage-and-conflict", cat: []*faultcat.Rule{{Op: op, When: faultcat.Before, Nth: nth(commits), Err: faultcat.ErrConflict}},
			fs: []*faultfs.Rule{{Ops: faultfs.WriteOps, Nth: nth(c.writes), Count: 3, Delay: 2 * time.Millisecond, DelayOnly: true}}}
	}
}

// loadsBeforeFirstCommit estimates the loads a clean run makes before its
// first commit: all of them for a run with one commit (a successful commit
// needs no reload), else all but one per later commit.
func (c *calibration) loadsBeforeFirstCommit() int {
	if c.loadsBefore > 0 {
		return c.loadsBefore
	}
	return max(1, c.loads-max(c.commits-1, 0))
}

// trial runs p once under f, checks the invariants and the rerun, and
// returns the outcome and the number of unreferenced files left.
func trial(t *testing.T, p path, cal *calibration, f fault) (string, int) {
	t.Helper()
	e := newEnv(t)
	if err := p.setup(e); err != nil {
		t.Fatalf("setup: %v", err)
	}
	pre := filesUnder(t, e, p)
	e.cat.Reset()
	e.fs.Reset()
	for _, r := range f.cat {
		e.cat.Add(r)
	}
	for _, r := range f.fs {
		e.fs.Add(r)
	}
	lost, err := p.run(e)
	hits := append(e.cat.Hits(), e.fs.Hits()...)
	e.cat.Reset()
	e.fs.Reset()
	desc := fmt.Sprintf("%s %v (injected: %v)", f.kind, err, hits)
	got := states(t, e, p)
	checkFiles(t, e, p, desc)
	removeFailed := false
	for _, r := range f.fs {
		removeFailed = removeFailed || slices.Contains(r.Ops, faultfs.OpRemove)
	}
	if err != nil {
		// A change that failed, or whose outcome is unknown, deletes no
		// file that was there before it.
		for f := range pre {
			if _, serr := os.Stat(f); serr != nil {
				t.Fatalf("%s: the run failed but deleted %s, which was there before it: %v", desc, f, serr)
			}
		}
	}
	if p.verify != nil {
		if verr := p.verify(e, err, removeFailed); verr != nil {
			t.Fatalf("%s: %v", desc, verr)
		}
	}
	equal := func(a, b map[string]string) bool {
		for k, v := range b {
			if a[k] != v {
				return false
			}
		}
		return true
	}
	outcome := ""
	switch {
	case err == nil:
		if !equal(got, cal.after) {
			t.Fatalf("%s: succeeded but the state is %v, want %v", desc, got, cal.after)
		}
		outcome = "committed"
		if lost {
			outcome = "committed-answer-lost"
		}
	case errors.Is(err, commit.ErrOutcomeUnknown):
		switch {
		case equal(got, cal.after):
			outcome = "unknown-had-landed"
		case equal(got, cal.before):
			outcome = "unknown-had-not-landed"
		default:
			t.Fatalf("%s: outcome unknown, and the state %v is neither before %v nor after %v", desc, got, cal.before, cal.after)
		}
	default:
		if !equal(got, cal.before) {
			t.Fatalf("%s: failed, but the state %v is not the state before %v", desc, got, cal.before)
		}
		outcome = "failed-nothing-committed"
	}
	// The rerun converges: the after state, the change committed once.
	if _, err := p.run(e); err != nil && (p.rerunOK == nil || !p.rerunOK(err)) {
		t.Fatalf("%s: rerun: %v", desc, err)
	}
	if got := states(t, e, p); !equal(got, cal.after) {
		t.Fatalf("%s: after the rerun the state is %v, want %v", desc, got, cal.after)
	}
	if p.verify != nil && err == nil {
		if verr := p.verify(e, nil, removeFailed); verr != nil {
			t.Fatalf("%s (after the rerun): %v", desc, verr)
		}
	}
	for name, n := range snapshotCounts(e, p) {
		if n != cal.afterSnapshotCount[name] {
			t.Fatalf("%s: %s has %d snapshots after the rerun, a clean run leaves %d (the change committed twice?)", desc, name, n, cal.afterSnapshotCount[name])
		}
	}
	orphans := checkFiles(t, e, p, desc+" (after the rerun)")
	if testing.Verbose() && outcome != "committed" {
		t.Logf("%s: %s", outcome, desc)
	}
	return outcome, orphans
}

func states(t *testing.T, e *env, p path) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range p.tables {
		tbl, err := e.Cat.Load(e.Ctx, table.Identifier{"ns", name})
		if errors.Is(err, catalog.ErrNoSuchTable) {
			out[name] = "<missing>"
			continue
		}
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		s := ""
		if p.state != nil {
			s, err = p.state(e, tbl)
		} else {
			var rows []string
			rows, err = e.Rows(tbl, scan.At{})
			s = strings.Join(rows, " ")
		}
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		for _, k := range []string{"wm", "floe.delta.source-version"} {
			if v, ok := tbl.Properties()[k]; ok {
				s += " " + k + "=" + v
			}
		}
		out[name] = s
	}
	return out
}

func snapshotCounts(e *env, p path) map[string]int {
	out := map[string]int{}
	for _, name := range p.tables {
		if tbl, err := e.Cat.Load(e.Ctx, table.Identifier{"ns", name}); err == nil {
			out[name] = len(tbl.Metadata().Snapshots())
		}
	}
	return out
}

// checkFiles fails unless every file the tables reference exists, and
// returns the number of files under their locations nothing references.
func checkFiles(t *testing.T, e *env, p path, desc string) int {
	t.Helper()
	orphans := 0
	for _, name := range p.tables {
		tbl, err := e.Cat.Load(e.Ctx, table.Identifier{"ns", name})
		if err != nil {
			continue
		}
		fsys, err := tbl.FS(e.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		ref := map[string]bool{local(tbl.MetadataLocation()): true}
		for m := range tbl.Metadata().PreviousFiles() {
			ref[local(m.MetadataFile)] = true
		}
		need := func(p string) {
			ref[local(p)] = true
			if _, err := os.Stat(local(p)); err != nil {
				t.Fatalf("%s: %s references a missing file: %v", desc, name, err)
			}
		}
		for _, s := range tbl.Metadata().Snapshots() {
			need(s.ManifestList)
			mfs, err := s.Manifests(fsys)
			if err != nil {
				t.Fatalf("%s: %s snapshot %d: %v", desc, name, s.SnapshotID, err)
			}
			for _, m := range mfs {
				need(m.FilePath())
				for en, err := range m.Entries(fsys, false) {
					if err != nil {
						t.Fatalf("%s: %s manifest %s: %v", desc, name, m.FilePath(), err)
					}
					if en.Status() != iceberg.EntryStatusDELETED {
						need(en.DataFile().FilePath())
					} else {
						ref[local(en.DataFile().FilePath())] = true
					}
				}
			}
		}
		_ = filepath.WalkDir(local(tbl.Location()), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !ref[p] {
				orphans++
			}
			return nil
		})
	}
	return orphans
}

func local(p string) string { return filepath.Clean(strings.TrimPrefix(p, "file://")) }
