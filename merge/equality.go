package merge

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// equalityDeletes writes the equality delete files of the actions: one row
// per key to remove, with the partition values of where the old row lives.
// When the table is unpartitioned or its partition columns are key columns,
// the key says it and the table is not read. Otherwise the key and
// partition columns of the candidate files are read to find the partitions
// holding each key, so a delete for a row whose partition changed goes to
// its old partition.
func (cs *changeSet) equalityDeletes(ctx context.Context, tbl *table.Table, acts actionKeys) ([]iceberg.DataFile, error) {
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
	var parts iter.Seq2[arrow.RecordBatch, error]
	if partDerived {
		// The delete columns are the key columns, and acts holds one
		// action per key: every key is one delete row, no two alike.
		colIdx := make([]int, as.NumFields())
		for i, f := range as.Fields() {
			colIdx[i] = slices.Index(cs.keyNames, f.Name)
		}
		parts = func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range acts.rows(ctx) {
				if err != nil {
					yield(nil, err)
					return
				}
				p := rows.Project(rec, as, colIdx)
				rec.Release()
				if !yield(p, nil) {
					return
				}
			}
		}
	} else {
		// NB: before-images in the changes say where the row was in the
		// source, not necessarily in this table (a per-key changelog keeps
		// only the last image of a row that moved twice): only the table
		// knows where its rows are.
		parts = cs.lookupPartitions(ctx, tbl, acts, as)
	}
	var given int64
	var stopErr error
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for p, err := range parts {
			if err != nil {
				stopErr = err
				yield(nil, err)
				return
			}
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

// lookupPartitions reads the key and partition columns of the rows of the
// table whose keys are in acts, for keys whose old partition the changes
// do not say, and yields those columns; the table is read once per group
// of keys. A key held by several live rows (a table whose keys are not
// unique) gives several delete rows, which delete the same rows: harmless.
func (cs *changeSet) lookupPartitions(ctx context.Context, tbl *table.Table, acts actionKeys, as *arrow.Schema) iter.Seq2[arrow.RecordBatch, error] {
	cols := make([]string, as.NumFields())
	for i, f := range as.Fields() {
		cols[i] = f.Name
	}
	keyIdx := make([]int, len(cs.keyNames))
	for i, n := range cs.keyNames {
		keyIdx[i] = as.FieldIndices(n)[0]
	}
	all := seqInts(as.NumFields())
	filter := acts.filter(tbl.Schema())
	return func(yield func(arrow.RecordBatch, error) bool) {
		for m, err := range acts.groups(ctx) {
			if err != nil {
				yield(nil, err)
				return
			}
			_, seq, err := scan.Rows(ctx, tbl, scan.Options{Columns: cols, Filter: filter})
			if err != nil {
				yield(nil, err)
				return
			}
			for rec, err := range seq {
				if err != nil {
					yield(nil, err)
					return
				}
				keys := keyColumns(rec, keyIdx)
				keep := make([]bool, rec.NumRows())
				m.mark(keys, keep)
				keys.Release()
				if !slices.Contains(keep, true) {
					rec.Release()
					continue
				}
				sel, err := rows.Select(ctx, rec, keep)
				rec.Release()
				if err != nil {
					yield(nil, err)
					return
				}
				p := rows.Project(sel, as, all)
				sel.Release()
				if !yield(p, nil) {
					return
				}
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
