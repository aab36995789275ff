package merge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
	"golang.org/x/sync/errgroup"
)

// eqDeletes are the equality delete files of one Apply, kept across its
// commit attempts: each attempt adds the delete rows the table it sees
// needs beyond what earlier attempts wrote.
type eqDeletes struct {
	files []iceberg.DataFile
	// keyed: delete rows of every key, their partition derived from the
	// key, were written in spec keyedSpec; global: that spec is
	// unpartitioned, so they apply to every data file.
	keyed, global bool
	keyedSpec     int
	// scanned are the data files whose keys were looked up: their rows'
	// deletes are written.
	scanned map[string]bool
}

// equalityDeletes writes the equality delete files of the actions: one
// row per key to remove, filed under the partition of the data files
// holding it (Iceberg applies an equality delete file only to the data
// files of its spec and partition, unless its spec is unpartitioned).
// When the table's spec is unpartitioned or its partition columns are key
// columns, the key says it and the table is not read. Otherwise the key
// columns of the candidate data files are read, and the keys found in a
// file go to that file's partition, known from its manifest entry (with
// its spec, which may be an older one than the table's). An attempt after
// a conflict reads only the data files earlier attempts did not, so rows
// added by concurrent writers are deleted too. It returns the files it
// wrote; st.files holds all of them.
func (cs *changeSet) equalityDeletes(ctx context.Context, tbl *table.Table, branch string, acts actionKeys, st *eqDeletes) ([]iceberg.DataFile, error) {
	if tbl.Metadata().Version() < 2 {
		return nil, fmt.Errorf("equality deletes need format v2 or later; table %s is v1", scan.FormatIdent(tbl.Identifier()))
	}
	sc := tbl.Schema()
	var fieldIDs []int
	inKeys := map[string]bool{}
	for _, n := range cs.keyNames {
		f, ok := sc.FindFieldByName(n)
		if !ok {
			return nil, fmt.Errorf("key column %s is not in the schema of table %s", n, scan.FormatIdent(tbl.Identifier()))
		}
		fieldIDs = append(fieldIDs, f.ID)
		inKeys[n] = true
	}
	// The delete files hold the key columns only, in schema order.
	delSchema, err := sc.Select(true, cs.keyNames...)
	if err != nil {
		return nil, err
	}
	as, err := table.SchemaToArrowSchema(delSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	colIdx := make([]int, as.NumFields())
	for i, f := range as.Fields() {
		colIdx[i] = slices.Index(cs.keyNames, f.Name)
	}
	var out []iceberg.DataFile
	if len(st.files) == 0 && !st.keyed && st.scanned == nil {
		spec := tbl.Spec()
		partDerived := true
		for _, pf := range spec.Fields() {
			n, ok := sc.FindColumnName(pf.SourceID())
			if !ok {
				return nil, fmt.Errorf("partition source field %d is not in the schema", pf.SourceID())
			}
			if !inKeys[n] {
				partDerived = false
			}
		}
		if partDerived {
			// Every key is one delete row (acts holds one action per
			// key), in the partition its key gives in the current spec.
			files, err := cs.keyedDeletes(ctx, tbl, fieldIDs, acts, as, colIdx)
			st.files = append(st.files, files...)
			if err != nil {
				return files, err
			}
			st.keyed, st.keyedSpec, st.global = true, spec.ID(), spec.IsUnpartitioned()
			out = append(out, files...)
		}
	}
	if st.global {
		return out, nil
	}
	// NB: before-images in the changes say where the row was in the
	// source, not necessarily in this table (a per-key changelog keeps
	// only the last image of a row that moved twice): only the table
	// knows where its rows are.
	files, err := cs.partitionDeletes(ctx, tbl, branch, acts, st, eqDeleteLayout{fieldIDs: fieldIDs, schema: delSchema, arrow: as, colIdx: colIdx})
	st.files = append(st.files, files...)
	out = append(out, files...)
	return out, err
}

// keyedDeletes writes a delete row per key of acts through iceberg-go's
// writer, which derives each row's partition in the current spec from its
// key columns.
func (cs *changeSet) keyedDeletes(ctx context.Context, tbl *table.Table, fieldIDs []int, acts actionKeys, as *arrow.Schema, colIdx []int) ([]iceberg.DataFile, error) {
	var given int64
	var stopErr error
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range acts.rows(ctx) {
			if err != nil {
				stopErr = err
				yield(nil, err)
				return
			}
			p := rows.Project(rec, as, colIdx)
			rec.Release()
			given += p.NumRows()
			if !yield(p, nil) {
				return
			}
		}
	}
	files, err := tbl.NewTransaction().WriteEqualityDeletes(ctx, fieldIDs, seq)
	if err == nil && stopErr != nil {
		err = stopErr
	}
	if err != nil {
		return files, fmt.Errorf("write equality deletes: %w", err)
	}
	// As for data files (write.ErrIncompleteWrite): a writer that stops
	// without an error would leave keys undeleted.
	var written int64
	for _, f := range files {
		written += f.Count()
	}
	if written != given {
		return files, fmt.Errorf("write equality deletes: %w: %d keys given, %d written; nothing was committed", write.ErrIncompleteWrite, given, written)
	}
	return files, nil
}

// eqDeleteLayout is the layout of equality delete rows: the key field ids,
// the schema of the key columns (schema order) and where each of its
// columns is among the key columns in key order.
type eqDeleteLayout struct {
	fieldIDs []int
	schema   *iceberg.Schema
	arrow    *arrow.Schema
	colIdx   []int
}

// eqPartition gathers the delete rows of one partition.
type eqPartition struct {
	specID int
	part   map[int]any
	recs   []arrow.RecordBatch
}

// partitionDeletes reads the key columns of the live rows of the candidate
// data files of the branch head not yet in st.scanned (and not covered by
// keyed deletes of their spec), and writes the keys of acts found there as
// one equality delete file per (spec, partition) touched, per group of
// keys. A key held by several live rows (a table whose keys are not
// unique, or a row in a file of each of two partitions) gives a delete row
// in each of their partitions: each deletes only its own.
func (cs *changeSet) partitionDeletes(ctx context.Context, tbl *table.Table, branch string, acts actionKeys, st *eqDeletes, lay eqDeleteLayout) ([]iceberg.DataFile, error) {
	base, err := write.BranchHead(tbl, branch)
	if err != nil || base == nil {
		return nil, err
	}
	all, err := scan.Plan(ctx, tbl, base, acts.filter(tbl.Schema()))
	if err != nil {
		return nil, err
	}
	if st.scanned == nil {
		st.scanned = map[string]bool{}
	}
	var tasks []scan.Task
	for _, t := range all {
		if st.scanned[t.File.FilePath()] || (st.keyed && int(t.File.SpecID()) == st.keyedSpec) {
			continue
		}
		tasks = append(tasks, t)
	}
	if len(tasks) == 0 {
		return nil, nil
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return nil, err
	}
	var out []iceberg.DataFile
	for m, err := range acts.groups(ctx) {
		if err != nil {
			return out, err
		}
		parts := map[string]*eqPartition{}
		var mu sync.Mutex
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(2)
		for _, task := range tasks {
			g.Go(func() error {
				_, seq, err := reader.Live(gctx, task.File, task.Deletes, cs.keyNames)
				if err != nil {
					return fmt.Errorf("%s: %w", task.File.FilePath(), err)
				}
				var found []arrow.RecordBatch
				for b, err := range seq {
					if err != nil {
						releaseAll(found)
						return fmt.Errorf("%s: %w", task.File.FilePath(), err)
					}
					keep := make([]bool, b.Rec.NumRows())
					m.mark(b.Rec, keep)
					if !slices.Contains(keep, true) {
						b.Release()
						continue
					}
					sel, err := rows.Select(gctx, b.Rec, keep)
					b.Release()
					if err != nil {
						releaseAll(found)
						return err
					}
					found = append(found, rows.Project(sel, lay.arrow, lay.colIdx))
					sel.Release()
				}
				if len(found) == 0 {
					return nil
				}
				k := partitionKey(task.File)
				mu.Lock()
				defer mu.Unlock()
				p := parts[k]
				if p == nil {
					p = &eqPartition{specID: int(task.File.SpecID()), part: task.File.Partition()}
					parts[k] = p
				}
				p.recs = append(p.recs, found...)
				return nil
			})
		}
		err := g.Wait()
		if err == nil {
			var files []iceberg.DataFile
			files, err = writePartitionDeletes(ctx, tbl, lay, parts)
			out = append(out, files...)
		}
		for _, p := range parts {
			releaseAll(p.recs)
		}
		if err != nil {
			return out, fmt.Errorf("write equality deletes: %w", err)
		}
	}
	for _, t := range tasks {
		st.scanned[t.File.FilePath()] = true
	}
	return out, nil
}

// writePartitionDeletes writes one equality delete file per partition of
// parts, two at a time, in the order of their keys.
func writePartitionDeletes(ctx context.Context, tbl *table.Table, lay eqDeleteLayout, parts map[string]*eqPartition) ([]iceberg.DataFile, error) {
	keys := slices.Sorted(maps.Keys(parts))
	files := make([]iceberg.DataFile, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i, k := range keys {
		p := parts[k]
		g.Go(func() error {
			f, err := write.WriteEqualityDeletes(gctx, tbl, write.EqualityDeletes{
				SpecID: p.specID, Partition: p.part, FieldIDs: lay.fieldIDs, Schema: lay.schema, Arrow: lay.arrow,
			}, p.recs)
			files[i] = f
			return err
		})
	}
	err := g.Wait()
	return slices.DeleteFunc(files, func(f iceberg.DataFile) bool { return f == nil }), err
}

// partitionKey identifies a data file's (spec, partition tuple).
func partitionKey(df iceberg.DataFile) string {
	p := df.Partition()
	ids := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	fmt.Fprintf(&b, "%d", df.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "|%d=%T:%#v", id, p[id], p[id])
	}
	return b.String()
}
