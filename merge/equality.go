package merge

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
	"github.com/floedata/floe/write"
)

// equalityDeletes writes the equality delete files of the actions: one row
// per key to remove, with the partition values of where the old row lives.
// When the table is unpartitioned or its partition columns are key columns,
// the key says it and the table is not read. Otherwise the key and
// partition columns of the candidate files are read to find the partitions
// holding each key, so a delete for a row whose partition changed goes to
// its old partition.
func (cs *changeSet) equalityDeletes(ctx context.Context, tbl *table.Table, acts *actionSet) ([]iceberg.DataFile, error) {
	if tbl.Metadata().Version() < 2 {
		return nil, fmt.Errorf("equality deletes need format v2 or later; table %s is v1", scan.FormatIdent(tbl.Identifier()))
	}
	sc := tbl.Schema()
	var fieldIDs []int
	names := append([]string{}, cs.keyNames...)
	inKeys := map[string]bool{}
	for _, n := range cs.keyNames {
		f, _ := sc.FindFieldByName(n)
		fieldIDs = append(fieldIDs, f.ID)
		inKeys[n] = true
	}
	partDerived := true
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		n, ok := sc.FindColumnName(pf.SourceID())
		if !ok {
			return nil, fmt.Errorf("partition source field %d is not in the schema", pf.SourceID())
		}
		if !inKeys[n] {
			partDerived = false
			if !contains(names, n) {
				names = append(names, n)
			}
		}
	}
	// Rows are built in the order iceberg-go's writer expects: schema order.
	delSchema, err := sc.Select(true, names...)
	if err != nil {
		return nil, err
	}
	as, err := table.SchemaToArrowSchema(delSchema, nil, true, false)
	if err != nil {
		return nil, err
	}
	colIdx := make([]int, as.NumFields())
	for i, f := range as.Fields() {
		colIdx[i] = cs.tableSch.FieldIndices(f.Name)[0]
	}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	if partDerived {
		// The delete columns are the key columns, and acts holds one
		// action per key: every action is one delete row, no two alike.
		byBatch := make([][]int64, len(cs.recs))
		for a := range acts.all {
			byBatch[a.b] = append(byBatch[a.b], int64(a.i))
		}
		for b, idx := range byBatch {
			if len(idx) == 0 {
				continue
			}
			slices.Sort(idx)
			// Project first: only the delete columns are taken.
			p := rows.Project(cs.recs[b], as, colIdx)
			t, err := rows.Take(ctx, p, idx)
			p.Release()
			if err != nil {
				return nil, err
			}
			parts = append(parts, t)
		}
	} else {
		// NB: before-images in the changes say where the row was in the
		// source, not necessarily in this table (a per-key changelog keeps
		// only the last image of a row that moved twice): only the table
		// knows where its rows are.
		found, err := cs.lookupPartitions(ctx, tbl, acts, as)
		if err != nil {
			return nil, err
		}
		parts = found
	}
	var given int64
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for _, p := range parts {
			given += p.NumRows()
			p.Retain()
			if !yield(p, nil) {
				return
			}
		}
	}
	files, err := tbl.NewTransaction().WriteEqualityDeletes(ctx, fieldIDs, seq)
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

// lookupPartitions reads the key and partition columns of the rows of the
// table whose keys are in acts, for keys whose old partition the changes
// do not say, and returns those columns. A key held by several live rows
// (a table whose keys are not unique) gives several delete rows, which
// delete the same rows: harmless.
func (cs *changeSet) lookupPartitions(ctx context.Context, tbl *table.Table, acts *actionSet, as *arrow.Schema) ([]arrow.RecordBatch, error) {
	cols := make([]string, as.NumFields())
	for i, f := range as.Fields() {
		cols[i] = f.Name
	}
	keyIdx := make([]int, len(cs.keyNames))
	for i, n := range cs.keyNames {
		keyIdx[i] = as.FieldIndices(n)[0]
	}
	all := seqInts(as.NumFields())
	filter := cs.keyFilter(tbl, acts)
	_, seq, err := scan.Rows(ctx, tbl, scan.Options{Columns: cols, Filter: filter})
	if err != nil {
		return nil, err
	}
	var out []arrow.RecordBatch
	var slots []int32
	var hashes []uint64
	for rec, err := range seq {
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		keys := keyColumns(rec, keyIdx)
		slots, hashes = acts.lookup(keys, slots, hashes)
		keys.Release()
		keep := make([]bool, rec.NumRows())
		anyKept := false
		for i, s := range slots {
			if s >= 0 {
				keep[i], anyKept = true, true
			}
		}
		if anyKept {
			sel, err := rows.Select(ctx, rec, keep)
			if err != nil {
				rec.Release()
				return nil, err
			}
			out = append(out, rows.Project(sel, as, all))
			sel.Release()
		}
		rec.Release()
	}
	return out, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
