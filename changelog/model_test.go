package changelog_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestModel runs random sequences of appends, deletes, updates, overwrites
// and compactions on copy-on-write and merge-on-read tables, format v2 and
// v3, partitioned and not, and checks for every pair of snapshots that
// applying the changelog to the start rows gives the end rows, and that the
// per-key views agree with a direct comparison of the two snapshots.
// FLOE_MODEL_SEED reproduces a run; FLOE_MODEL_STEPS lengthens it.
func TestModel(t *testing.T) {
	seed := uint64(rand.Int64())
	if s := os.Getenv("FLOE_MODEL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	steps := 8
	if s := os.Getenv("FLOE_MODEL_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	t.Logf("seed %d (rerun with FLOE_MODEL_SEED=%d)", seed, seed)
	for _, fv := range []string{"2", "3"} {
		for _, mode := range []string{"copy-on-write", "merge-on-read"} {
			for _, part := range []string{"", "bucket(3, id)", "data"} {
				name := fmt.Sprintf("v%s/%s/%q", fv, mode, part)
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(seed, uint64(len(name))))
					runModel(t, rng, steps, iceberg.Properties{
						"format-version":    fv,
						"write.delete.mode": mode,
						"write.update.mode": mode,
					}, part)
				})
			}
		}
	}
}

func runModel(t *testing.T, rng *rand.Rand, steps int, props iceberg.Properties, part string) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null, data string", part, []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	target := e.Target("t", "")
	var snaps []int64
	live := map[int64]string{} // the model: id -> data
	nextID := int64(1)
	values := []string{"a", "b", "c"}
	for step := 0; step < steps; step++ {
		tbl := e.Load("t")
		as := tabletest.ArrowSchema(tbl)
		var (
			o   *tableops.Outcome
			err error
			op  string
		)
		ids := make([]int64, 0, len(live))
		for id := range live {
			ids = append(ids, id)
		}
		pick := func() int64 { return ids[rng.IntN(len(ids))] }
		switch r := rng.IntN(10); {
		case r < 3 || len(ids) == 0:
			op = "append"
			var data [][]any
			for n := 1 + rng.IntN(6); n > 0; n-- {
				v := values[rng.IntN(len(values))]
				data = append(data, []any{nextID, v})
				live[nextID] = v
				nextID++
			}
			o, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
		case r < 5:
			op = "delete id"
			id := pick()
			delete(live, id)
			o, err = tableops.Delete(e.Ctx, target, tabletest.ColEq("id", false, id))
		case r < 6:
			op = "delete data"
			v := values[rng.IntN(len(values))]
			for id, d := range live {
				if d == v {
					delete(live, id)
				}
			}
			o, err = tableops.Delete(e.Ctx, target, tabletest.ColEq("data", false, v))
		case r < 8:
			op = "update"
			id := pick()
			v := values[rng.IntN(len(values))] + strconv.Itoa(step)
			live[id] = v
			o, err = tableops.Update(e.Ctx, target, tabletest.ColEq("id", false, id), func(_ contextT, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
				return setColumn(rec, touched, "data", v)
			})
		case r < 9:
			op = "overwrite data"
			v := values[rng.IntN(len(values))]
			for id, d := range live {
				if d == v {
					delete(live, id)
				}
			}
			var data [][]any
			for n := rng.IntN(3); n > 0; n-- {
				data = append(data, []any{nextID, v})
				live[nextID] = v
				nextID++
			}
			o, err = tableops.Overwrite(e.Ctx, target, tabletest.ColEq("data", false, v), tabletest.Seq(as, data))
		default:
			op = "compact"
			o, err = tableops.Compact(e.Ctx, target)
		}
		if err != nil {
			t.Fatalf("step %d %s: %v", step, op, err)
		}
		if o.SnapshotID != 0 {
			snaps = append(snaps, o.SnapshotID)
		}
		// The table equals the model.
		got, err := readRows(t, e.Load("t"), lastOr(snaps))
		if err != nil {
			t.Fatal(err)
		}
		want := multiset{}
		for id, d := range live {
			want[fmt.Sprintf("(%d,'%s')", id, d)]++
		}
		if err := applies(multiset{}, want, map[string]multiset{changelog.Insert: got}); err != nil && len(snaps) > 0 {
			t.Fatalf("step %d %s: table differs from the model: %v", step, op, err)
		}
	}
	tbl := e.Load("t")
	states := make([]multiset, len(snaps))
	for i, s := range snaps {
		var err error
		if states[i], err = readRows(t, tbl, s); err != nil {
			t.Fatal(err)
		}
	}
	for i := range snaps {
		for j := i + 1; j < len(snaps); j++ {
			start, end := snaps[i], snaps[j]
			for _, o := range []changelog.Options{
				{},
				{IdentifierColumns: []string{"id"}},
				{NetChanges: true},
			} {
				o.StartSnapshotID, o.EndSnapshotID = &start, &end
				ch, _, err := changes(t, tbl, o)
				if err != nil {
					t.Fatalf("changelog %d..%d: %v", i, j, err)
				}
				if err := applies(states[i], states[j], ch); err != nil {
					t.Fatalf("changelog %d..%d %+v: %v", i, j, o, err)
				}
			}
			// Per-key net equals the direct comparison of the two states.
			o := changelog.Options{StartSnapshotID: &start, EndSnapshotID: &end, PerKey: changelog.PerKeyNet}
			ch, _, err := changes(t, tbl, o)
			if err != nil {
				t.Fatalf("per-key net %d..%d: %v", i, j, err)
			}
			delete(ch, orderKey)
			wantDel, wantIns := diff(states[i], states[j])
			if !same(merge(ch[changelog.Delete], ch[changelog.UpdateBefore]), wantDel) || !same(merge(ch[changelog.Insert], ch[changelog.UpdateAfter]), wantIns) {
				t.Fatalf("per-key net %d..%d: got %v, want deletes %v inserts %v", i, j, ch, wantDel, wantIns)
			}
			// Per-key latest, applied as upserts and deletes by key, gives
			// the end state.
			o.PerKey = changelog.PerKeyLatest
			ch, _, err = changes(t, tbl, o)
			if err != nil {
				t.Fatalf("per-key latest %d..%d: %v", i, j, err)
			}
			delete(ch, orderKey)
			if err := upsert(states[i], states[j], ch); err != nil {
				t.Fatalf("per-key latest %d..%d: %v", i, j, err)
			}
		}
	}
}

func lastOr(s []int64) int64 {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}

func diff(a, b multiset) (del, ins multiset) {
	del, ins = multiset{}, multiset{}
	for r, n := range a {
		if d := n - b[r]; d > 0 {
			del[r] = d
		}
	}
	for r, n := range b {
		if d := n - a[r]; d > 0 {
			ins[r] = d
		}
	}
	return del, ins
}

func merge(ms ...multiset) multiset {
	out := multiset{}
	for _, m := range ms {
		for r, n := range m {
			out[r] += n
		}
	}
	return out
}

func same(a, b multiset) bool {
	if len(a) != len(b) {
		return false
	}
	for r, n := range a {
		if b[r] != n {
			return false
		}
	}
	return true
}

// keyOf extracts the id of a rendered row "(id,'data')".
func keyOf(r string) string {
	for i := 1; i < len(r); i++ {
		if r[i] == ',' {
			return r[1:i]
		}
	}
	return r
}

// upsert applies per-key latest changes by key: INSERT and UPDATE_AFTER
// replace the key's row, DELETE removes it.
func upsert(from, to multiset, ch map[string]multiset) error {
	byKey := map[string]string{}
	for r := range from {
		byKey[keyOf(r)] = r
	}
	for kind, m := range ch {
		for r := range m {
			switch kind {
			case changelog.Delete:
				delete(byKey, keyOf(r))
			case changelog.Insert, changelog.UpdateAfter:
				byKey[keyOf(r)] = r
			default:
				return fmt.Errorf("per-key latest returned %s", kind)
			}
		}
	}
	got := multiset{}
	for _, r := range byKey {
		got[r]++
	}
	if !same(got, to) {
		return fmt.Errorf("applied %v to %v: got %v want %v", ch, from, got, to)
	}
	return nil
}
