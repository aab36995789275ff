package merge

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
)

// equalityDeletes writes the equality delete files of the actions: one row
// per key to remove, with the partition values of where the old row lives.
// When the table is unpartitioned or its partition columns are key columns,
// the key says it and the table is not read. Otherwise the key and
// partition columns of the candidate files are read to find the partitions
// holding each key, so a delete for a row whose partition changed goes to
// its old partition.
func (cs *changeSet) equalityDeletes(ctx context.Context, tbl *table.Table, acts map[string]*action) ([]iceberg.DataFile, error) {
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
	seen := map[string]bool{}
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	byBatch := map[int][]int64{}
	add := func(b, i int) {
		key := string(rows.AppendKey(nil, cs.recs[b], colIdx, i))
		if !seen[key] {
			seen[key] = true
			byBatch[b] = append(byBatch[b], int64(i))
		}
	}
	lookup := map[string]bool{}
	for key, a := range acts {
		if partDerived {
			add(a.b, a.i)
			continue
		}
		// NB: before-images in the changes say where the row was in the
		// source, not necessarily in this table (a per-key changelog keeps
		// only the last image of a row that moved twice): only the table
		// knows where its rows are.
		lookup[key] = true
	}
	for b, idx := range byBatch {
		t, err := rows.Take(ctx, cs.recs[b], idx)
		if err != nil {
			return nil, err
		}
		parts = append(parts, rows.Project(t, as, colIdx))
		t.Release()
	}
	if len(lookup) > 0 {
		found, err := cs.lookupPartitions(ctx, tbl, acts, lookup, as, seen)
		if err != nil {
			return nil, err
		}
		parts = append(parts, found...)
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for _, p := range parts {
			p.Retain()
			if !yield(p, nil) {
				return
			}
		}
	}
	files, err := tbl.NewTransaction().WriteEqualityDeletes(ctx, fieldIDs, seq)
	if err != nil {
		return nil, fmt.Errorf("write equality deletes: %w", err)
	}
	return files, nil
}

// lookupPartitions reads the key and partition columns of the rows of the
// table whose keys are in want, for keys whose old partition the changes
// do not say.
func (cs *changeSet) lookupPartitions(ctx context.Context, tbl *table.Table, acts map[string]*action, want map[string]bool, as *arrow.Schema, seen map[string]bool) ([]arrow.RecordBatch, error) {
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
	var buf []byte
	for rec, err := range seq {
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, err
		}
		keep := make([]bool, rec.NumRows())
		anyKept := false
		for i := range keep {
			buf = rows.AppendKey(buf[:0], rec, keyIdx, i)
			if !want[string(buf)] {
				continue
			}
			full := string(rows.AppendKey(nil, rec, all, i))
			if !seen[full] {
				seen[full] = true
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
