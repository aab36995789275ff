package cli

import (
	"context"
	"fmt"
	"iter"
	"os"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/ddl"
	"github.com/floedata/floe/rowfile"
	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
	"github.com/floedata/floe/tableops"
)

// demo is the state of one demo run.
type demo struct {
	ctx context.Context
	a   *app
	cat *catalog.Catalog
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.a.stdout, format+"\n", args...)
}

func (d *demo) step(n int, title string) {
	d.say("\n== %d. %s", n, title)
}

func runDemo(ctx context.Context, a *app, dir string, keep bool) error {
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
	d := &demo{ctx: ctx, a: a, cat: cat}
	d.say("floe demo: embedded Iceberg catalog in %s", dir)
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, true); err != nil {
		return err
	}
	const schema = "id long not null, customer string, status string, amount decimal(10,2)"
	var starts = map[string]int64{}
	for i, mode := range []string{"copy-on-write", "merge-on-read"} {
		name := map[string]string{"copy-on-write": "orders_cow", "merge-on-read": "orders_mor"}[mode]
		fv := map[string]string{"copy-on-write": "2", "merge-on-read": "3"}[mode]
		d.step(1+i*3, fmt.Sprintf("source table shop.%s (%s, format v%s)", name, mode, fv))
		sc, err := ddl.ParseSchema(schema, []string{"id"})
		if err != nil {
			return err
		}
		spec, err := ddl.ParsePartitionSpec("bucket(4, id)", sc)
		if err != nil {
			return err
		}
		props := iceberg.Properties{"format-version": fv, "write.delete.mode": mode, "write.update.mode": mode, "write.merge.mode": mode}
		if _, err := tableops.Create(ctx, cat, table.Identifier{"shop", name}, sc, spec, props); err != nil {
			return err
		}
		t := tableops.Target{Catalog: cat, Ident: table.Identifier{"shop", name}}
		tbl, err := cat.Load(ctx, t.Ident)
		if err != nil {
			return err
		}
		as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
		if err != nil {
			return err
		}
		o, err := tableops.Append(ctx, t, func() iter.Seq2[arrow.RecordBatch, error] { return demoRows(as, 1, 12) })
		if err != nil {
			return err
		}
		starts[name] = o.SnapshotID
		d.say("appended %d orders: snapshot %d", o.RowsAdded, o.SnapshotID)

		d.step(2+i*3, "changes: update, delete, insert")
		if o, err = d.sql(t, "update", "status = 'shipped'", "id IN (2, 3, 5)"); err != nil {
			return err
		}
		d.say("update status = 'shipped' where id IN (2, 3, 5): %d rows rewritten (%s), snapshot %d", o.RowsAdded, o.Mode, o.SnapshotID)
		if o, err = d.sql(t, "delete", "", "status = 'cancelled'"); err != nil {
			return err
		}
		d.say("delete where status = 'cancelled': %d rows (%s), snapshot %d", o.RowsRemoved, o.Mode, o.SnapshotID)
		if o, err = tableops.Append(ctx, t, func() iter.Seq2[arrow.RecordBatch, error] { return demoRows(as, 13, 3) }); err != nil {
			return err
		}
		d.say("appended 3 more orders: snapshot %d", o.SnapshotID)

		d.step(3+i*3, fmt.Sprintf("changelog of shop.%s since snapshot %d (identifier id)", name, starts[name]))
		if err := d.showChangelog(t, starts[name]); err != nil {
			return err
		}
	}
	d.step(7, "checks")
	for _, name := range []string{"orders_cow", "orders_mor"} {
		if err := d.check(name, starts[name]); err != nil {
			return err
		}
	}
	same, err := d.sameChanges(starts)
	if err != nil {
		return err
	}
	if !same {
		return fmt.Errorf("demo: the two tables' changelogs differ")
	}
	d.say("ok: copy-on-write and merge-on-read tables give the same changelog")
	if keep {
		d.say("\nThe warehouse stays in %s; try:\n  floe --warehouse %s table snapshots shop.orders_mor\n  floe --warehouse %s changelog shop.orders_cow --per-key latest", dir, dir, dir)
	}
	return nil
}

// demoRows generates n orders starting at id first.
func demoRows(as *arrow.Schema, first, n int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		defer b.Release()
		customers := []string{"ada", "grace", "linus", "barbara"}
		statuses := []string{"open", "open", "cancelled", "open", "paid"}
		for i := 0; i < n; i++ {
			id := first + i
			b.Field(0).(*array.Int64Builder).Append(int64(id))
			b.Field(1).(*array.StringBuilder).Append(customers[id%len(customers)])
			b.Field(2).(*array.StringBuilder).Append(statuses[id%len(statuses)])
			if err := b.Field(3).AppendValueFromString(fmt.Sprintf("%d.%02d", 10+id*7, id*13%100)); err != nil {
				yield(nil, err)
				return
			}
		}
		yield(b.NewRecordBatch(), nil)
	}
}

func (d *demo) sql(t tableops.Target, verb, set, where string) (*tableops.Outcome, error) {
	tbl, err := d.cat.Load(d.ctx, t.Ident)
	if err != nil {
		return nil, err
	}
	p, err := predicate(tbl, where)
	if err != nil {
		return nil, err
	}
	if verb == "delete" {
		return tableops.Delete(d.ctx, t, p)
	}
	assign, err := assignments(tbl, set)
	if err != nil {
		return nil, err
	}
	return tableops.Update(d.ctx, t, p, assign)
}

func (d *demo) changelogOf(t tableops.Target, start int64, o changelog.Options) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	tbl, err := d.cat.Load(d.ctx, t.Ident)
	if err != nil {
		return nil, nil, err
	}
	o.StartSnapshotID = &start
	return changelog.Scan(d.ctx, tbl, o)
}

func (d *demo) showChangelog(t tableops.Target, start int64) error {
	schema, seq, err := d.changelogOf(t, start, changelog.Options{IdentifierColumns: []string{"id"}})
	if err != nil {
		return err
	}
	w, err := rowfile.NewWriter(d.a.stdout, rowfile.OutputTable, schema)
	if err != nil {
		return err
	}
	for rec, err := range seq {
		if err != nil {
			w.Close()
			return err
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// check verifies that the start rows plus the changelog give the current
// rows, as multisets.
func (d *demo) check(name string, start int64) error {
	t := tableops.Target{Catalog: d.cat, Ident: table.Identifier{"shop", name}}
	tbl, err := d.cat.Load(d.ctx, t.Ident)
	if err != nil {
		return err
	}
	before, err := d.rowsAt(tbl, scan.At{SnapshotID: &start})
	if err != nil {
		return err
	}
	after, err := d.rowsAt(tbl, scan.At{})
	if err != nil {
		return err
	}
	_, seq, err := d.changelogOf(t, start, changelog.Options{})
	if err != nil {
		return err
	}
	for rec, err := range seq {
		if err != nil {
			return err
		}
		n := int(rec.NumCols()) - 3
		kinds := rec.Column(n).(*array.String)
		data := rows.Project(rec, arrow.NewSchema(rec.Schema().Fields()[:n], nil), seqN(n))
		for i := 0; i < int(rec.NumRows()); i++ {
			r := rows.FormatRow(data, i)
			if kinds.Value(i) == changelog.Delete {
				before[r]--
			} else {
				before[r]++
			}
		}
		data.Release()
		rec.Release()
	}
	for r, n := range before {
		if n != after[r] {
			return fmt.Errorf("demo check failed on shop.%s: row %s appears %d times after applying the changelog, %d in the table", name, r, n, after[r])
		}
	}
	d.say("ok: shop.%s at snapshot %d + its changelog = its current %d rows", name, start, count(after))
	return nil
}

func (d *demo) rowsAt(tbl *table.Table, at scan.At) (map[string]int, error) {
	_, seq, err := scan.Rows(d.ctx, tbl, scan.Options{At: at})
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for rec, err := range seq {
		if err != nil {
			return nil, err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			out[rows.FormatRow(rec, i)]++
		}
		rec.Release()
	}
	return out, nil
}

// sameChanges compares the two tables' changelogs without snapshot ids.
func (d *demo) sameChanges(starts map[string]int64) (bool, error) {
	var got [2][]string
	for i, name := range []string{"orders_cow", "orders_mor"} {
		t := tableops.Target{Catalog: d.cat, Ident: table.Identifier{"shop", name}}
		_, seq, err := d.changelogOf(t, starts[name], changelog.Options{IdentifierColumns: []string{"id"}})
		if err != nil {
			return false, err
		}
		for rec, err := range seq {
			if err != nil {
				return false, err
			}
			n := int(rec.NumCols()) - 1 // without the snapshot id
			sub := rows.Project(rec, arrow.NewSchema(rec.Schema().Fields()[:n], nil), seqN(n))
			for j := 0; j < int(rec.NumRows()); j++ {
				got[i] = append(got[i], rows.FormatRow(sub, j))
			}
			sub.Release()
			rec.Release()
		}
		sort.Strings(got[i])
	}
	return strings.Join(got[0], "\n") == strings.Join(got[1], "\n"), nil
}

func seqN(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func count(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}
