package pipeline_test

import (
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/pipeline"
)

// randomSeed is FLOE_SEED when set (to replay a failure), else the time.
func randomSeed(t *testing.T) uint64 {
	if s := os.Getenv("FLOE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("FLOE_SEED=%q: %v", s, err)
		}
		return n
	}
	return uint64(time.Now().UnixNano())
}

// tracked is what the test knows about one transform since its last build,
// to predict whether the next build is incremental.
type tracked struct {
	name      string
	appendOly bool              // append-only read mode (filter)
	watermark int64             // source head at the last build (0 = never built)
	nonAppend bool              // an overwrite or delete was committed since
	rolled    bool              // the source was rolled back to before the watermark
	bumped    bool              // the semantic version was bumped
	version   int               // SemanticVersion given to the spec
	expect    func([]any) []any // the output row for a source row, nil when filtered out
}

// TestRandomBuilds runs many builds of a sync (changelog) and a filter
// (append-only) transform over a source that changes at random (appends,
// updates, deletes, overwrites, compactions, rollbacks) on copy-on-write
// and merge-on-read tables, v2 and v3, with semantic-version bumps. After
// every build each output must equal its transform applied to the
// source's current state (computed here from a scan of the source), with
// no duplicate key, and the build must be incremental exactly when
// nothing forced a full rebuild: a rollback, a bump, or (append-only) an
// overwrite or delete. Replay a failure with FLOE_SEED=<seed>.
func TestRandomBuilds(t *testing.T) {
	seed := randomSeed(t)
	t.Logf("seed %d (FLOE_SEED=%d to replay)", seed, seed)
	steps := 28
	if testing.Short() {
		steps = 8
	}
	for _, cfg := range []struct {
		name  string
		props iceberg.Properties
	}{
		{"cow-v2", iceberg.Properties{"write.delete.mode": "copy-on-write", "write.update.mode": "copy-on-write"}},
		{"mor-v2", iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}},
		{"mor-v3", iceberg.Properties{"write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read", "format-version": "3"}},
	} {
		t.Run(cfg.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, uint64(crc32.ChecksumIEEE([]byte(cfg.name)))))
			randomBuilds(t, rng, cfg.props, steps, seed)
		})
	}
}

func randomBuilds(t *testing.T, rng *rand.Rand, props iceberg.Properties, steps int, seed uint64) {
	e := newEnv(t)
	e.create("src", "id long not null, status string, amount long", []string{"id"}, props)
	statuses := []any{"active", "active", "closed", nil}
	nextID := int64(1)
	newRow := func() []any {
		r := []any{nextID, statuses[rng.IntN(len(statuses))], int64(rng.IntN(100))}
		nextID++
		return r
	}
	live := func() []int64 {
		var ids []int64
		for _, r := range e.rowsOf("src") {
			ids = append(ids, r[0].(int64))
		}
		slices.Sort(ids)
		return ids
	}
	pick := func() []int64 {
		ids := live()
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:min(len(ids), 1+rng.IntN(3))]
	}
	sync := &tracked{name: "sync", expect: func(r []any) []any {
		if r[1] != "active" {
			return nil
		}
		return []any{r[0], r[2]}
	}}
	filter := &tracked{name: "filter", appendOly: true, expect: func(r []any) []any {
		if r[2].(int64) <= 50 {
			return nil
		}
		return []any{r[0], r[1]}
	}}
	all := []*tracked{sync, filter}
	pipelineOf := func() *pipeline.Pipeline {
		s, err := pipeline.Sync(pipeline.SyncSpec{Name: "sync", Src: "ns.src", Dst: "ns.sync", Keys: []string{"id"},
			Filter: "status = 'active'", Columns: []string{"id", "amount"}, SemanticVersion: sync.version})
		if err != nil {
			t.Fatal(err)
		}
		f, err := pipeline.Filter(pipeline.FilterSpec{Name: "filter", Src: "ns.src", Dst: "ns.filter",
			Filter: "amount > 50", Columns: []string{"id", "status"}, SemanticVersion: filter.version})
		if err != nil {
			t.Fatal(err)
		}
		p, err := pipeline.New("random", []*pipeline.Step{
			{Name: "sync", Type: pipeline.TypeSync, Sources: []string{"ns.src"}, Destinations: []string{"ns.sync"}, Transform: s},
			{Name: "filter", Type: pipeline.TypeFilter, Sources: []string{"ns.src"}, Destinations: []string{"ns.filter"}, Transform: f},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	r := &pipeline.Runner{Catalog: e.Cat, Logger: discardLogger()}
	var history []string
	seen := map[string]int{} // transform + expected kind -> builds
	defer func() { t.Logf("builds checked: %v", seen) }()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, after %s:\n%s", seed, strings.Join(history, "; "), fmt.Sprintf(format, args...))
	}
	e.insert("src", newRow(), newRow(), newRow(), newRow())
	history = append(history, "insert 4")
	for step := 0; step < steps; step++ {
		// A third of the steps only append and compact, so that append-only
		// builds are incremental often enough.
		appendOnly := rng.IntN(3) == 0
		for n := rng.IntN(3); n >= 0; n-- {
			hasRows := len(live()) > 0
			op := rng.IntN(20)
			if appendOnly && op >= 5 {
				op = []int{0, 14}[rng.IntN(2)]
			}
			switch {
			case op < 5 || !hasRows:
				rows := [][]any{}
				for k := 1 + rng.IntN(4); k > 0; k-- {
					rows = append(rows, newRow())
				}
				e.insert("src", rows...)
				history = append(history, fmt.Sprintf("insert %d", len(rows)))
			case op < 9:
				ids := pick()
				st := statuses[rng.IntN(len(statuses))]
				amount := int64(rng.IntN(100))
				e.update("src", func(row []any) []any {
					row[1] = st
					if rng.IntN(2) == 0 {
						row[2] = amount
					}
					return row
				}, ids...)
				history = append(history, fmt.Sprintf("update %v status=%v", ids, st))
				markNonAppend(all)
			case op < 12:
				ids := pick()
				e.del("src", ids...)
				history = append(history, fmt.Sprintf("delete %v", ids))
				markNonAppend(all)
			case op < 14:
				ids := pick()
				var rows [][]any
				for _, id := range ids[:len(ids)-1] { // replace all but one, add a new row
					row := newRow()
					nextID--
					row[0] = id
					rows = append(rows, row)
				}
				rows = append(rows, newRow())
				e.overwrite("src", ids, rows...)
				history = append(history, fmt.Sprintf("overwrite %v", ids))
				markNonAppend(all)
			case op < 16:
				e.compact("src")
				history = append(history, "compact")
			case op < 18:
				// Roll back to an ancestor strictly older than every watermark
				// (so that every transform must rebuild), when there is one.
				target, ok := rollbackTarget(e, all)
				if !ok {
					continue
				}
				e.rollback("src", target)
				history = append(history, fmt.Sprintf("rollback to %d", target))
				for _, tr := range all {
					tr.rolled = true
				}
			default:
				tr := all[rng.IntN(len(all))]
				tr.version++
				tr.bumped = true
				history = append(history, "bump "+tr.name)
			}
		}
		p := pipelineOf()
		order := []*pipeline.Step{p.Step("sync"), p.Step("filter")}
		if rng.IntN(2) == 0 {
			order[0], order[1] = order[1], order[0]
		}
		outcomes, err := r.RunOnce(e.Ctx, p, order)
		if err != nil {
			fail("build: %v", err)
		}
		head := e.head("src")
		source := e.rowsOf("src")
		for _, o := range outcomes {
			tr := sync
			if o.Step == "filter" {
				tr = filter
			}
			seen[tr.name+" "+checkOutcome(fail, tr, o, head)]++
			var want [][]any
			for _, row := range source {
				if w := tr.expect(row); w != nil {
					want = append(want, w)
				}
			}
			got := e.rowsOf(tr.name)
			if render(got) != render(want) {
				fail("%s: rows\n got %s\nwant %s", tr.name, render(got), render(want))
			}
			seen := map[int64]bool{}
			for _, row := range got {
				if seen[row[0].(int64)] {
					fail("%s: duplicate id %d", tr.name, row[0])
				}
				seen[row[0].(int64)] = true
			}
			if wm := e.Load(tr.name).Properties()[state.PropWatermark]; wm != strconv.FormatInt(head, 10) {
				fail("%s: watermark %s, source head %d", tr.name, wm, head)
			}
			tr.watermark, tr.nonAppend, tr.rolled, tr.bumped = head, false, false, false
		}
		history = append(history, "build")
	}
}

func markNonAppend(all []*tracked) {
	for _, tr := range all {
		tr.nonAppend = true
	}
}

// rollbackTarget returns an ancestor of the source's head that is older
// than every transform's watermark.
func rollbackTarget(e *env, all []*tracked) (int64, bool) {
	tbl := e.Load("src")
	meta := tbl.Metadata()
	var chain []int64 // head first
	for s := tbl.CurrentSnapshot(); s != nil; {
		chain = append(chain, s.SnapshotID)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	oldest := len(chain)
	for _, tr := range all {
		i := slices.Index(chain, tr.watermark)
		if i < 0 {
			return 0, false
		}
		oldest = min(oldest, len(chain)-1-i) // position from the root
	}
	if oldest == 0 {
		return 0, false
	}
	// Any snapshot strictly before the oldest watermark.
	return chain[len(chain)-oldest], true
}

// checkOutcome checks a build's kind and reason against what happened,
// and returns what it expected.
func checkOutcome(fail func(string, ...any), tr *tracked, o pipeline.Outcome, head int64) string {
	if o.Result == nil {
		fail("%s: %s: %v", tr.name, o.Kind, o.Err)
	}
	res := o.Result
	var want, reason, why string
	switch {
	case tr.watermark == 0:
		want, reason, why = pipeline.OutcomeFull, "output ns."+tr.name+" does not exist", "first"
	case tr.bumped:
		want, reason, why = pipeline.OutcomeFull, "semantic version changed", "bump"
	case tr.rolled:
		want, reason, why = pipeline.OutcomeFull, "is no longer in the history of its branch", "rollback"
	case tr.appendOly && tr.nonAppend:
		want, reason, why = pipeline.OutcomeFull, "append-only transforms rebuild on overwrites and deletes", "overwrite/delete"
	case tr.watermark == head:
		want = pipeline.OutcomeSkipped
	default:
		want = pipeline.OutcomeIncremental
	}
	if o.Kind != want || !strings.Contains(res.Reason, reason) {
		fail("%s: build was %s (%q), want %s (%q)", tr.name, o.Kind, res.Reason, want, reason)
	}
	if why != "" {
		return want + "(" + why + ")"
	}
	return want
}
