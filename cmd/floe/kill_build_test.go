package main_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

const killPipeline = `
transforms:
  - name: active
    type: sync
    source: shop.orders
    destination: shop.active
    key: [id]
    filter: "status = 'active'"
    columns: [id, amount]
  - name: big
    type: filter
    source: shop.orders
    destination: shop.big
    filter: "amount > 50"
    columns: [id, status]
`

// TestKillDuringBuilds runs the real binary (floe run --once, and floe run
// --every) over a source another process keeps changing, and kills it with
// SIGKILL, or stops it with SIGTERM, at random points of its builds. After
// a final run to completion each output must equal its transform applied
// to the source's final state: no lost change, no change applied twice
// (no duplicate key, equal row counts), watermarks at the source's head.
// FLOE_SEED replays the choices (not the timing).
func TestKillDuringBuilds(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLOE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (FLOE_SEED=%d to replay the choices)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	work := t.TempDir()
	mode := []string{"copy-on-write", "merge-on-read"}[rng.IntN(2)]
	t.Logf("source mode %s", mode)
	for _, args := range [][]string{
		{"namespace", "create", "shop"},
		{"table", "create", "shop.orders", "--schema", "id long not null, status string, amount long", "--identifier", "id",
			"--property", "write.delete.mode=" + mode, "--property", "write.update.mode=" + mode},
	} {
		if out := runFloe(t, work, args); !strings.HasPrefix(out, "exit 0") {
			t.Fatalf("floe %v: %s", args, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "kill.yaml"), []byte(killPipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: filepath.Join(work, "wh")})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	src := &killSource{t: t, ctx: ctx, cat: cat, rng: rand.New(rand.NewPCG(seed, 2))}
	src.insert(8)

	// One run to completion gives the scale of a build.
	start := time.Now()
	if out := runFloe(t, work, []string{"run", "kill.yaml", "--once", "--quiet"}); !strings.HasPrefix(out, "exit 0") {
		t.Fatalf("first run: %s", out)
	}
	scale := time.Since(start)

	// The source changes all along, while builds run and die.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+src.rng.IntN(40)) * time.Millisecond):
			}
			src.mutate()
		}
	}()
	stats := map[string]int{}
	iterations := 24
	if testing.Short() {
		iterations = 8
	}
	outputs := func() [2]string {
		return [2]string{src.props("shop.active"), src.props("shop.big")}
	}
	for i := 0; i < iterations; i++ {
		delay := time.Duration(rng.Int64N(int64(scale)*3/2 + 1))
		before := outputs()
		var what string
		switch i % 4 {
		case 3:
			what = stopScheduled(t, work, delay)
		case 1:
			// Aim at the builds: count from the first build decision.
			what = killOnce(t, work, delay*2/3, "transform=active")
		default:
			what = killOnce(t, work, delay, "")
		}
		after := outputs()
		committed := 0
		for j := range after {
			if after[j] != before[j] {
				committed++
			}
		}
		stats[fmt.Sprintf("%s, %d of 2 outputs committed", what, committed)]++
	}
	close(stop)
	wg.Wait()
	t.Logf("runs: %v; source changes: %v", stats, src.ops)
	if src.err != nil {
		t.Fatal(src.err)
	}

	out := runFloe(t, work, []string{"run", "kill.yaml", "--once", "--quiet"})
	if !strings.HasPrefix(out, "exit 0") {
		t.Fatalf("final run: %s", out)
	}
	out = runFloe(t, work, []string{"run", "kill.yaml", "--once", "--quiet"})
	if out != "exit 0\nactive: nothing new since the last build, nothing committed (<DUR>)\nbig: nothing new since the last build, nothing committed (<DUR>)\n" {
		t.Fatalf("a run after the final one must find nothing new:\n%s", out)
	}
	source := src.rows("shop.orders")
	head := src.head("shop.orders")
	for _, c := range []struct {
		table string
		row   func([]any) []any
	}{
		{"shop.active", func(r []any) []any {
			if r[1] != "active" {
				return nil
			}
			return []any{r[0], r[2]}
		}},
		{"shop.big", func(r []any) []any {
			if r[2].(int64) <= 50 {
				return nil
			}
			return []any{r[0], r[1]}
		}},
	} {
		var want []string
		for _, r := range source {
			if w := c.row(r); w != nil {
				want = append(want, fmt.Sprint(w))
			}
		}
		var got []string
		ids := map[any]bool{}
		for _, r := range src.rows(c.table) {
			if ids[r[0]] {
				t.Errorf("%s: id %v twice: a change was applied twice (seed %d)", c.table, r[0], seed)
			}
			ids[r[0]] = true
			got = append(got, fmt.Sprint(r))
		}
		sort.Strings(want)
		sort.Strings(got)
		if len(got) != len(want) || strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %d rows, want %d (seed %d)\n got %v\nwant %v", c.table, len(got), len(want), seed, got, want)
		}
		tbl, err := cat.LoadTable(ctx, c.table)
		if err != nil {
			t.Fatal(err)
		}
		if wm := tbl.Properties()[state.PropWatermark]; wm != strconv.FormatInt(head, 10) {
			t.Errorf("%s: watermark %s, source head %d", c.table, wm, head)
		}
	}
}

// killOnce starts floe run --once and kills it delay after its start (or
// after it logs from, when not ""); it reports whether the kill landed
// during the run.
func killOnce(t *testing.T, work string, delay time.Duration, from string) string {
	t.Helper()
	args := []string{"run", "kill.yaml", "--once"}
	if from == "" {
		args = append(args, "--quiet")
	}
	b := startFloe(t, work, args)
	if from != "" {
		if !b.waitForOrExit(from) {
			return exitKind(t, b)
		}
	}
	select {
	case <-b.done:
	case <-time.After(delay):
		_ = b.cmd.Process.Signal(syscall.SIGKILL)
		<-b.done
	}
	return exitKind(t, b)
}

// stopScheduled starts floe run --every and sends SIGTERM after delay:
// floe must exit 0 soon after, whatever it was doing.
func stopScheduled(t *testing.T, work string, delay time.Duration) string {
	t.Helper()
	b := startFloe(t, work, []string{"run", "kill.yaml", "--every", "1s"})
	// Before floe handles signals, SIGTERM kills it as any process.
	b.waitFor(t, "running on a schedule")
	time.Sleep(delay)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.done:
	case <-time.After(time.Minute):
		b.kill()
		t.Fatalf("floe run --every did not stop within a minute of SIGTERM:\n%s", b.stderr.String())
	}
	if b.err != nil {
		t.Fatalf("floe run --every after SIGTERM: %v (want exit 0)\n%s", b.err, b.stderr.String())
	}
	if strings.Contains(b.stderr.String(), "transform stopped before committing") {
		return "SIGTERM during a build: stopped before committing"
	}
	return "SIGTERM: clean stop"
}

func exitKind(t *testing.T, b *background) string {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case b.err == nil:
		return "finished before the kill"
	case errors.As(b.err, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled():
		return "SIGKILL during the run"
	case errors.As(b.err, &ee) && strings.Contains(b.stderr.String(), "watermark moved"):
		// Two floe processes never run at once here; a moved watermark
		// would mean a change committed twice.
		t.Fatalf("unexpected watermark conflict:\n%s", b.stderr.String())
	}
	t.Fatalf("floe run --once failed: %v\n%s%s", b.err, b.stdout.String(), b.stderr.String())
	return ""
}

// killSource changes shop.orders at random through floe's packages.
type killSource struct {
	t      *testing.T
	ctx    context.Context
	cat    *catalog.Catalog
	rng    *rand.Rand
	nextID int64
	ops    map[string]int
	err    error
}

func (s *killSource) target() tableops.Target {
	return tableops.Target{Catalog: s.cat, Ident: table.Identifier{"shop", "orders"}}
}

func (s *killSource) row() []any {
	s.nextID++
	return []any{s.nextID, []any{"active", "active", "closed", nil}[s.rng.IntN(4)], int64(s.rng.IntN(100))}
}

func (s *killSource) insert(n int) {
	var data [][]any
	for range n {
		data = append(data, s.row())
	}
	s.do("append", func(tbl *table.Table) error {
		_, err := tableops.Append(s.ctx, s.target(), tabletest.Seq(tabletest.ArrowSchema(tbl), data))
		return err
	})
}

func (s *killSource) do(op string, f func(*table.Table) error) {
	if s.err != nil {
		return
	}
	tbl, err := s.cat.LoadTable(s.ctx, "shop.orders")
	if err == nil {
		err = f(tbl)
	}
	if err != nil {
		s.err = fmt.Errorf("%s: %w", op, err)
		return
	}
	if s.ops == nil {
		s.ops = map[string]int{}
	}
	s.ops[op]++
}

// someIDs picks up to 3 ids among the first 2*nextID (some may not exist).
func (s *killSource) someIDs() *tableops.Predicate {
	set := map[int64]bool{}
	for range 1 + s.rng.IntN(3) {
		set[1+s.rng.Int64N(s.nextID)] = true
	}
	return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		a := rec.Column(0).(*array.Int64)
		out := make([]bool, rec.NumRows())
		for i := range out {
			out[i] = set[a.Value(i)]
		}
		return out, nil
	}}
}

func (s *killSource) mutate() {
	switch op := s.rng.IntN(20); {
	case op < 9:
		s.insert(1 + s.rng.IntN(4))
	case op < 13:
		status := []any{"active", "closed", nil}[s.rng.IntN(3)]
		amount := int64(s.rng.IntN(100))
		s.do("update", func(*table.Table) error {
			_, err := tableops.Update(s.ctx, s.target(), s.someIDs(), func(_ context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
				var data [][]any
				for i, tch := range touched {
					if tch {
						data = append(data, []any{rec.Column(0).(*array.Int64).Value(i), status, amount})
					}
				}
				return tabletest.Record(rec.Schema(), data)
			})
			return err
		})
	case op < 16:
		s.do("delete", func(*table.Table) error {
			_, err := tableops.Delete(s.ctx, s.target(), s.someIDs())
			return err
		})
	case op < 18:
		data := [][]any{s.row()}
		s.do("overwrite", func(tbl *table.Table) error {
			_, err := tableops.Overwrite(s.ctx, s.target(), s.someIDs(), tabletest.Seq(tabletest.ArrowSchema(tbl), data))
			return err
		})
	default:
		s.do("compact", func(*table.Table) error {
			_, err := tableops.Compact(s.ctx, s.target())
			return err
		})
	}
}

func (s *killSource) rows(name string) [][]any {
	tbl, err := s.cat.LoadTable(s.ctx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	_, seq, err := scan.Rows(s.ctx, tbl, scan.Options{})
	if err != nil {
		s.t.Fatal(err)
	}
	var out [][]any
	for rec, err := range seq {
		if err != nil {
			s.t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				col := rec.Column(c)
				switch a := col.(type) {
				case *array.Int64:
					if a.IsValid(i) {
						row[c] = a.Value(i)
					}
				case *array.String:
					if a.IsValid(i) {
						row[c] = a.Value(i)
					}
				default:
					row[c] = rows.FormatValue(col, i)
				}
			}
			out = append(out, row)
		}
		rec.Release()
	}
	return out
}

// props renders a table's watermark and head: they change with each build
// that commits.
func (s *killSource) props(name string) string {
	tbl, err := s.cat.LoadTable(s.ctx, name)
	if err != nil {
		return "missing"
	}
	return fmt.Sprint(tbl.Properties()[state.PropWatermark], tbl.Metadata().LastUpdatedMillis())
}

func (s *killSource) head(name string) int64 {
	tbl, err := s.cat.LoadTable(s.ctx, name)
	if err != nil {
		s.t.Fatal(err)
	}
	if h := tbl.CurrentSnapshot(); h != nil {
		return h.SnapshotID
	}
	return 0
}
