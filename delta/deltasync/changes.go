package deltasync

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/zeebo/xxh3"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/pushdown"
)

// Change data columns of the Delta Change Data Feed.
const (
	colChangeType    = "_change_type"
	colCommitVersion = "_commit_version"
)

// changeTypes maps the change types of the Delta protocol to merge.Apply's.
// Any other value (delta-spark's own tests write update_pre and update_post
// into hand-made change data files) is refused with ErrUnknownChangeType:
// the reference readers pass such values through, but applying them would
// mean guessing.
var changeTypes = map[string]string{
	"insert":           merge.Insert,
	"update_preimage":  merge.UpdateBefore,
	"update_postimage": merge.UpdateAfter,
	"delete":           merge.Delete,
}

// applyBatch applies the changes of versions from..to in one commit.
func (s *syncer) applyBatch(ctx context.Context, from, to int64) error {
	meta, ds, err := s.src.Metadata(ctx, to)
	if err != nil {
		return err
	}
	if s.tableID == "" {
		s.tableID = meta.ID
	}
	if err := s.checkSchema(ctx, to, ds); err != nil {
		return err
	}
	schema, seq, err := s.src.Changes(ctx, delta.ChangesOptions{Start: delta.AtVersion(from), End: delta.AtVersion(to)})
	if err != nil {
		return err
	}
	where := fmt.Sprintf("Delta table %s versions %d to %d", s.src.Location(), from, to)
	var n int64
	changes, err := s.changeRows(schema, seq, &n)
	if err != nil {
		return err
	}
	res, err := merge.Apply(ctx, s.cat, s.ident, schema, changes, s.keys,
		merge.WithSequenceColumn(colCommitVersion),
		// An insert of a key still in the table is a second row with it in
		// Delta, not an upsert.
		merge.WithInsertsMustBeNew(),
		merge.WithDeleteMode(s.opts.DeleteMode),
		merge.WithCommitProperties(s.stateProps(to)),
		merge.WithExpectedProperties(map[string]string{
			PropSourceVersion:  strconv.FormatInt(from-1, 10),
			PropSourceLocation: s.src.Location(),
		}),
		merge.WithCommitEmpty(),
		merge.WithSnapshotProperties(map[string]string{
			"floe.engine":                string(pushdown.Local),
			"floe.operation":             "delta-sync",
			"floe.delta.source-versions": fmt.Sprintf("%d-%d", from, to),
		}))
	if errors.Is(err, merge.ErrInsertExists) {
		return fmt.Errorf("%w: sync %s into %s: %w (equality columns must identify one row)", ErrDuplicateKey, where, s.name, err)
	}
	if err != nil {
		return fmt.Errorf("sync %s into %s: %w", where, s.name, err)
	}
	b := Batch{FromVersion: from, ToVersion: to, ChangeRows: n, Upserts: res.Upserts, Deletes: res.Deletes,
		RowsAdded: res.RowsAdded, RowsRemoved: res.RowsRemoved, SnapshotID: res.SnapshotID, Mode: res.Mode}
	s.res.Batches = append(s.res.Batches, b)
	s.res.Watermark = to
	s.res.Committed = s.res.Committed || res.Committed
	s.res.AnswerLost = s.res.AnswerLost || res.AnswerLost
	s.log().Info("delta sync: applied changes", "table", s.name, "source", s.src.Location(), "from_version", from, "to_version", to,
		"change_rows", n, "upserts", res.Upserts, "deletes", res.Deletes, "rows_added", res.RowsAdded, "rows_removed", res.RowsRemoved,
		"mode", res.Mode, "snapshot_id", res.SnapshotID)
	return s.opts.step(stepBatchDone)
}

// changeRows maps the change types of the Change Data Feed batches to
// merge.Apply's, and fails on unknown change types, NULL keys and two
// inserted images of one key in one commit (a duplicate key in Delta). n
// counts the rows passed on. The batches keep the schema.
func (s *syncer) changeRows(schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error], n *int64) (iter.Seq2[arrow.RecordBatch, error], error) {
	where := "the Change Data Feed of " + s.src.Location()
	keyIdx, err := s.keyColumns(schema, where)
	if err != nil {
		return nil, err
	}
	ctIdx, vIdx := schema.FieldIndices(colChangeType), schema.FieldIndices(colCommitVersion)
	if len(ctIdx) != 1 || len(vIdx) != 1 {
		return nil, fmt.Errorf("%s has no %s and %s columns", where, colChangeType, colCommitVersion)
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		fail := func(rec arrow.RecordBatch, err error) {
			rec.Release()
			yield(nil, err)
		}
		images := map[xxh3.Uint128]struct{}{} // keys inserted by the current version (hashes, as in checkSnapshotRows)
		curVersion := int64(-1)
		var buf []byte
		for rec, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			cts, ok1 := rec.Column(ctIdx[0]).(*array.String)
			vs, ok2 := rec.Column(vIdx[0]).(*array.Int64)
			if !ok1 || !ok2 {
				fail(rec, fmt.Errorf("%s: unexpected types of %s (%s) or %s (%s)", where, colChangeType, rec.Column(ctIdx[0]).DataType(), colCommitVersion, rec.Column(vIdx[0]).DataType()))
				return
			}
			b := array.NewStringBuilder(memory.DefaultAllocator)
			b.Reserve(int(rec.NumRows()))
			for i := 0; i < int(rec.NumRows()); i++ {
				v := vs.Value(i)
				ct := ""
				if !cts.IsNull(i) {
					ct = cts.Value(i)
				}
				kind, ok := changeTypes[ct]
				if !ok {
					b.Release()
					fail(rec, fmt.Errorf("%w: Delta table %s version %d: %s %q is not one of insert, update_preimage, update_postimage, delete; nothing was committed",
						ErrUnknownChangeType, s.src.Location(), v, colChangeType, ct))
					return
				}
				if err := nullKey(rec, keyIdx, i, func() string {
					return fmt.Sprintf("Delta table %s version %d (%s row)", s.src.Location(), v, ct)
				}); err != nil {
					b.Release()
					fail(rec, err)
					return
				}
				if v != curVersion {
					clear(images)
					curVersion = v
				}
				if kind == merge.Insert || kind == merge.UpdateAfter {
					buf = rows.AppendKey(buf[:0], rec, keyIdx, i)
					h := xxh3.Hash128(buf)
					if _, dup := images[h]; dup {
						b.Release()
						fail(rec, fmt.Errorf("%w: Delta table %s version %d writes several rows with %s; equality columns must identify one row",
							ErrDuplicateKey, s.src.Location(), v, formatKey(rec, keyIdx, i)))
						return
					}
					images[h] = struct{}{}
				}
				b.Append(kind)
			}
			mapped := b.NewArray()
			b.Release()
			cols := make([]arrow.Array, rec.NumCols())
			copy(cols, rec.Columns())
			cols[ctIdx[0]] = mapped
			out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
			mapped.Release()
			*n += rec.NumRows()
			rec.Release()
			if !yield(out, nil) {
				return
			}
		}
		if err := s.opts.step(stepBatchRead); err != nil {
			yield(nil, err)
		}
	}, nil
}

// checkSchema compares the Delta schema ds of version v with the Iceberg
// table; with EvolveSchema it adds the new nullable columns in a commit of
// their own, else any difference is an error listing them.
func (s *syncer) checkSchema(ctx context.Context, v int64, ds *delta.StructType) error {
	tbl, err := s.cat.Load(ctx, s.ident)
	if err != nil {
		return err
	}
	want, err := IcebergSchema(ds, s.keys)
	if err != nil {
		return fmt.Errorf("schema of Delta table %s version %d: %w", s.src.Location(), v, err)
	}
	adds, err := s.schemaAdds(want, tbl, v)
	if err != nil || len(adds) == 0 {
		return err
	}
	var names []string
	// Through package commit: retried on conflicts (the columns computed
	// again on the new table state), a lost answer resolved.
	_, err = commit.RunTx(ctx, s.cat, s.ident, commit.Options{}, func(_ context.Context, tbl *table.Table, tx *table.Transaction) error {
		adds, err := s.schemaAdds(want, tbl, v)
		if err != nil {
			return err
		}
		if len(adds) == 0 {
			return commit.ErrNoChange
		}
		us := tx.UpdateSchema(true, false)
		names = make([]string, len(adds))
		for i, d := range adds {
			us.AddColumn([]string{d.field.Name}, d.field.Type, d.field.Doc, false, nil)
			names[i] = d.field.Name
		}
		return us.Commit()
	})
	if err != nil {
		return fmt.Errorf("add columns %s to Iceberg table %s: %w", strings.Join(names, ", "), s.name, err)
	}
	s.res.AddedColumns = append(s.res.AddedColumns, names...)
	s.res.Committed = true
	s.log().Info("delta sync: added columns", "table", s.name, "source", s.src.Location(), "version", v, "columns", strings.Join(names, ", "))
	return s.opts.step(stepEvolved)
}

// schemaAdds returns the columns to add to tbl for the Delta schema want
// of version v; any difference that adding nullable columns (when
// EvolveSchema allows it) cannot fix is an error listing them.
func (s *syncer) schemaAdds(want *iceberg.Schema, tbl *table.Table, v int64) ([]ColumnDiff, error) {
	diffs := CompareSchemas(want, tbl.Schema(), s.keys)
	if len(diffs) == 0 {
		return nil, nil
	}
	var adds []ColumnDiff
	addable := true
	for _, d := range diffs {
		if d.Addable {
			adds = append(adds, d)
		} else {
			addable = false
		}
	}
	if !addable || !s.opts.EvolveSchema {
		hint := "update the Iceberg table to match"
		if len(adds) > 0 && !s.opts.EvolveSchema {
			names := make([]string, len(adds))
			for i, d := range adds {
				names[i] = d.Column
			}
			hint = "EvolveSchema (--evolve-schema) adds the new nullable columns " + strings.Join(names, ", ") + "; other differences need the Iceberg table updated by hand"
		}
		return nil, fmt.Errorf("%w: Delta table %s version %d and Iceberg table %s differ: %s; nothing was committed (%s)",
			ErrSchemaMismatch, s.src.Location(), v, s.name, formatDiffs(diffs), hint)
	}
	return adds, nil
}
