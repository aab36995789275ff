package write

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"golang.org/x/sync/errgroup"

	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
)

// Visitor decides, file by file, what a row-level operation does to the
// live rows of a table.
type Visitor struct {
	// MatchColumns are the columns the first pass reads (nil = all).
	// Reading only the key columns keeps the cost of finding changed rows
	// proportional to the candidate files' key columns.
	MatchColumns []string
	// Match marks the rows of b, live rows of data file f, that the
	// operation touches. It may be called concurrently for different files.
	Match func(ctx context.Context, f iceberg.DataFile, b scan.Batch) ([]bool, error)
	// Rewrite is called in the second pass, file by file, with every live
	// row of a touched file (all columns) and the touched mask. It returns
	// which rows stay (false removes a row; untouched rows must stay) and
	// rows to add in their place (nil for none). When Rewrite is nil,
	// touched rows are removed. Calls for one file are sequential.
	Rewrite func(ctx context.Context, f iceberg.DataFile, b scan.Batch, touched []bool) (keep []bool, add arrow.RecordBatch, err error)
}

// Request describes a change to prepare.
type Request struct {
	Table  *table.Table
	Branch string // "" = main
	// Filter prunes the candidate files of the Visitor (nil = all files).
	Filter  iceberg.BooleanExpression
	Visitor *Visitor
	// RemoveAll removes every data file of the branch head (and the delete
	// files that apply to them) without reading them: an overwrite of the
	// whole table. Visitor and Filter are ignored.
	RemoveAll bool
	// Inserts are rows appended by the change, in the table's Arrow
	// schema (as scan.Reader.ArrowSchema(nil) gives it).
	Inserts iter.Seq2[arrow.RecordBatch, error]
	Mode    Mode
}

// Result is what Prepare wrote: the content of one commit.
type Result struct {
	Table         *table.Table
	Branch        string
	Base          *table.Snapshot // the branch head the change was computed on (nil: empty table)
	Mode          Mode
	AddData       []iceberg.DataFile
	RemoveData    []iceberg.DataFile
	AddDeletes    []iceberg.DataFile
	RemoveDeletes []iceberg.DataFile
	// Touched lists the data files rows were removed from (rewritten in
	// copy-on-write, given delete files in merge-on-read).
	Touched      []string
	RowsRemoved  int64
	RowsAdded    int64
	FilesScanned int
}

// Empty reports whether the change writes nothing.
func (r *Result) Empty() bool {
	return len(r.AddData) == 0 && len(r.RemoveData) == 0 && len(r.AddDeletes) == 0 && len(r.RemoveDeletes) == 0
}

// Written lists every file Prepare created, for cleanup after a failed commit.
func (r *Result) Written() []string {
	var out []string
	for _, f := range r.AddData {
		out = append(out, f.FilePath())
	}
	for _, f := range r.AddDeletes {
		out = append(out, f.FilePath())
	}
	return out
}

// branchHead returns the head of branch ("" = main), or nil for a branch
// without snapshots. An unknown non-main branch is an error.
func branchHead(tbl *table.Table, branch string) (*table.Snapshot, error) {
	if branch == "" || branch == table.MainBranch {
		return tbl.Metadata().SnapshotByName(table.MainBranch), nil
	}
	for name, ref := range tbl.Metadata().Refs() {
		if name == branch {
			if ref.SnapshotRefType != table.BranchRef {
				return nil, fmt.Errorf("%s is a tag, not a branch: tags cannot be written", branch)
			}
			return tbl.Metadata().SnapshotByID(ref.SnapshotID), nil
		}
	}
	return nil, fmt.Errorf("table %s has no branch %q (create it with `floe table branch create`)", scan.FormatIdent(tbl.Identifier()), branch)
}

// BranchHead returns the head snapshot of branch ("" or "main" = main);
// nil when the branch has no snapshot yet.
func BranchHead(tbl *table.Table, branch string) (*table.Snapshot, error) {
	return branchHead(tbl, branch)
}

type touchedFile struct {
	task    scan.Task
	touched *roaring64.Bitmap
}

// Prepare computes a change and writes its files, without committing. On
// error, files it wrote are removed.
func Prepare(ctx context.Context, req Request) (res *Result, err error) {
	tbl := req.Table
	if tbl.Metadata().Version() < 2 && req.Mode == MergeOnRead {
		return nil, fmt.Errorf("table %s is format v1: merge-on-read needs format v2 or later", scan.FormatIdent(tbl.Identifier()))
	}
	base, err := branchHead(tbl, req.Branch)
	if err != nil {
		return nil, err
	}
	res = &Result{Table: tbl, Branch: req.Branch, Base: base, Mode: req.Mode}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("table %s: its file system is read-only", scan.FormatIdent(tbl.Identifier()))
	}
	defer func() {
		if err != nil {
			Cleanup(wfs, res.Written())
			res = nil
		}
	}()
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return res, err
	}
	if req.RemoveAll {
		return res, res.removeAll(ctx, req)
	}
	var touched []touchedFile
	if req.Visitor != nil && base != nil {
		tasks, err := scan.Plan(ctx, tbl, base, req.Filter)
		if err != nil {
			return res, err
		}
		res.FilesScanned = len(tasks)
		touched, err = matchPass(ctx, reader, tasks, req.Visitor)
		if err != nil {
			return res, err
		}
	}
	switch req.Mode {
	case CopyOnWrite:
		err = res.copyOnWrite(ctx, reader, touched, req)
	default:
		err = res.mergeOnRead(ctx, reader, wfs, touched, req)
	}
	return res, err
}

func matchPass(ctx context.Context, reader *scan.Reader, tasks []scan.Task, v *Visitor) ([]touchedFile, error) {
	var mu sync.Mutex
	var out []touchedFile
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for _, t := range tasks {
		g.Go(func() error {
			_, seq, err := reader.Live(gctx, t.File, t.Deletes, v.MatchColumns)
			if err != nil {
				return err
			}
			var bm *roaring64.Bitmap
			for b, err := range seq {
				if err != nil {
					return err
				}
				mask, err := v.Match(gctx, t.File, b)
				if err == nil && len(mask) != len(b.Pos) {
					err = fmt.Errorf("match returned %d flags for %d rows", len(mask), len(b.Pos))
				}
				if err != nil {
					b.Release()
					return err
				}
				for i, m := range mask {
					if m {
						if bm == nil {
							bm = roaring64.New()
						}
						bm.Add(uint64(b.Pos[i]))
					}
				}
				b.Release()
			}
			if bm != nil {
				mu.Lock()
				out = append(out, touchedFile{task: t, touched: bm})
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// rewriteFile runs the second pass over one touched file: it yields the
// rows that stay (when keepRows), the rows Rewrite adds, and records the
// removed positions.
func rewriteFile(ctx context.Context, reader *scan.Reader, tf touchedFile, v *Visitor, keepRows bool,
	removed func(pos int64), added func(n int64), yield func(arrow.RecordBatch, error) bool) (bool, error) {
	_, seq, err := reader.Live(ctx, tf.task.File, tf.task.Deletes, nil)
	if err != nil {
		return false, err
	}
	for b, err := range seq {
		if err != nil {
			return false, err
		}
		touched := make([]bool, len(b.Pos))
		any := false
		for i, p := range b.Pos {
			if tf.touched.Contains(uint64(p)) {
				touched[i] = true
				any = true
			}
		}
		keep := make([]bool, len(b.Pos))
		var add arrow.RecordBatch
		if !any {
			for i := range keep {
				keep[i] = true
			}
		} else if v.Rewrite != nil {
			keep, add, err = v.Rewrite(ctx, tf.task.File, b, touched)
			if err == nil && len(keep) != len(b.Pos) {
				err = fmt.Errorf("rewrite returned %d flags for %d rows", len(keep), len(b.Pos))
			}
			if err != nil {
				b.Release()
				return false, err
			}
		} else {
			for i := range keep {
				keep[i] = !touched[i]
			}
		}
		for i, k := range keep {
			if !k {
				if !touched[i] {
					b.Release()
					return false, errors.New("rewrite removed a row it was not given as touched")
				}
				removed(b.Pos[i])
			}
		}
		if keepRows {
			kept, err := rows.Select(ctx, b.Rec, keep)
			if err != nil {
				b.Release()
				return false, err
			}
			if kept.NumRows() > 0 {
				if !yield(kept, nil) {
					b.Release()
					return false, nil
				}
			} else {
				kept.Release()
			}
		}
		b.Release()
		if add != nil {
			if add.NumRows() > 0 {
				added(add.NumRows())
				if !yield(add, nil) {
					return false, nil
				}
			} else {
				add.Release()
			}
		}
	}
	return true, nil
}

func (res *Result) copyOnWrite(ctx context.Context, reader *scan.Reader, touched []touchedFile, req Request) error {
	schema, _, err := reader.ArrowSchema(nil)
	if err != nil {
		return err
	}
	removedFiles := map[string]bool{}
	var removedCount int64
	var addedCount int64
	stream := func(yield func(arrow.RecordBatch, error) bool) {
		for _, tf := range touched {
			var n int64
			cont, err := rewriteFile(ctx, reader, tf, req.Visitor, true, func(int64) { n++ }, func(k int64) { addedCount += k }, func(rec arrow.RecordBatch, err error) bool {
				return yield(rec, err)
			})
			if err != nil {
				yield(nil, fmt.Errorf("rewrite %s: %w", tf.task.File.FilePath(), err))
				return
			}
			if !cont {
				return
			}
			removedCount += n
			removedFiles[tf.task.File.FilePath()] = true
		}
		if req.Inserts != nil {
			for rec, err := range req.Inserts {
				if err != nil {
					yield(nil, err)
					return
				}
				addedCount += rec.NumRows()
				if !yield(rec, nil) {
					return
				}
			}
		}
	}
	files, err := writeData(ctx, res.Table, schema, stream)
	res.AddData = files
	if err != nil {
		return err
	}
	// A file whose rows all stayed (Rewrite kept everything) is not
	// replaced; its survivors were written again, so it must be replaced
	// anyway to avoid duplicates. Every touched file is replaced.
	for _, tf := range touched {
		res.RemoveData = append(res.RemoveData, tf.task.File)
		res.Touched = append(res.Touched, tf.task.File.FilePath())
		// Delete files scoped to a removed file only would dangle.
		if tf.task.Deletes.DV != nil {
			res.RemoveDeletes = append(res.RemoveDeletes, tf.task.Deletes.DV)
		}
		for _, p := range tf.task.Deletes.Pos {
			if ref := p.ReferencedDataFile(); ref != nil && *ref == tf.task.File.FilePath() {
				res.RemoveDeletes = append(res.RemoveDeletes, p)
			}
		}
	}
	res.RowsRemoved = removedCount
	res.RowsAdded = addedCount
	return nil
}

func (res *Result) mergeOnRead(ctx context.Context, reader *scan.Reader, wfs iceio.WriteFileIO, touched []touchedFile, req Request) error {
	schema, _, err := reader.ArrowSchema(nil)
	if err != nil {
		return err
	}
	removed := map[string]*roaring64.Bitmap{}
	var addedCount int64
	stream := func(yield func(arrow.RecordBatch, error) bool) {
		for _, tf := range touched {
			if req.Visitor.Rewrite == nil {
				removed[tf.task.File.FilePath()] = tf.touched
				continue
			}
			bm := roaring64.New()
			cont, err := rewriteFile(ctx, reader, tf, req.Visitor, false, func(p int64) { bm.Add(uint64(p)) }, func(k int64) { addedCount += k }, func(rec arrow.RecordBatch, err error) bool {
				return yield(rec, err)
			})
			if err != nil {
				yield(nil, fmt.Errorf("update %s: %w", tf.task.File.FilePath(), err))
				return
			}
			if !cont {
				return
			}
			if !bm.IsEmpty() {
				removed[tf.task.File.FilePath()] = bm
			}
		}
		if req.Inserts != nil {
			for rec, err := range req.Inserts {
				if err != nil {
					yield(nil, err)
					return
				}
				addedCount += rec.NumRows()
				if !yield(rec, nil) {
					return
				}
			}
		}
	}
	files, err := writeData(ctx, res.Table, schema, stream)
	res.AddData = files
	if err != nil {
		return err
	}
	res.RowsAdded = addedCount
	v3 := res.Table.Metadata().Version() >= 3
	var dvw *dv.DVWriter
	if v3 {
		meta := res.Table.Metadata()
		dvw = dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	}
	for _, tf := range touched {
		bm := removed[tf.task.File.FilePath()]
		if bm == nil || bm.IsEmpty() {
			continue
		}
		df := tf.task.File
		res.Touched = append(res.Touched, df.FilePath())
		res.RowsRemoved += int64(bm.GetCardinality())
		positions := make([]int64, 0, bm.GetCardinality())
		it := bm.Iterator()
		for it.HasNext() {
			positions = append(positions, int64(it.Next()))
		}
		if v3 {
			if old := tf.task.Deletes.DV; old != nil {
				prev, err := dv.ReadDV(wfs, old)
				if err != nil {
					return fmt.Errorf("%w: deletion vector %s: %w", scan.ErrInvalidDeleteFile, old.FilePath(), err)
				}
				dvw.Load(df.FilePath(), prev, df.SpecID(), df.Partition())
				res.RemoveDeletes = append(res.RemoveDeletes, old)
			}
			if err := dvw.Add(df.FilePath(), positions, df.SpecID(), df.Partition()); err != nil {
				return err
			}
			continue
		}
		pf, err := writePositionDeletes(ctx, res.Table, wfs, df, positions)
		if err != nil {
			return err
		}
		res.AddDeletes = append(res.AddDeletes, pf)
	}
	if v3 {
		lp, err := res.Table.LocationProvider()
		if err != nil {
			return err
		}
		loc := lp.NewDataLocation(fmt.Sprintf("dv-%s.puffin", newID()))
		dvs, err := dvw.Flush(ctx, loc)
		if err != nil {
			return fmt.Errorf("write deletion vectors %s: %w", loc, err)
		}
		res.AddDeletes = append(res.AddDeletes, dvs...)
	}
	return nil
}

// writeData writes rows as data files of the table's current spec. The
// files written so far are returned even on error, for cleanup.
func writeData(ctx context.Context, tbl *table.Table, schema *arrow.Schema, stream iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, error) {
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, schema, stream) {
		if err != nil {
			return files, fmt.Errorf("write data files of %s: %w", scan.FormatIdent(tbl.Identifier()), err)
		}
		files = append(files, df)
	}
	return files, nil
}

// Cleanup removes files written for a change that was not committed. It
// is best effort: a file it cannot remove stays an orphan.
func Cleanup(fs iceio.IO, paths []string) {
	for _, p := range paths {
		_ = fs.Remove(p)
	}
}

// removeAll prepares an overwrite of the whole table: every live file goes,
// the inserts come in.
func (res *Result) removeAll(ctx context.Context, req Request) error {
	if res.Base != nil {
		fs, err := res.Table.FS(ctx)
		if err != nil {
			return err
		}
		st, err := scan.LoadState(ctx, fs, res.Table.Metadata(), res.Base)
		if err != nil {
			return err
		}
		for _, e := range st.Data {
			res.RemoveData = append(res.RemoveData, e.File)
			res.Touched = append(res.Touched, e.Path())
			res.RowsRemoved += e.File.Count()
		}
		for _, e := range st.Deletes {
			res.RemoveDeletes = append(res.RemoveDeletes, e.File)
		}
	}
	if req.Inserts == nil {
		return nil
	}
	reader, err := scan.NewReader(ctx, res.Table, nil)
	if err != nil {
		return err
	}
	schema, _, err := reader.ArrowSchema(nil)
	if err != nil {
		return err
	}
	counted := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range req.Inserts {
			if err == nil {
				res.RowsAdded += rec.NumRows()
			}
			if !yield(rec, err) {
				return
			}
		}
	}
	files, err := writeData(ctx, res.Table, schema, counted)
	res.AddData = files
	return err
}
