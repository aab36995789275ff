package deltasync

import (
	"context"
	"fmt"
	"iter"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/zeebo/xxh3"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/pushdown"
)

// migrate copies the rows of the snapshot into the (empty) table, in one
// commit that also sets the watermark to the snapshot's version.
func (s *syncer) migrate(ctx context.Context, snap *delta.Snapshot) error {
	v := snap.Version()
	if err := s.checkSchema(ctx, v, snap.Schema()); err != nil {
		return err
	}
	m := s.migration(snap)
	out, err := commit.Run(ctx, s.cat, s.ident, m.opts, m.prepare)
	if err != nil {
		return fmt.Errorf("migrate %s into %s: %w", m.where, s.name, err)
	}
	s.migrated(out, m)
	return s.opts.step(stepMigrated)
}

// migration is the commit of a snapshot's rows with its watermark.
type migration struct {
	v       int64
	where   string
	rows    int64
	files   []iceberg.DataFile
	opts    commit.Options
	prepare commit.Prepare
}

// migration returns the commit of snap's rows. Its prepare writes the
// rows at the first attempt (package commit owns the files) and reuses
// them at later ones.
func (s *syncer) migration(snap *delta.Snapshot) *migration {
	v := snap.Version()
	m := &migration{v: v, where: fmt.Sprintf("Delta table %s version %d", s.src.Location(), v)}
	m.opts = commit.Options{
		SnapshotProperties: iceberg.Properties{"floe.operation": "delta-sync", PropSourceVersion: strconv.FormatInt(v, 10), "floe.engine": string(pushdown.Local)},
		SetProperties:      s.stateProps(v),
		Expect:             map[string]string{PropSourceVersion: ""},
		CommitEmpty:        true,
	}
	written := false
	m.prepare = func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		if err := s.checkEmpty(ctx, tbl); err != nil {
			return nil, err
		}
		if !written {
			written = true
			files, n, err := s.writeSnapshot(ctx, tbl, snap, m.where)
			reuse.Own(filePaths(files)...)
			if err != nil {
				return nil, err
			}
			m.files, m.rows = files, n
		}
		if err := s.opts.step(stepMigrateCommit); err != nil {
			return nil, err
		}
		return write.Prepare(ctx, write.Request{Table: tbl, InsertFiles: m.files, Mode: write.CopyOnWrite, Reuse: reuse})
	}
	return m
}

// writeSnapshot writes the rows of snap as data files of tbl.
func (s *syncer) writeSnapshot(ctx context.Context, tbl *table.Table, snap *delta.Snapshot, where string) ([]iceberg.DataFile, int64, error) {
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, 0, err
	}
	schema, seq, err := snap.Scan(ctx, delta.ScanOptions{})
	if err != nil {
		return nil, 0, err
	}
	checked, err := s.checkSnapshotRows(schema, seq, where)
	if err != nil {
		return nil, 0, err
	}
	r, err := rowfile.FromRecords(ctx, where, schema, checked, rowfile.ReadOptions{Target: target})
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	var n int64
	files, err := write.WriteRows(ctx, tbl, func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range r.All() {
			if err == nil {
				n += rec.NumRows()
			}
			if !yield(rec, err) {
				return
			}
		}
	})
	return files, n, err
}

// migrated records a committed migration.
func (s *syncer) migrated(out *commit.Outcome, m *migration) {
	s.res.Migrated, s.res.MigratedVersion, s.res.MigratedRows, s.res.Watermark = true, m.v, m.rows, m.v
	s.res.Committed = s.res.Committed || out.Committed
	s.res.AnswerLost = s.res.AnswerLost || out.AnswerLost
	s.log().Info("delta sync: migrated snapshot", "table", s.name, "source", s.src.Location(), "version", m.v, "rows", m.rows, "files", len(m.files))
}

// checkEmpty refuses to migrate into a table that holds rows.
func (s *syncer) checkEmpty(ctx context.Context, tbl *table.Table) error {
	if tbl.Metadata().CurrentSnapshot() == nil {
		return nil
	}
	_, seq, err := scan.Rows(ctx, tbl, scan.Options{Limit: 1})
	if err != nil {
		return err
	}
	for rec, err := range seq {
		if err != nil {
			return err
		}
		n := rec.NumRows()
		rec.Release()
		if n > 0 {
			return fmt.Errorf("%w: Iceberg table %s has rows and no %s property; sync into a new or empty table (or set the property if its rows are the Delta snapshot at that version)",
				ErrTargetNotEmpty, s.name, PropSourceVersion)
		}
	}
	return nil
}

func filePaths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

// keyColumns returns the indexes of the equality columns in schema.
func (s *syncer) keyColumns(schema *arrow.Schema, where string) ([]int, error) {
	idx := make([]int, len(s.keys))
	for i, k := range s.keys {
		is := schema.FieldIndices(k)
		if len(is) != 1 {
			return nil, fmt.Errorf("%w: equality column %q is not a column of %s", ErrInvalidOptions, k, where)
		}
		idx[i] = is[0]
	}
	return idx, nil
}

// checkSnapshotRows passes the batches of a snapshot on, failing on a NULL
// or duplicate key. Keys are remembered as 128-bit hashes (about 40 bytes
// per row), so a collision, and thus a false duplicate report, is
// practically impossible.
func (s *syncer) checkSnapshotRows(schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error], where string) (iter.Seq2[arrow.RecordBatch, error], error) {
	keyIdx, err := s.keyColumns(schema, where)
	if err != nil {
		return nil, err
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		seen := map[xxh3.Uint128]struct{}{}
		var buf []byte
		row := int64(0)
		for rec, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			for i := 0; i < int(rec.NumRows()); i++ {
				if err := nullKey(rec, keyIdx, i, func() string { return fmt.Sprintf("%s, row %d", where, row+int64(i)) }); err != nil {
					rec.Release()
					yield(nil, err)
					return
				}
				buf = rows.AppendKey(buf[:0], rec, keyIdx, i)
				h := xxh3.Hash128(buf)
				if _, dup := seen[h]; dup {
					err := fmt.Errorf("%w: %s has several rows with %s; equality columns must identify one row", ErrDuplicateKey, where, formatKey(rec, keyIdx, i))
					rec.Release()
					yield(nil, err)
					return
				}
				seen[h] = struct{}{}
			}
			row += rec.NumRows()
			if !yield(rec, nil) {
				return
			}
		}
	}, nil
}

func nullKey(rec arrow.RecordBatch, keyIdx []int, i int, where func() string) error {
	for _, k := range keyIdx {
		if rec.Column(k).IsNull(i) {
			return fmt.Errorf("%w: %s: equality column %q is NULL", ErrNullKey, where(), rec.Schema().Field(k).Name)
		}
	}
	return nil
}

func formatKey(rec arrow.RecordBatch, keyIdx []int, i int) string {
	s := ""
	for n, k := range keyIdx {
		if n > 0 {
			s += ", "
		}
		s += rec.Schema().Field(k).Name + " = " + rows.FormatValue(rec.Column(k), i)
	}
	return s
}
