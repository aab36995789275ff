// Package demo is floe demo: floe's whole story on the embedded catalog in
// a fresh folder, written as a user would write it, on floe's public
// packages only (TestPublicImports checks): floe, catalog, changelog, expr,
// pipeline, tableops, delta and deltasync. The CLI's demo command runs it.
package demo

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe"
	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/tableops"
)

// Rows is the number of orders each source table starts with.
const Rows = 100000

// demo is the state of one run.
type demo struct {
	ctx context.Context
	out io.Writer
	cat *catalog.Catalog
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

func (d *demo) step(title string) {
	d.say("\n== %s", title)
}

// outputProps make the outputs merge-on-read: an incremental build then
// writes delete files next to the output's data instead of rewriting it.
func outputProps() map[string]string {
	return map[string]string{"write.merge.mode": "merge-on-read", "write.delete.mode": "merge-on-read", "write.update.mode": "merge-on-read"}
}

// sources are the two source tables: the same data written copy-on-write
// (format v2) and merge-on-read (format v3, deletion vectors).
var sources = []struct{ name, mode, version string }{
	{"orders", "copy-on-write", "2"},
	{"orders_mor", "merge-on-read", "3"},
}

// projection and filter of the outputs: SELECT id, customer, status, amount
// FROM source WHERE status = 'active'.
var (
	projection = []string{"id", "customer", "status", "amount"}
	filter     = "status = 'active'"
)

// Run runs the demo in dir (a new temporary folder, removed afterwards
// unless keep, when dir is empty), printing what it does to out. It returns
// an error when a step fails or a check finds an output that differs from
// what its source says it should hold.
func Run(ctx context.Context, out io.Writer, dir string, keep bool) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "floe-demo-")
		if err != nil {
			return err
		}
		dir = tmp
		if !keep {
			defer os.RemoveAll(dir)
		}
	}
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: dir})
	if err != nil {
		return err
	}
	defer cat.Close()
	d := &demo{ctx: ctx, out: out, cat: cat}
	d.say("floe demo: an embedded Iceberg catalog in %s (nothing else to start)", dir)
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, true); err != nil {
		return err
	}

	d.step("1. source tables: shop.orders (copy-on-write, v2) and shop.orders_mor (merge-on-read, v3)")
	for _, s := range sources {
		if err := d.createSource(s.name, s.mode, s.version); err != nil {
			return err
		}
	}
	d.say("%d orders appended to each (one snapshot each)", Rows)

	d.step("2. first build of the filtered outputs: SELECT id, customer, status, amount FROM source WHERE status = 'active'")
	syncs := map[string]*floe.Transform{}
	watermarks := map[string]int64{}
	for _, s := range sources {
		t, err := pipeline.Sync(pipeline.SyncSpec{Src: "shop." + s.name, Dst: "shop.active_" + s.name, Keys: []string{"id"},
			Filter: filter, Columns: projection, Properties: outputProps()})
		if err != nil {
			return err
		}
		syncs[s.name] = t
		res, err := d.build(t, false)
		if err != nil {
			return err
		}
		// The build read its source up to this snapshot: the next one
		// starts after it.
		if watermarks[s.name], err = strconv.ParseInt(res.Inputs[0].End, 10, 64); err != nil {
			return fmt.Errorf("demo: watermark of shop.active_%s: %w", s.name, err)
		}
	}

	d.step("3. changes to both sources: inserts, updates, deletes, rows leaving the filter")
	for _, s := range sources {
		if err := d.change(s.name); err != nil {
			return err
		}
	}

	d.step("4. the changes the next build applies to shop.active_orders (per key, latest; filter applied)")
	if err := d.showChanges("orders", watermarks["orders"]); err != nil {
		return err
	}

	d.step("5. incremental builds")
	incr := map[string]time.Duration{}
	for _, s := range sources {
		res, err := d.build(syncs[s.name], false)
		if err != nil {
			return err
		}
		if !res.Incremental {
			return fmt.Errorf("demo: the second build of %s was not incremental: %s", s.name, res.Reason)
		}
		incr[s.name] = res.Duration
	}

	d.step("6. checks: each output equals SELECT id, customer, status, amount FROM source WHERE status = 'active'")
	for _, s := range sources {
		if err := d.check(s.name); err != nil {
			return err
		}
	}

	d.step("7. incremental build against a full rebuild")
	for _, s := range sources {
		t, err := pipeline.Sync(pipeline.SyncSpec{Src: "shop." + s.name, Dst: "shop.rebuilt_" + s.name, Keys: []string{"id"},
			Filter: filter, Columns: projection, Properties: outputProps()})
		if err != nil {
			return err
		}
		res, err := (&floe.Runner{Catalog: d.cat, Logger: quietLogger(), Full: true}).Build(ctx, t)
		if err != nil {
			return err
		}
		d.say("shop.%-11s incremental build %8s, full rebuild %8s (%.1fx)", s.name, incr[s.name].Round(time.Millisecond),
			res.Duration.Round(time.Millisecond), float64(res.Duration)/float64(max(incr[s.name], 1)))
	}
	d.say("(at %d rows fixed costs dominate: an incremental build reads only the files its changes touched, which for a\n copy-on-write source means each rewrite's old and new files; a full rebuild reads every file. docs/benchmarks.md has figures at scale)", Rows)
	d.step("8. Delta Lake to Iceberg: a Delta table's Change Data Feed kept in sync with lake.events")
	if err := d.demoDelta(dir); err != nil {
		return err
	}
	d.say("\nok: every check passed")
	if keep {
		d.say("\nThe warehouse stays in %s; try:\n  floe --warehouse %s table snapshots shop.active_orders\n  floe --warehouse %s changelog shop.orders_mor --per-key latest --format jsonl", dir, dir, dir)
	}
	return nil
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// sourceSchema is the orders table: id long not null (the identifier),
// customer string, status string, amount decimal(10,2).
func sourceSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "customer", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "status", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	)
}

func (d *demo) createSource(name, mode, version string) error {
	sc := sourceSchema()
	// Partitioned by bucket(16, id).
	fieldID := 1000
	spec, err := iceberg.NewPartitionSpecOpts(iceberg.AddPartitionFieldBySourceID(1, "id_bucket_16", iceberg.BucketTransform{NumBuckets: 16}, sc, &fieldID))
	if err != nil {
		return err
	}
	props := iceberg.Properties{"format-version": version, "write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode}
	ident := table.Identifier{"shop", name}
	tbl, err := tableops.Create(d.ctx, d.cat, ident, sc, spec, props)
	if err != nil {
		return err
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	_, err = tableops.Append(d.ctx, tableops.Target{Catalog: d.cat, Ident: ident},
		func() iter.Seq2[arrow.RecordBatch, error] { return orderRows(as, 1, Rows) })
	return err
}

// orderRows generates n orders starting at id first.
func orderRows(as *arrow.Schema, first, n int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		defer b.Release()
		customers := []string{"ada", "grace", "linus", "barbara", "ken", "margaret"}
		statuses := []string{"active", "active", "cancelled", "active", "paid"}
		for i := 0; i < n; i++ {
			id := first + i
			b.Field(0).(*array.Int64Builder).Append(int64(id))
			b.Field(1).(*array.StringBuilder).Append(customers[id%len(customers)])
			b.Field(2).(*array.StringBuilder).Append(statuses[id%len(statuses)])
			if err := b.Field(3).AppendValueFromString(fmt.Sprintf("%d.%02d", 10+id%997, id*13%100)); err != nil {
				yield(nil, err)
				return
			}
		}
		yield(b.NewRecordBatch(), nil)
	}
}

func (d *demo) build(t *floe.Transform, full bool) (*floe.Result, error) {
	res, err := (&floe.Runner{Catalog: d.cat, Logger: quietLogger(), Full: full}).Build(d.ctx, t)
	if err != nil {
		return nil, err
	}
	kind := "incremental"
	if !res.Incremental {
		kind = "full (" + res.Reason + ")"
	}
	for _, o := range res.Outputs {
		d.say("%s: %s build, +%d -%d rows, snapshot %d, %s", o.Table, kind, o.RowsAdded, o.RowsRemoved, o.SnapshotID, res.Duration.Round(time.Millisecond))
	}
	return res, nil
}

// change applies the same changes to a source table.
func (d *demo) change(name string) error {
	t := tableops.Target{Catalog: d.cat, Ident: table.Identifier{"shop", name}}
	tbl, err := d.cat.Load(d.ctx, t.Ident)
	if err != nil {
		return err
	}
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return err
	}
	steps := []struct {
		verb, set, where string
	}{
		{"update", "status = 'active'", "id IN (3, 8)"},           // cancelled -> active: enter the filter
		{"update", "status = 'paid'", "id IN (1, 2)"},             // leave the filter
		{"update", "status = NULL", "id = 4"},                     // NULL leaves the filter too
		{"update", "amount = amount + 1", "id BETWEEN 10 AND 11"}, // stay in, new values
		{"delete", "", "id IN (6, 7)"},                            // gone
		{"delete", "", "status = 'cancelled' AND id > " + fmt.Sprint(Rows-20)},
	}
	var ops []string
	for _, s := range steps {
		o, err := d.dml(t, s.verb, s.set, s.where)
		if err != nil {
			return err
		}
		ops = append(ops, fmt.Sprintf("%s -%d/+%d (%s)", s.verb, o.RowsRemoved, o.RowsAdded, o.Mode))
	}
	o, err := tableops.Append(d.ctx, t, func() iter.Seq2[arrow.RecordBatch, error] { return orderRows(as, Rows+1, 3) })
	if err != nil {
		return err
	}
	ops = append(ops, fmt.Sprintf("insert +%d", o.RowsAdded))
	d.say("shop.%-11s %s", name, strings.Join(ops, ", "))
	return nil
}

// dml runs DELETE FROM t WHERE where, or UPDATE t SET set WHERE where.
func (d *demo) dml(t tableops.Target, verb, set, where string) (*tableops.Outcome, error) {
	tbl, err := d.cat.Load(d.ctx, t.Ident)
	if err != nil {
		return nil, err
	}
	p, err := expr.CompilePredicate(tbl.Schema(), where)
	if err != nil {
		return nil, err
	}
	sel := &tableops.Predicate{Iceberg: p.Iceberg, Columns: p.Columns, Match: p.Match}
	if verb == "delete" {
		return tableops.Delete(d.ctx, t, sel)
	}
	as, err := expr.CompileAssignments(tbl.Schema(), set)
	if err != nil {
		return nil, err
	}
	return tableops.Update(d.ctx, t, sel, func(ctx context.Context, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
		b := array.NewBooleanBuilder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues(touched, nil)
		mask := b.NewBooleanArray()
		defer mask.Release()
		rows, err := compute.FilterRecordBatch(ctx, rec, mask, compute.DefaultFilterOptions())
		if err != nil {
			return nil, err
		}
		defer rows.Release()
		return as.Apply(ctx, rows)
	})
}

// showChanges prints the per-key changelog the next build of the orders
// sync will apply: the source's changes after the watermark the first
// build left.
func (d *demo) showChanges(name string, watermark int64) error {
	src, err := d.cat.Load(d.ctx, table.Identifier{"shop", name})
	if err != nil {
		return err
	}
	cl, err := changelog.Open(d.ctx, src, changelog.Options{StartSnapshotID: &watermark, IdentifierColumns: []string{"id"},
		PerKey: changelog.PerKeyLatest, Columns: projection})
	if err != nil {
		return err
	}
	d.say("source snapshots %d..%d (watermark of shop.active_%s, exclusive)", watermark, src.CurrentSnapshot().SnapshotID, name)
	var lines [][]string
	for _, f := range cl.Schema().Fields() {
		if len(lines) == 0 {
			lines = append(lines, nil)
		}
		lines[0] = append(lines[0], f.Name)
	}
	for rec, err := range cl.Rows(d.ctx) {
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			var line []string
			for _, c := range rec.Columns() {
				line = append(line, cell(c, i))
			}
			lines = append(lines, line)
		}
		rec.Release()
	}
	printTable(d.out, lines)
	d.say("rows whose new status is not 'active' (or NULL) are applied as DELETE")
	return nil
}

// check compares an output with the filtered, projected source.
func (d *demo) check(name string) error {
	src, err := d.cat.Load(d.ctx, table.Identifier{"shop", name})
	if err != nil {
		return err
	}
	out, err := d.cat.Load(d.ctx, table.Identifier{"shop", "active_" + name})
	if err != nil {
		return err
	}
	want, err := currentRows(d.ctx, src, projection, filter)
	if err != nil {
		return err
	}
	got, err := currentRows(d.ctx, out, projection, "")
	if err != nil {
		return err
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		return fmt.Errorf("demo check failed: shop.active_%s has %d rows, the filtered source %d", name, len(got), len(want))
	}
	d.say("ok: shop.active_%s = filtered shop.%s (%d rows)", name, name, len(got))
	return nil
}

// currentRows returns the rows of tbl's current snapshot that match where
// ("" keeps all), projected to columns, formatted and sorted: the net
// changes of its whole history, which are its rows, as INSERTs.
func currentRows(ctx context.Context, tbl *table.Table, columns []string, where string) ([]string, error) {
	cl, err := changelog.Open(ctx, tbl, changelog.Options{NetChanges: true})
	if err != nil {
		return nil, err
	}
	var p *expr.Predicate
	if where != "" {
		if p, err = expr.CompileRowPredicate(cl.Schema(), where); err != nil {
			return nil, err
		}
	}
	idx := make([]int, len(columns))
	for i, c := range columns {
		j := cl.Schema().FieldIndices(c)
		if len(j) == 0 {
			return nil, fmt.Errorf("demo: %s has no column %s", tbl.Identifier(), c)
		}
		idx[i] = j[0]
	}
	var out []string
	for rec, err := range cl.Rows(ctx) {
		if err != nil {
			return nil, err
		}
		if p != nil {
			f, err := p.OnRows.Filter(ctx, rec)
			rec.Release()
			if err != nil {
				return nil, err
			}
			rec = f
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			cells := make([]string, len(idx))
			for k, j := range idx {
				cells[k] = cell(rec.Column(j), i)
			}
			out = append(out, "("+strings.Join(cells, ",")+")")
		}
		rec.Release()
	}
	sort.Strings(out)
	return out, nil
}

func cell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	if d, ok := a.(*array.Decimal128); ok { // at the column's scale: 21.30, not 21.3
		return d.Value(i).ToString(d.DataType().(*arrow.Decimal128Type).Scale)
	}
	return a.ValueStr(i)
}

// printTable prints rows (the first is the header) as aligned columns.
func printTable(w io.Writer, rows [][]string) {
	width := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c + strings.Repeat(" ", width[i]-len(c)))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
