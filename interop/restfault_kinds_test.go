//go:build interop

package interop_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	fp "github.com/floedata/floe/internal/faultproxy"
	"github.com/floedata/floe/interop"
)

// commitPath is the REST path of a table commit (POST) and load (GET).
const commitPath = "/v1/namespaces/*/tables/*"

// faultKind is one way the proxy breaks a trial's requests.
type faultKind struct {
	name string
	// unreachable: the catalog answers nothing more once the fault fired,
	// until floe gives up.
	unreachable bool
	// mayFail: a clean failure is a correct outcome (a load failed before
	// anything was sent, or random faults kept failing).
	mayFail bool
	// rules returns the plan's rules for a command that sends posts commits,
	// and a description of the choices made.
	rules func(r *rand.Rand, posts int) ([]fp.Rule, string)
	// props override retryProps for the trial's tables.
	props []string
}

var gatewayStatuses = []int{500, 502, 503, 504}

func randStatus(r *rand.Rand) int { return gatewayStatuses[r.IntN(len(gatewayStatuses))] }

func randBody(r *rand.Rand) fp.BodyStyle { return fp.BodyStyle(r.IntN(3)) }

// oneCommit is a rule that fires f on one of the command's commits.
func oneCommit(r *rand.Rand, posts int, f fp.Fault) ([]fp.Rule, string) {
	n := 1 + r.IntN(max(posts, 1))
	return []fp.Rule{{Name: "commit", Method: "POST", Path: commitPath, Nth: n, Fault: f}},
		fmt.Sprintf("commit #%d: %s", n, f)
}

// lostAnswer is a fault after the server took the commit.
func lostAnswer(r *rand.Rand) fp.Fault {
	if r.IntN(3) == 0 {
		return fp.Fault{Action: fp.ResetAfter}
	}
	return fp.Fault{Action: fp.FailAfter, Status: randStatus(r), Body: randBody(r)}
}

// downFault is what an unreachable catalog answers.
func downFault(r *rand.Rand) fp.Fault {
	if r.IntN(3) == 0 {
		return fp.Fault{Action: fp.ResetBefore}
	}
	return fp.Fault{Action: fp.FailBefore, Status: []int{502, 503, 504}[r.IntN(3)], Body: randBody(r)}
}

var faultKinds = []*faultKind{
	{name: "none", rules: func(*rand.Rand, int) ([]fp.Rule, string) { return nil, "" }},
	{name: "fail-before", rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		return oneCommit(r, posts, fp.Fault{Action: fp.FailBefore, Status: randStatus(r), Body: randBody(r)})
	}},
	{name: "fail-after", rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		return oneCommit(r, posts, fp.Fault{Action: fp.FailAfter, Status: randStatus(r), Body: randBody(r)})
	}},
	{name: "reset-before", rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		return oneCommit(r, posts, fp.Fault{Action: fp.ResetBefore})
	}},
	{name: "reset-after", rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		return oneCommit(r, posts, fp.Fault{Action: fp.ResetAfter})
	}},
	{name: "late-landing", rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		// A gateway times out on a slow server: 504 at once, and the commit
		// reaches the server later: either before floe's retry (which then
		// conflicts, and floe must find its own commit) or after it (the
		// late one is refused, the retry stands).
		d := time.Duration(r.IntN(100)) * time.Millisecond
		if r.IntN(2) == 0 {
			d = time.Duration(100+r.IntN(700)) * time.Millisecond
		}
		return oneCommit(r, posts, fp.Fault{Action: fp.FailThenForward, Status: 504, Body: randBody(r), Delay: d})
	}},
	{name: "timeout", props: []string{"commit.retry.total-timeout-ms=1500"},
		rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
			// The server takes the commit, and its answer comes after the
			// client's timeout (the table's commit.retry.total-timeout-ms,
			// 1.5 s here).
			d := time.Duration(2000+r.IntN(500)) * time.Millisecond
			return oneCommit(r, posts, fp.Fault{Action: fp.DelayAfter, Delay: d})
		}},
	{name: "outage", unreachable: true, rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		rules, desc := oneCommit(r, posts, lostAnswer(r))
		down := downFault(r)
		rules = append(rules, fp.Rule{Name: "outage", After: "commit", Fault: down})
		return rules, desc + ", then every request: " + down.String()
	}},
	{name: "outage-recover", rules: func(r *rand.Rand, posts int) ([]fp.Rule, string) {
		rules, desc := oneCommit(r, posts, lostAnswer(r))
		down := downFault(r)
		k := 1 + r.IntN(2)
		rules = append(rules, fp.Rule{Name: "outage", After: "commit", Times: k, Fault: down})
		return rules, fmt.Sprintf("%s, then %d request(s): %s", desc, k, down)
	}},
	{name: "load-fail", mayFail: true, rules: func(r *rand.Rand, _ int) ([]fp.Rule, string) {
		n := 1 + r.IntN(3)
		f := downFault(r)
		return []fp.Rule{{Name: "load", Method: "GET", Path: commitPath, Nth: n, Fault: f}},
			fmt.Sprintf("table load #%d: %s", n, f)
	}},
	{name: "random", mayFail: true, rules: func(r *rand.Rand, _ int) ([]fp.Rule, string) {
		p := 0.1 + 0.1*r.Float64()
		rules := []fp.Rule{
			{Name: "fail-before", Prob: p, Times: 2, Fault: fp.Fault{Action: fp.FailBefore, Status: randStatus(r), Body: randBody(r)}},
			{Name: "fail-after", Prob: p, Times: 2, Fault: fp.Fault{Action: fp.FailAfter, Status: randStatus(r), Body: randBody(r)}},
			{Name: "reset-before", Prob: p / 2, Times: 1, Fault: fp.Fault{Action: fp.ResetBefore}},
			{Name: "reset-after", Prob: p / 2, Times: 1, Fault: fp.Fault{Action: fp.ResetAfter}},
		}
		return rules, fmt.Sprintf("every request in the namespace: each fault with p=%.2f", p)
	}},
}

// rerunPolicy says when a trial reruns its command.
type rerunPolicy int

const (
	// rerunAlways: the command is idempotent (the default).
	rerunAlways rerunPolicy = iota
	// rerunWithCommitID: the command is not idempotent (a plain table
	// append): after a success a user does not rerun it; after a failure
	// they rerun it with the --commit-id the unknown-outcome error named,
	// which makes the rerun append nothing twice.
	rerunWithCommitID
)

// step is a prepared trial: the command and what it must do.
type step struct {
	variant string
	args    []string
	posts   int // table commits (POST) a run without faults sends
	tables  []*expectTable
	rerun   rerunPolicy
	// guard: a rerun after the command landed commits nothing (it sees its
	// watermark).
	guard bool
	// rerunError is an error a rerun may end with when the faulted run
	// landed (branch create: the branch exists).
	rerunError *regexp.Regexp
}

// faultCommand is a floe command that commits, with its setup and model.
type faultCommand struct {
	name    string
	prepare func(x *trialCtx) (*step, error)
}

// trialCtx is one trial's namespace, folder and random source.
type trialCtx struct {
	env   *faultEnv
	r     *rand.Rand
	ns    string
	dir   string
	res   *trialResult
	fault *faultKind

	nsCreated bool
}

func (x *trialCtx) table(name string) string { return x.ns + "." + name }

// floe runs a setup command, which must succeed.
func (x *trialCtx) floe(args ...string) error {
	run := x.env.runFloe(x.dir, args...)
	x.res.logf("setup: %s", run)
	if run.exit != 0 {
		return fmt.Errorf("%s", run)
	}
	return nil
}

// retryProps keep floe's retries short, so an outage ends a trial quickly.
// commit.retry.total-timeout-ms also bounds each commit call (iceberg-go's
// commit runs under that deadline): it is floe's client timeout.
var retryProps = []string{
	"commit.retry.num-retries=4", "commit.retry.min-wait-ms=20",
	"commit.retry.max-wait-ms=200", "commit.retry.total-timeout-ms=5000",
}

// tableProps returns the properties the trial's tables are created with:
// retryProps with the fault kind's overrides, then props.
func (x *trialCtx) tableProps(props ...string) []string {
	out := append([]string{}, retryProps...)
	for _, o := range x.fault.props {
		k, _, _ := strings.Cut(o, "=")
		for i, p := range out {
			if strings.HasPrefix(p, k+"=") {
				out[i] = o
			}
		}
	}
	return append(out, props...)
}

// propertyFlags returns tableProps as --property flags.
func (x *trialCtx) propertyFlags(props ...string) []string {
	var out []string
	for _, p := range x.tableProps(props...) {
		out = append(out, "--property", p)
	}
	return out
}

// create creates the namespace (once) and table name (id long not null, v
// string, n long; identifier id) with iceberg-go on the server itself: the
// setup is not under test, and in-process it is quick.
func (x *trialCtx) create(name string, formatVersion int, partition string, props ...string) error {
	ctx := x.env.ctx
	if !x.nsCreated {
		if err := x.env.direct.CreateNamespace(ctx, table.Identifier{x.ns}, nil); err != nil {
			return fmt.Errorf("creating namespace %s: %w", x.ns, err)
		}
		x.nsCreated = true
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int64})
	spec := *iceberg.UnpartitionedSpec
	switch partition {
	case "":
	case "bucket(3, id)":
		spec = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket",
			Transform: iceberg.BucketTransform{NumBuckets: 3}})
	default:
		return fmt.Errorf("no partition spec %q in the trials", partition)
	}
	p := iceberg.Properties{"format-version": strconv.Itoa(formatVersion)}
	for _, kv := range x.tableProps(props...) {
		k, v, _ := strings.Cut(kv, "=")
		p[k] = v
	}
	_, err := x.env.direct.CreateTable(ctx, table.Identifier{x.ns, name}, sc,
		catalog.WithPartitionSpec(&spec), catalog.WithProperties(p))
	if err != nil {
		return fmt.Errorf("creating %s: %w", x.table(name), err)
	}
	x.res.logf("setup: created %s (v%d %s %v) with iceberg-go", x.table(name), formatVersion, partition, props)
	return nil
}

// writeRows writes rows (plus extra columns) as a JSON Lines file in the
// trial's folder and returns its name.
func (x *trialCtx) writeRows(name string, rows []map[string]any) (string, error) {
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			return "", err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return name, os.WriteFile(filepath.Join(x.dir, name), []byte(b.String()), 0o644)
}

func plainRows(rows []mrow) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = r.values()
	}
	return out
}

// appendRows appends rows to table name as one snapshot, with iceberg-go
// on the server itself (setup).
func (x *trialCtx) appendRows(name string, rows []mrow) error {
	ctx := x.env.ctx
	tbl, err := x.env.direct.LoadTable(ctx, table.Identifier{x.ns, name})
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.v == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.v)
		}
		b.Field(2).(*array.Int64Builder).Append(r.n)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(sc, []arrow.RecordBatch{rec})
	if err != nil {
		return err
	}
	defer rdr.Release()
	if _, err := tbl.Append(ctx, rdr, nil); err != nil {
		return fmt.Errorf("appending %d rows to %s: %w", len(rows), x.table(name), err)
	}
	x.res.logf("setup: appended %d rows to %s with iceberg-go", len(rows), x.table(name))
	return nil
}

func (x *trialCtx) value() *string {
	if x.r.IntN(10) == 0 {
		return nil
	}
	v := fmt.Sprintf("v%d", x.r.IntN(1000))
	return &v
}

// newRows returns n random rows with ids from first.
func (x *trialCtx) newRows(first int64, n int) []mrow {
	out := make([]mrow, n)
	for i := range out {
		out[i] = mrow{id: first + int64(i), v: x.value(), n: int64(x.r.IntN(100))}
	}
	return out
}

// seed creates table name with 1 or 2 appends of random rows (ids from 1)
// and returns them.
func (x *trialCtx) seed(name string, formatVersion int, partition string, props ...string) ([]mrow, error) {
	if err := x.create(name, formatVersion, partition, props...); err != nil {
		return nil, err
	}
	rows := x.newRows(1, 8+x.r.IntN(16))
	cut := len(rows)
	if x.r.IntN(2) == 0 {
		cut = len(rows) / 2
	}
	if err := x.appendRows(name, rows[:cut]); err != nil {
		return nil, err
	}
	if cut < len(rows) {
		if err := x.appendRows(name, rows[cut:]); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// head returns the current snapshot id of table name.
func (x *trialCtx) head(name string) (int64, error) {
	tbl, err := x.env.direct.LoadTable(x.env.ctx, table.Identifier{x.ns, name})
	if err != nil {
		return 0, err
	}
	if s := tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID, nil
	}
	return 0, fmt.Errorf("%s has no snapshot", x.table(name))
}

// layout picks a format version, partitioning and write mode.
func (x *trialCtx) layout() (fv int, partition, mode string) {
	fv = 2 + x.r.IntN(2)
	if x.r.IntN(2) == 0 {
		partition = "bucket(3, id)"
	}
	mode = "copy-on-write"
	if x.r.IntN(2) == 0 {
		mode = "merge-on-read"
	}
	return fv, partition, mode
}

func layoutDesc(fv int, partition, mode string) string {
	s := fmt.Sprintf("v%d %s", fv, mode)
	if partition != "" {
		s += " " + partition
	}
	return s
}

func filterRows(rows []mrow, keep func(mrow) bool) []mrow {
	var out []mrow
	for _, r := range rows {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func strp(s string) *string { return &s }
func i64p(v int64) *int64   { return &v }

// threshold returns a value of n that some rows are below and some not
// (when rows allow).
func threshold(r *rand.Rand, rows []mrow) int64 {
	ns := make([]int64, len(rows))
	for i, x := range rows {
		ns[i] = x.n
	}
	slices.Sort(ns)
	k := ns[len(ns)/4+r.IntN(max(len(ns)/2, 1))]
	if k == ns[0] {
		k++
	}
	return k
}

// applyChanges builds a random change file for apply/merge over rows:
// updates and deletes of existing ids and inserts of new ones, and the
// rows after it.
func (x *trialCtx) randomChanges(rows []mrow) (upd, del []mrow, ins []mrow, after []mrow) {
	next := int64(len(rows) + 1)
	for _, r := range rows {
		switch p := x.r.IntN(10); {
		case p < 3:
			u := mrow{id: r.id, v: x.value(), n: int64(x.r.IntN(100))}
			upd = append(upd, u)
			after = append(after, u)
		case p < 5:
			del = append(del, r)
		default:
			after = append(after, r)
		}
	}
	if len(upd)+len(del) == 0 {
		del = append(del, rows[0])
		after = after[1:]
	}
	ins = x.newRows(next, 1+x.r.IntN(5))
	after = append(after, ins...)
	return upd, del, ins, after
}

func prepApply(variant string) func(x *trialCtx) (*step, error) {
	return func(x *trialCtx) (*step, error) {
		fv, partition, mode, desc := 2, "", "copy-on-write", ""
		var flags []string
		switch variant {
		case "position":
			mode = "merge-on-read"
		case "dv":
			fv, mode = 3, "merge-on-read"
		case "equality":
			fv = 2 + x.r.IntN(2)
			flags = []string{"--delete-mode", "equality"}
			desc = " equality deletes"
		}
		if x.r.IntN(2) == 0 {
			partition = "bucket(3, id)"
		}
		rows, err := x.seed("t", fv, partition, "write.merge.mode="+mode, "write.delete.mode="+mode, "write.update.mode="+mode)
		if err != nil {
			return nil, err
		}
		upd, del, ins, after := x.randomChanges(rows)
		var changes []map[string]any
		for _, u := range upd {
			m := u.values()
			if x.r.IntN(3) == 0 { // an UPDATE_BEFORE image, which apply ignores
				b := map[string]any{"id": m["id"], "v": "old", "n": json.Number("-1"), "_change_type": "UPDATE_BEFORE"}
				changes = append(changes, b)
			}
			m["_change_type"] = "UPDATE_AFTER"
			changes = append(changes, m)
		}
		for _, d := range del {
			changes = append(changes, map[string]any{"id": d.id, "_change_type": "DELETE"})
		}
		for _, i := range ins {
			m := i.values()
			m["_change_type"] = "INSERT"
			changes = append(changes, m)
		}
		x.r.Shuffle(len(changes), func(i, j int) { changes[i], changes[j] = changes[j], changes[i] })
		if _, err := x.writeRows("changes.jsonl", changes); err != nil {
			return nil, err
		}
		wm := fmt.Sprintf("%s-%d", x.ns, x.r.IntN(1e6))
		args := append([]string{"apply", x.table("t"), "--changes", "changes.jsonl", "--key", "id",
			"--property", "test.watermark=" + wm}, flags...)
		return &step{
			variant: fmt.Sprintf("%s%s; %d upserts, %d deletes, %d inserts", layoutDesc(fv, partition, mode), desc, len(upd), len(del), len(ins)),
			args:    args, posts: 1,
			tables: []*expectTable{{
				name: x.table("t"), cols: faultCols,
				before: canonModel(rows, faultCols, nil), after: canonModel(after, faultCols, nil),
				props: map[string]string{"test.watermark": wm}, commits: 1, eqDeletes: variant == "equality",
			}},
		}, nil
	}
}

func prepMerge(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("t", fv, partition, "write.merge.mode="+mode)
	if err != nil {
		return nil, err
	}
	upd, del, ins, after := x.randomChanges(rows)
	var src []map[string]any
	for _, u := range upd {
		m := u.values()
		m["op"] = "U"
		src = append(src, m)
	}
	for _, d := range del {
		m := d.values()
		m["op"] = "D"
		src = append(src, m)
	}
	// A delete of an id the target does not have matches nothing.
	src = append(src, map[string]any{"id": 10_000, "v": "ghost", "n": 1, "op": "D"})
	for _, i := range ins {
		m := i.values()
		m["op"] = "I"
		src = append(src, m)
	}
	if _, err := x.writeRows("source.jsonl", src); err != nil {
		return nil, err
	}
	wm := fmt.Sprintf("%s-%d", x.ns, x.r.IntN(1e6))
	stmt := fmt.Sprintf("MERGE INTO %s t USING 'source.jsonl' s ON t.id = s.id "+
		"WHEN MATCHED AND s.op = 'D' THEN DELETE "+
		"WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n "+
		"WHEN NOT MATCHED AND s.op <> 'D' THEN INSERT (id, v, n) VALUES (s.id, s.v, s.n)", x.table("t"))
	return &step{
		variant: fmt.Sprintf("%s; %d updates, %d deletes, %d inserts", layoutDesc(fv, partition, mode), len(upd), len(del), len(ins)),
		args:    []string{"merge", stmt, "--property", "test.watermark=" + wm}, posts: 1,
		tables: []*expectTable{{
			name: x.table("t"), cols: faultCols,
			before: canonModel(rows, faultCols, nil), after: canonModel(after, faultCols, nil),
			props: map[string]string{"test.watermark": wm}, commits: 1,
		}},
	}, nil
}

func prepAppend(x *trialCtx) (*step, error) {
	fv, partition, _ := x.layout()
	rows, err := x.seed("t", fv, partition)
	if err != nil {
		return nil, err
	}
	more := x.newRows(int64(len(rows)+1), 1+x.r.IntN(10))
	if _, err := x.writeRows("more.jsonl", plainRows(more)); err != nil {
		return nil, err
	}
	st := &step{
		variant: fmt.Sprintf("%s; %d rows", strings.TrimSpace(fmt.Sprintf("v%d %s", fv, partition)), len(more)),
		args:    []string{"table", "append", x.table("t"), "more.jsonl"}, posts: 1,
		tables: []*expectTable{{
			name: x.table("t"), cols: faultCols,
			before: canonModel(rows, faultCols, nil), after: canonModel(append(slices.Clone(rows), more...), faultCols, nil),
			commits: 1,
		}},
		rerun: rerunWithCommitID,
		guard: true,
	}
	if x.r.IntN(2) == 0 {
		// The caller names the commit: the same command, rerun, appends
		// nothing twice.
		id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", x.r.Uint32(), x.r.IntN(1<<16), x.r.IntN(1<<12), x.r.IntN(1<<12), x.r.Int64N(1<<48))
		st.args = append(st.args, "--commit-id", id)
		st.rerun = rerunAlways
		st.variant += "; --commit-id"
	}
	return st, nil
}

func prepDelete(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("t", fv, partition, "write.delete.mode="+mode)
	if err != nil {
		return nil, err
	}
	k := threshold(x.r, rows)
	keep := func(r mrow) bool { return r.n >= k }
	return &step{
		variant: fmt.Sprintf("%s; n < %d", layoutDesc(fv, partition, mode), k),
		args:    []string{"table", "delete", x.table("t"), "--where", fmt.Sprintf("n < %d", k)}, posts: 1,
		tables: []*expectTable{{
			name: x.table("t"), cols: faultCols,
			before: canonModel(rows, faultCols, nil), after: canonModel(rows, faultCols, keep), commits: 1,
		}},
		rerun: rerunAlways,
	}, nil
}

func prepUpdate(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("t", fv, partition, "write.update.mode="+mode)
	if err != nil {
		return nil, err
	}
	k := threshold(x.r, rows)
	val := fmt.Sprintf("u%d", x.r.IntN(1000))
	var after []mrow
	for _, r := range rows {
		if r.n >= k {
			r.v = strp(val)
		}
		after = append(after, r)
	}
	return &step{
		variant: fmt.Sprintf("%s; n >= %d", layoutDesc(fv, partition, mode), k),
		args:    []string{"table", "update", x.table("t"), "--set", fmt.Sprintf("v = '%s'", val), "--where", fmt.Sprintf("n >= %d", k)}, posts: 1,
		tables: []*expectTable{{
			name: x.table("t"), cols: faultCols,
			before: canonModel(rows, faultCols, nil), after: canonModel(after, faultCols, nil), commits: 1,
		}},
	}, nil
}

func prepOverwrite(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("t", fv, partition, "write.delete.mode="+mode)
	if err != nil {
		return nil, err
	}
	k := threshold(x.r, rows)
	// The new rows match the predicate, so a second overwrite replaces them
	// with themselves: the command is idempotent.
	var repl []mrow
	for _, r := range rows {
		if r.n >= k && x.r.IntN(2) == 0 {
			repl = append(repl, mrow{id: r.id, v: x.value(), n: k + int64(x.r.IntN(20))})
		}
	}
	for _, r := range x.newRows(int64(len(rows)+1), 1+x.r.IntN(4)) {
		r.n = k + int64(x.r.IntN(20))
		repl = append(repl, r)
	}
	if _, err := x.writeRows("replacement.jsonl", plainRows(repl)); err != nil {
		return nil, err
	}
	after := append(filterRows(rows, func(r mrow) bool { return r.n < k }), repl...)
	return &step{
		variant: fmt.Sprintf("%s; n >= %d by %d rows", layoutDesc(fv, partition, mode), k, len(repl)),
		args:    []string{"table", "overwrite", x.table("t"), "replacement.jsonl", "--where", fmt.Sprintf("n >= %d", k)}, posts: 1,
		tables: []*expectTable{{
			name: x.table("t"), cols: faultCols,
			before: canonModel(rows, faultCols, nil), after: canonModel(after, faultCols, nil), commits: 1,
		}},
	}, nil
}

func prepCompact(x *trialCtx) (*step, error) {
	fv := 2 + x.r.IntN(2)
	partition := ""
	if x.r.IntN(2) == 0 {
		partition = "bucket(3, id)"
	}
	rows, err := x.seed("t", fv, partition, "write.delete.mode=merge-on-read")
	if err != nil {
		return nil, err
	}
	more := x.newRows(int64(len(rows)+1), 3+x.r.IntN(5))
	if err := x.appendRows("t", more); err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	k := threshold(x.r, rows)
	if err := x.floe("table", "delete", x.table("t"), "--where", fmt.Sprintf("n < %d", k)); err != nil {
		return nil, err
	}
	rows = filterRows(rows, func(r mrow) bool { return r.n >= k })
	want := canonModel(rows, faultCols, nil)
	return &step{
		variant: fmt.Sprintf("v%d merge-on-read %s; deleted n < %d", fv, partition, k),
		args:    []string{"table", "compact", x.table("t")}, posts: 1,
		tables: []*expectTable{{name: x.table("t"), cols: faultCols, before: want, after: want, commits: 1}},
	}, nil
}

func prepBranchCreate(x *trialCtx) (*step, error) {
	rows, err := x.seed("t", 2+x.r.IntN(2), "")
	if err != nil {
		return nil, err
	}
	head, err := x.head("t")
	if err != nil {
		return nil, err
	}
	want := canonModel(rows, faultCols, nil)
	return &step{
		variant: "at the head",
		args:    []string{"table", "branch", "create", x.table("t"), "audit"}, posts: 1,
		tables: []*expectTable{{name: x.table("t"), cols: faultCols, before: want, after: want,
			ref: &refExpect{name: "audit", after: i64p(head)}}},
		rerunError: regexp.MustCompile(`already has a ref named "audit"`),
	}, nil
}

func prepBranchDrop(x *trialCtx) (*step, error) {
	rows, err := x.seed("t", 2+x.r.IntN(2), "")
	if err != nil {
		return nil, err
	}
	if err := x.floe("table", "branch", "create", x.table("t"), "audit"); err != nil {
		return nil, err
	}
	head, err := x.head("t")
	if err != nil {
		return nil, err
	}
	want := canonModel(rows, faultCols, nil)
	return &step{
		variant: "audit",
		args:    []string{"table", "branch", "drop", x.table("t"), "audit"}, posts: 1,
		tables: []*expectTable{{name: x.table("t"), cols: faultCols, before: want, after: want,
			ref: &refExpect{name: "audit", before: i64p(head)}}},
		rerunError: regexp.MustCompile(`has no branch or tag "audit"`),
	}, nil
}

func prepRollback(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("t", fv, partition, "write.delete.mode="+mode)
	if err != nil {
		return nil, err
	}
	more := x.newRows(int64(len(rows)+1), 2+x.r.IntN(5))
	if err := x.appendRows("t", more); err != nil {
		return nil, err
	}
	rows = append(rows, more...)
	target, err := x.head("t")
	if err != nil {
		return nil, err
	}
	k := threshold(x.r, rows)
	if err := x.floe("table", "delete", x.table("t"), "--where", fmt.Sprintf("n < %d", k)); err != nil {
		return nil, err
	}
	head, err := x.head("t")
	if err != nil {
		return nil, err
	}
	return &step{
		variant: fmt.Sprintf("%s; back over a delete of n < %d", layoutDesc(fv, partition, mode), k),
		args:    []string{"table", "rollback", x.table("t"), "--to-snapshot", strconv.FormatInt(target, 10)}, posts: 1,
		tables: []*expectTable{{name: x.table("t"), cols: faultCols,
			before: canonModel(rows, faultCols, func(r mrow) bool { return r.n >= k }),
			after:  canonModel(rows, faultCols, nil),
			ref:    &refExpect{name: table.MainBranch, before: i64p(head), after: i64p(target)}}},
		rerunError: regexp.MustCompile(`(?i)rollback`),
	}, nil
}

// mutateSource changes the source of a sync (with floe, no faults) so that
// every output of the trial changes: new rows inside every filter, and
// randomly a delete and an update.
func (x *trialCtx) mutateSource(name string, rows []mrow) ([]mrow, error) {
	more := x.newRows(int64(len(rows)+1), 2+x.r.IntN(4))
	more[0].n = 20 + int64(x.r.IntN(60))
	if err := x.appendRows(name, more); err != nil {
		return nil, err
	}
	rows = append(slices.Clone(rows), more...)
	if x.r.IntN(2) == 0 {
		k := threshold(x.r, rows)
		if err := x.floe("table", "delete", x.table(name), "--where", fmt.Sprintf("n < %d", k)); err != nil {
			return nil, err
		}
		rows = filterRows(rows, func(r mrow) bool { return r.n >= k })
	}
	if x.r.IntN(2) == 0 {
		k := threshold(x.r, rows)
		if err := x.floe("table", "update", x.table(name), "--set", "v = 'upd'", "--where", fmt.Sprintf("n >= %d", k)); err != nil {
			return nil, err
		}
		for i := range rows {
			if rows[i].n >= k {
				rows[i].v = strp("upd")
			}
		}
	}
	return rows, nil
}

func prepSync(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("src", fv, partition, "write.delete.mode="+mode, "write.update.mode="+mode)
	if err != nil {
		return nil, err
	}
	args := append([]string{"sync", x.table("src"), x.table("dst"), "--key", "id", "--filter", "n >= 20"}, x.propertyFlags()...)
	keep := func(r mrow) bool { return r.n >= 20 }
	variant := "first build"
	var before []string
	incremental := x.r.IntN(3) != 0
	if incremental {
		variant = "incremental"
		if err := x.floe(args...); err != nil {
			return nil, err
		}
		before = canonModel(rows, faultCols, keep)
		if rows, err = x.mutateSource("src", rows); err != nil {
			return nil, err
		}
	}
	wm, err := x.head("src")
	if err != nil {
		return nil, err
	}
	return &step{
		variant: layoutDesc(fv, partition, mode) + "; " + variant,
		args:    args, posts: 1, guard: true,
		tables: []*expectTable{{
			name: x.table("dst"), cols: faultCols, absent: !incremental, before: before,
			after:   canonModel(rows, faultCols, keep),
			props:   map[string]string{"watermark.source-snapshot-id": strconv.FormatInt(wm, 10)},
			commits: 1,
		}},
	}, nil
}

func prepPipeline(x *trialCtx) (*step, error) {
	fv, partition, mode := x.layout()
	rows, err := x.seed("src", fv, partition, "write.delete.mode="+mode, "write.update.mode="+mode)
	if err != nil {
		return nil, err
	}
	props := "{"
	for i, p := range x.tableProps() {
		k, v, _ := strings.Cut(p, "=")
		if i > 0 {
			props += ", "
		}
		props += fmt.Sprintf("%s: %q", k, v)
	}
	props += "}"
	yaml := fmt.Sprintf(`transforms:
  - name: mid
    type: sync
    source: %[1]s.src
    destination: %[1]s.mid
    key: [id]
    filter: "n >= 20"
    properties: %[2]s
  - name: out
    type: sync
    source: %[1]s.mid
    destination: %[1]s.out
    key: [id]
    filter: "n < 80"
    columns: [id, n]
    properties: %[2]s
`, x.ns, props)
	if err := os.WriteFile(filepath.Join(x.dir, "pipeline.yaml"), []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	args := []string{"run", "pipeline.yaml", "--once"}
	inMid := func(r mrow) bool { return r.n >= 20 }
	inOut := func(r mrow) bool { return r.n >= 20 && r.n < 80 }
	outCols := []string{"id", "n"}
	variant := "first build"
	var beforeMid, beforeOut []string
	incremental := x.r.IntN(3) != 0
	if incremental {
		variant = "incremental"
		if err := x.floe(args...); err != nil {
			return nil, err
		}
		beforeMid, beforeOut = canonModel(rows, faultCols, inMid), canonModel(rows, outCols, inOut)
		if rows, err = x.mutateSource("src", rows); err != nil {
			return nil, err
		}
	}
	wm, err := x.head("src")
	if err != nil {
		return nil, err
	}
	return &step{
		variant: layoutDesc(fv, partition, mode) + "; " + variant,
		args:    args, posts: 2, guard: true,
		tables: []*expectTable{
			{name: x.table("mid"), cols: faultCols, absent: !incremental, before: beforeMid,
				after: canonModel(rows, faultCols, inMid), commits: 1,
				props: map[string]string{"watermark.source-snapshot-id": strconv.FormatInt(wm, 10)}},
			{name: x.table("out"), cols: outCols, absent: !incremental, before: beforeOut,
				after: canonModel(rows, outCols, inOut), commits: 1, watermarkOf: x.table("mid")},
		},
	}, nil
}

var deltaFaultColumns = []interop.Column{{Name: "id", Type: "long"}, {Name: "v", Type: "string", Nullable: true}, {Name: "n", Type: "long"}}

func deltaRows(rows []mrow) [][]any {
	out := make([][]any, len(rows))
	for i, r := range rows {
		var v any
		if r.v != nil {
			v = *r.v
		}
		out[i] = []any{r.id, v, r.n}
	}
	return out
}

func prepDeltaSync(x *trialCtx) (*step, error) {
	ctx, py := x.env.ctx, x.env.py
	path := filepath.Join(x.dir, "delta")
	rows := x.newRows(1, 8+x.r.IntN(16))
	v, err := py.DeltaWrite(ctx, path, deltaFaultColumns, deltaRows(rows), interop.DeltaWriteOptions{
		Configuration: map[string]string{"delta.enableChangeDataFeed": "true"}})
	if err != nil {
		return nil, err
	}
	x.res.logf("setup: delta-rs wrote version %d (%d rows)", v, len(rows))
	mode := "copy-on-write"
	if x.r.IntN(2) == 0 {
		mode = "merge-on-read"
	}
	args := append([]string{"delta", "sync", path, x.table("d"), "--equality-columns", "id", "--mode", mode}, x.propertyFlags()...)
	variant := "first sync"
	var before []string
	incremental := x.r.IntN(3) != 0
	if incremental {
		variant = "incremental"
		if err := x.floe(args...); err != nil {
			return nil, err
		}
		before = canonModel(rows, faultCols, nil)
		more := x.newRows(int64(len(rows)+1), 2+x.r.IntN(4))
		if _, err = py.DeltaWrite(ctx, path, deltaFaultColumns, deltaRows(more), interop.DeltaWriteOptions{}); err != nil {
			return nil, err
		}
		rows = append(rows, more...)
		k := threshold(x.r, rows)
		if v, err = py.DeltaDelete(ctx, path, fmt.Sprintf("n < %d", k)); err != nil {
			return nil, err
		}
		rows = filterRows(rows, func(r mrow) bool { return r.n >= k })
		if len(rows) > 1 {
			k2 := threshold(x.r, rows)
			if v, err = py.DeltaUpdate(ctx, path, fmt.Sprintf("n >= %d", k2), map[string]string{"v": "'upd'"}); err != nil {
				return nil, err
			}
			for i := range rows {
				if rows[i].n >= k2 {
					rows[i].v = strp("upd")
				}
			}
		}
		x.res.logf("setup: delta-rs wrote up to version %d", v)
	}
	return &step{
		variant: mode + "; " + variant,
		args:    args, posts: 1, guard: true,
		tables: []*expectTable{{
			name: x.table("d"), cols: faultCols, absent: !incremental, before: before,
			after:   canonModel(rows, faultCols, nil),
			props:   map[string]string{"floe.delta.source-version": strconv.FormatInt(v, 10)},
			commits: 1,
		}},
	}, nil
}

var faultCommands = []*faultCommand{
	{name: "apply-cow", prepare: prepApply("copy-on-write")},
	{name: "apply-position", prepare: prepApply("position")},
	{name: "apply-dv", prepare: prepApply("dv")},
	{name: "apply-equality", prepare: prepApply("equality")},
	{name: "merge", prepare: prepMerge},
	{name: "sync", prepare: prepSync},
	{name: "run-once", prepare: prepPipeline},
	{name: "append", prepare: prepAppend},
	{name: "delete", prepare: prepDelete},
	{name: "update", prepare: prepUpdate},
	{name: "overwrite", prepare: prepOverwrite},
	{name: "compact", prepare: prepCompact},
	{name: "branch-create", prepare: prepBranchCreate},
	{name: "branch-drop", prepare: prepBranchDrop},
	{name: "rollback", prepare: prepRollback},
	{name: "delta-sync", prepare: prepDeltaSync},
}
