package main

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/bench"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/merge"
)

// Columns is the schema of the benchmark table (ddl.ParseSchema syntax): an
// order-like row, a long key and six columns, two of them strings.
const Columns = "id long not null, customer string, status string, amount decimal(10,2), qty int, created timestamptz, score double"

// Layouts: flat is unpartitioned; daily is partitioned by day(created),
// where created grows with id so that each file of the build is one day.
var layouts = map[string]string{"flat": "", "daily": "day(created)"}

// Table names in a warehouse built by build.
const (
	tableV2    = "t_v2"  // format v2: copy-on-write, position and equality deletes
	tableV3    = "t_v3"  // format v3: deletion vectors
	tablePlain = "plain" // empty, format v2: the baseline appends the changes' rows here
)

// Workload sizes: the table has Rows rows written FileRows at a time (one
// append, hence one data file, per FileRows rows), and Changes change rows
// are applied: half UPDATE_AFTER of existing keys, a quarter DELETE of
// existing keys, a quarter INSERT of new keys.
type Workload struct {
	Rows, FileRows, Changes int64
	Layout                  string // flat or daily
	Keys                    string // clustered or uniform
}

// batchRows is the size of the generated batches.
const batchRows = 64 * 1024

// baseTime is the created time of id 0.
var baseTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

var statuses = []string{"new", "paid", "shipped", "delivered", "cancelled", "returned"}

// genRows generates the rows of ids in the table's Arrow schema, version
// gen of each row (gen 0 is the row as built; gen 1 its update), plus a
// _change_type column when kinds is not nil. created depends on the id
// only (a row keeps its creation day across updates); the other values
// are random, seeded by (gen, first id).
func genRows(schema *arrow.Schema, ids []int64, gen uint64, kinds []string, fileRows int64) (arrow.RecordBatch, error) {
	fields := schema.Fields()
	if kinds != nil {
		fields = append(fields, arrow.Field{Name: merge.ChangeColumns(schema, "", "")[0].Name, Type: arrow.BinaryTypes.String})
	}
	out := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, out)
	defer b.Release()
	b.Reserve(len(ids))
	var first uint64
	if len(ids) > 0 {
		first = uint64(ids[0])
	}
	rng := rand.New(rand.NewPCG(gen+1, first))
	usPerRow := int64(24*time.Hour/time.Microsecond) / fileRows
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var buf [20]byte
	for c, f := range fields {
		switch f.Name {
		case "id":
			fb := b.Field(c).(*array.Int64Builder)
			fb.AppendValues(ids, nil)
		case "customer":
			fb := b.Field(c).(*array.StringBuilder)
			for range ids {
				l := 6 + rng.IntN(15)
				for j := range l {
					buf[j] = letters[rng.IntN(len(letters))]
				}
				fb.BinaryBuilder.Append(buf[:l])
			}
		case "status":
			fb := b.Field(c).(*array.StringBuilder)
			for range ids {
				fb.Append(statuses[rng.IntN(len(statuses))])
			}
		case "amount":
			fb := b.Field(c).(*array.Decimal128Builder)
			for range ids {
				fb.Append(decimal128.FromI64(rng.Int64N(100_000_000)))
			}
		case "qty":
			fb := b.Field(c).(*array.Int32Builder)
			for range ids {
				fb.Append(1 + rng.Int32N(100))
			}
		case "created":
			fb := b.Field(c).(*array.TimestampBuilder)
			for _, id := range ids {
				fb.Append(arrow.Timestamp(baseTime.UnixMicro() + id*usPerRow))
			}
		case "score":
			fb := b.Field(c).(*array.Float64Builder)
			for range ids {
				fb.Append(rng.NormFloat64() * 100)
			}
		case "_change_type":
			b.Field(c).(*array.StringBuilder).AppendValues(kinds, nil)
		default:
			return nil, fmt.Errorf("applybench: column %s is not one the generator knows", f.Name)
		}
	}
	return b.NewRecordBatch(), nil
}

// span yields ids lo..hi-1 in batches of batchRows, generation gen.
func span(schema *arrow.Schema, lo, hi int64, gen uint64, fileRows int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for start := lo; start < hi; start += batchRows {
			n := min(int64(batchRows), hi-start)
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = start + int64(i)
			}
			rec, err := genRows(schema, ids, gen, nil, fileRows)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// build creates the tables of a warehouse for layout: t_v2 and t_v3 with
// w.Rows rows each, appended w.FileRows rows at a time (one data file per
// append), and the empty table plain.
func build(ctx context.Context, warehouse string, w Workload, log func(format string, args ...any)) error {
	part, ok := layouts[w.Layout]
	if !ok {
		return fmt.Errorf("layout %q: want flat or daily", w.Layout)
	}
	e, err := bench.Open(ctx, warehouse)
	if err != nil {
		return err
	}
	defer e.Close()
	for _, t := range []struct {
		name, version string
		rows          int64
	}{{tableV2, "2", w.Rows}, {tableV3, "3", w.Rows}, {tablePlain, "2", 0}} {
		// The target file size is far above a file's FileRows rows, so
		// that each append writes one file (per partition).
		props := iceberg.Properties{"format-version": t.version, "write.target-file-size-bytes": fmt.Sprint(int64(1) << 32)}
		tbl, err := e.Create(t.name, Columns, part, props)
		if err != nil {
			return err
		}
		as, err := bench.ArrowSchema(ctx, tbl)
		if err != nil {
			return err
		}
		for lo := int64(0); lo < t.rows; lo += w.FileRows {
			t0 := time.Now()
			hi := min(lo+w.FileRows, t.rows)
			if _, err := e.Append(t.name, func() iter.Seq2[arrow.RecordBatch, error] { return span(as, lo, hi, 0, w.FileRows) }); err != nil {
				return fmt.Errorf("append ids %d..%d to %s: %w", lo, hi-1, t.name, err)
			}
			log("%s: appended ids %d..%d in %.1f s", t.name, lo, hi-1, time.Since(t0).Seconds())
		}
	}
	return nil
}

// changeKey returns the id and change type of change k of the workload
// (0 <= k < Changes), in id order: the changed existing keys (two in
// three UPDATE_AFTER, one in three DELETE) and then the new keys
// (INSERT), ids Rows.. onwards.
//
// Clustered keys are the 3/4*Changes consecutive ids starting at 8/10 of
// the table (with ten files, all in the ninth file); uniform keys are
// spread evenly over all ids, so every file holds some.
func (w Workload) changeKey(k int64) (int64, string, error) {
	nIns := w.Changes / 4
	nOld := w.Changes - nIns
	if nOld > w.Rows {
		return 0, "", fmt.Errorf("%d changes of existing keys in a table of %d rows", nOld, w.Rows)
	}
	if k >= nOld {
		return w.Rows + k - nOld, merge.Insert, nil
	}
	var id int64
	switch w.Keys {
	case "clustered":
		id = w.Rows*8/10 + k
		if id >= w.Rows {
			return 0, "", fmt.Errorf("clustered keys run past the table's %d rows", w.Rows)
		}
	case "uniform":
		id = k * w.Rows / nOld
	default:
		return 0, "", fmt.Errorf("keys %q: want clustered or uniform", w.Keys)
	}
	if k%3 == 2 {
		return id, merge.Delete, nil
	}
	return id, merge.UpdateAfter, nil
}

// changeKeys returns the ids and change types of every change (see
// changeKey).
func (w Workload) changeKeys() ([]int64, []string, error) {
	ids := make([]int64, 0, w.Changes)
	kinds := make([]string, 0, w.Changes)
	for k := range w.Changes {
		id, kind, err := w.changeKey(k)
		if err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
		kinds = append(kinds, kind)
	}
	return ids, kinds, nil
}

// changes generates the workload's change rows in the table's schema plus
// _change_type, batch by batch: updates and inserts are generation 1 of
// their rows, deletes carry the key and a before-image (generation 0
// values). The caller releases each batch.
func (w Workload) changes(schema *arrow.Schema) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for lo := int64(0); lo < w.Changes; lo += batchRows {
			hi := min(lo+batchRows, w.Changes)
			ids := make([]int64, 0, hi-lo)
			kinds := make([]string, 0, hi-lo)
			for k := lo; k < hi; k++ {
				id, kind, err := w.changeKey(k)
				if err != nil {
					yield(nil, err)
					return
				}
				ids = append(ids, id)
				kinds = append(kinds, kind)
			}
			rec, err := genRows(schema, ids, 1, kinds, w.FileRows)
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// writeChanges writes the workload's change rows to an Arrow IPC file at
// path (the apply phase streams them from it, as floe apply reads a file).
func writeChanges(path string, schema *arrow.Schema, w Workload) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	var iw *ipc.Writer
	for rec, err := range w.changes(schema) {
		if err != nil {
			f.Close()
			return err
		}
		if iw == nil {
			iw = ipc.NewWriter(bw, ipc.WithSchema(rec.Schema()))
		}
		err = iw.Write(rec)
		rec.Release()
		if err != nil {
			f.Close()
			return err
		}
	}
	if iw != nil {
		err = iw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readChanges streams the change rows of an IPC file; the consumer
// releases each batch.
func readChanges(path string) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	r, err := ipc.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	closeFn := func() {
		r.Release()
		f.Close()
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for r.Next() {
			rec := r.RecordBatch()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(nil, fmt.Errorf("read %s: %w", path, err))
		}
	}
	return r.Schema(), seq, closeFn, nil
}

// tableRows projects change rows onto the table's columns (dropping
// _change_type): the rows the baseline appends.
func tableRows(schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for r, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			out := array.NewRecordBatch(schema, r.Columns()[:schema.NumFields()], r.NumRows())
			r.Release()
			if !yield(out, nil) {
				return
			}
		}
	}
}

// modes are the ways the changes are applied; baseline appends the same
// rows as plain data files.
var modes = map[string]struct {
	table string
	opt   merge.DeleteMode
	want  string // merge.Result.Mode
}{
	"cow":      {tableV2, merge.DeleteAuto, "copy-on-write"},
	"position": {tableV2, merge.DeletePosition, "merge-on-read"},
	"dv":       {tableV3, merge.DeletePosition, "merge-on-read"},
	"equality": {tableV2, merge.DeleteEquality, "merge-on-read (equality deletes)"},
	"baseline": {tablePlain, 0, ""},
	// MERGE INTO with the change rows as its source (mergeSQL).
	"merge-cow":      {tableV2, merge.DeleteAuto, "copy-on-write"},
	"merge-position": {tableV2, merge.DeletePosition, "merge-on-read"},
	"merge-dv":       {tableV3, merge.DeletePosition, "merge-on-read"},
}

// mergeSQL is the MERGE statement of the merge modes: apply_changelog's
// effect, as a MERGE INTO.
const mergeSQL = `MERGE INTO bench.%s t USING changes s ON t.id = s.id
WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *`

// outcome is what one measured run did.
type outcome struct {
	rowsWritten  int64 // data rows added
	filesScanned int   // data files whose key columns were read (position, dv, cow)
	tableFiles   int   // data files of the table before the change
	tableBytes   int64 // their size
	spilled      int64 // bytes floe spilled to temporary files
}

// prepared is a measurement set up outside the timed section: the table
// loaded, the change rows written to a file.
type prepared struct {
	e       *bench.Env
	w       Workload
	mode    string
	table   string
	schema  *arrow.Schema
	changes string // IPC file of the change rows
	before  *table.Snapshot
	budget  int64
}

func prepare(ctx context.Context, warehouse string, w Workload, mode, changes string, budget int64) (*prepared, error) {
	m, ok := modes[mode]
	if !ok {
		return nil, fmt.Errorf("mode %q: want cow, position, dv, equality, baseline, merge-cow, merge-position or merge-dv", mode)
	}
	e, err := bench.Open(ctx, warehouse)
	if err != nil {
		return nil, err
	}
	p := &prepared{e: e, w: w, mode: mode, table: m.table, changes: changes, budget: budget}
	tbl, err := e.Load(m.table)
	if err != nil {
		p.close()
		return nil, fmt.Errorf("%w (build the warehouse first: -phase build)", err)
	}
	p.before = tbl.CurrentSnapshot()
	if mode != "baseline" && p.before == nil {
		p.close()
		return nil, fmt.Errorf("table %s is empty: build the warehouse first (-phase build)", m.table)
	}
	if p.schema, err = bench.ArrowSchema(ctx, tbl); err != nil {
		p.close()
		return nil, err
	}
	if _, err := os.Stat(changes); err != nil {
		if !os.IsNotExist(err) {
			p.close()
			return nil, err
		}
		if err := writeChanges(changes, p.schema, w); err != nil {
			p.close()
			return nil, fmt.Errorf("write the change rows to %s: %w", changes, err)
		}
	}
	return p, nil
}

func (p *prepared) close() { p.e.Close() }

// run is the timed section: the apply (or the baseline's append, or the
// merge), streaming the change rows from their file. It checks what was
// done against the workload and returns an error on any difference.
func (p *prepared) run(ctx context.Context) (*outcome, error) {
	out := &outcome{}
	if p.before != nil {
		out.tableFiles = atoiProp(p.before.Summary.Properties, "total-data-files")
		out.tableBytes = int64(atoiProp(p.before.Summary.Properties, "total-files-size"))
	}
	nIns := p.w.Changes / 4
	nDel := (p.w.Changes - nIns) / 3
	nUpd := p.w.Changes - nIns - nDel
	sch, seq, closeChanges, err := readChanges(p.changes)
	if err != nil {
		return nil, err
	}
	defer closeChanges()
	if p.mode == "baseline" {
		o, err := p.e.Append(p.table, func() iter.Seq2[arrow.RecordBatch, error] { return tableRows(p.schema, seq) })
		if err != nil {
			return nil, err
		}
		s := o.CurrentSnapshot()
		if got := atoiProp(s.Summary.Properties, "added-records"); int64(got) != p.w.Changes {
			return nil, fmt.Errorf("baseline appended %d rows, want %d", got, p.w.Changes)
		}
		out.rowsWritten = p.w.Changes
		return out, nil
	}
	m := modes[p.mode]
	opts := []merge.Option{merge.WithDeleteMode(m.opt), merge.WithMemoryBudget(p.budget)}
	if strings.HasPrefix(p.mode, "merge-") {
		stmt, err := expr.ParseMerge(fmt.Sprintf(mergeSQL, p.table))
		if err != nil {
			return nil, err
		}
		res, err := merge.Merge(ctx, p.e.Cat, stmt, merge.Source{Name: "changes", Schema: sch, Rows: seq}, opts...)
		if err != nil {
			return nil, err
		}
		if res.Mode != m.want || !res.Committed {
			return nil, fmt.Errorf("merge ran %q (committed %v), want %q", res.Mode, res.Committed, m.want)
		}
		if res.NumUpdatedRows != nUpd || res.NumDeletedRows != nDel || res.NumInsertedRows != nIns {
			return nil, fmt.Errorf("merge updated %d, deleted %d and inserted %d rows, want %d, %d and %d",
				res.NumUpdatedRows, res.NumDeletedRows, res.NumInsertedRows, nUpd, nDel, nIns)
		}
		if res.RowsRemoved != nUpd+nDel || res.RowsAdded != nUpd+nIns {
			return nil, fmt.Errorf("merge removed %d rows and added %d, want %d and %d", res.RowsRemoved, res.RowsAdded, nUpd+nDel, nUpd+nIns)
		}
		out.rowsWritten, out.filesScanned, out.spilled = res.RowsAdded, res.FilesScanned, res.Spilled
		return out, nil
	}
	res, err := merge.Apply(ctx, p.e.Cat, bench.Ident(p.table), sch, seq, []string{"id"}, opts...)
	if err != nil {
		return nil, err
	}
	if res.Mode != m.want || !res.Committed {
		return nil, fmt.Errorf("apply ran %q (committed %v), want %q", res.Mode, res.Committed, m.want)
	}
	if res.Upserts != nUpd+nIns || res.Deletes != nDel {
		return nil, fmt.Errorf("apply did %d upserts and %d deletes, want %d and %d", res.Upserts, res.Deletes, nUpd+nIns, nDel)
	}
	if res.RowsAdded < nUpd+nIns {
		return nil, fmt.Errorf("apply added %d rows, want at least %d", res.RowsAdded, nUpd+nIns)
	}
	if p.mode != "equality" && (res.Matched != nUpd+nDel || res.RowsRemoved != nUpd+nDel) {
		return nil, fmt.Errorf("apply matched %d keys and removed %d rows, want %d", res.Matched, res.RowsRemoved, nUpd+nDel)
	}
	out.rowsWritten = res.RowsAdded
	out.filesScanned = res.FilesScanned
	out.spilled = res.Spilled
	return out, nil
}

func atoiProp(p iceberg.Properties, k string) int {
	var n int
	if _, err := fmt.Sscan(p[k], &n); err != nil {
		return -1
	}
	return n
}
