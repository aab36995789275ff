package write

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/internal/scan"
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
	// InPlace says that Rewrite's add rows replace the rows it removes,
	// one for one and in their order (an UPDATE): where their counts agree
	// a copy-on-write rewrite writes each in its row's place, so that the
	// new file keeps the old one's row order and, for the columns the
	// change left alone, its column chunks byte for byte (the next
	// changelog then decodes them once). Tables with row lineage keep the
	// old layout (kept rows, then added ones per batch).
	InPlace bool
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
	// InsertFiles are data files already written for the change's appended
	// rows (see WriteRows); they are added as they are, so that a retried
	// commit reuses them. Inserts and InsertFiles may both be set.
	InsertFiles []iceberg.DataFile
	// DeleteFiles are delete files already written for the change
	// (equality deletes); they are added as they are (merge-on-read).
	DeleteFiles []iceberg.DataFile
	Mode        Mode
	// RewriteRatio is auto's threshold (Mode Auto; see Choose): 0 takes
	// the table's floe.write.auto.rewrite-ratio, else DefaultRewriteRatio.
	RewriteRatio float64
	// Reuse, when set, keeps the per-file work of earlier attempts: a data
	// file that is still live with the same delete files is not read or
	// rewritten again.
	Reuse *Reuse
}

// Result is what Prepare wrote: the content of one commit.
type Result struct {
	Table  *table.Table
	Branch string
	Base   *table.Snapshot // the branch head the change was computed on (nil: empty table)
	// Mode is the mode the change was written in (the one auto chose).
	Mode Mode
	// Summary goes into the snapshot summary with the caller's properties
	// (auto's choice, see recordChoice).
	Summary       iceberg.Properties
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
	// Stager, when set, stages the change on the transaction instead of
	// the replace or row delta Stage uses (compaction's rewrite). The
	// files above still say what the change adds and removes.
	Stager func(ctx context.Context, tx *table.Transaction, snapshotProps iceberg.Properties) error
	// Prestage, when set, stages table changes that go into the same
	// commit before the change's files (the schema and partition spec
	// updates of a rebuild whose columns changed). A result with a
	// Prestage is never empty.
	Prestage func(tx *table.Transaction) error
	// written lists the files this attempt created (not reused ones).
	written []string
	auto    *autoState // Mode Auto's decision
}

// Empty reports whether the change writes nothing.
func (r *Result) Empty() bool {
	return r.Prestage == nil && r.NoFiles()
}

// NoFiles reports whether the change adds and removes no file (it may
// still stage table changes: a commit without a snapshot).
func (r *Result) NoFiles() bool {
	return len(r.AddData) == 0 && len(r.RemoveData) == 0 && len(r.AddDeletes) == 0 && len(r.RemoveDeletes) == 0
}

// Written lists every file of the result that floe created (data and
// delete files, reused ones included), for cleanup when the change is
// abandoned.
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

// Reuse carries per-file work between attempts of one change, and is the
// register of every file written for the change: per-file work, and files
// registered with Own (inserts written once, deletion vectors). The owner
// of the change (package commit) decides from it which files to remove
// once it knows whether the change was committed. It is safe for
// concurrent use.
type Reuse struct {
	mu    sync.Mutex
	files map[string]*fileWork
	owned map[string]bool
}

// NewReuse returns an empty cache.
func NewReuse() *Reuse { return &Reuse{files: map[string]*fileWork{}, owned: map[string]bool{}} }

// Own registers files written for the change, so that the change's owner
// removes them when no committed snapshot can reference them.
func (r *Reuse) Own(paths ...string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range paths {
		r.owned[p] = true
	}
}

// All lists every file registered: per-file work and owned files.
func (r *Reuse) All() []string { return r.Abandoned(nil) }

func (r *Reuse) get(key string) *fileWork {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.files[key]
}

func (r *Reuse) put(key string, fw *fileWork) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.files[key] = fw
}

// Abandoned lists the files earlier attempts wrote that res does not use,
// for removal once res is committed (or all of them when res is nil).
func (r *Reuse) Abandoned(res *Result) []string {
	if r == nil {
		return nil
	}
	used := map[string]bool{}
	if res != nil {
		for _, p := range res.Written() {
			used[p] = true
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if !used[p] && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, fw := range r.files {
		for _, p := range fw.paths() {
			add(p)
		}
	}
	for p := range r.owned {
		add(p)
	}
	return out
}

// fileWork is what a change does to one data file (with one set of
// delete files): the positions it removes and the files it writes.
type fileWork struct {
	// touched are the positions the match pass touched (nil: none), of
	// live rows: what auto chooses from.
	touched     *roaring64.Bitmap
	live        int64
	removed     *roaring64.Bitmap // nil: the file is untouched
	added       []iceberg.DataFile
	addedRows   int64
	removedRows int64
	posDelete   iceberg.DataFile // v2 merge-on-read
}

func (fw *fileWork) paths() []string {
	var out []string
	for _, f := range fw.added {
		out = append(out, f.FilePath())
	}
	if fw.posDelete != nil {
		out = append(out, fw.posDelete.FilePath())
	}
	return out
}

// workKey is the Reuse key of the work on one data file. Under auto the
// chosen mode is part of it: a retry on a changed table may choose the
// other mode, whose work on the file differs.
func workKey(t scan.Task, m Mode, auto bool) string {
	k := t.File.FilePath() + "|" + t.Deletes.Key()
	if auto {
		k += "|" + m.String()
	}
	return k
}

// eachTask runs fn on every task, two at a time, collecting the files fn
// wrote (also on error) and naming the file in an error.
func (res *Result) eachTask(ctx context.Context, reader *scan.Reader, tasks []scan.Task, fn func(ctx context.Context, i int, t scan.Task) ([]string, error)) error {
	var mu sync.Mutex
	g, gctx := safe.WithContext(ctx)
	g.SetLimit(2)
	for i, t := range tasks {
		g.Go(func() (err error) {
			defer reader.RecoverRead(&err, t.File)
			written, err := fn(gctx, i, t)
			mu.Lock()
			res.written = append(res.written, written...)
			mu.Unlock()
			if err != nil {
				if errors.As(err, new(*scan.CorruptFileError)) {
					return err // it names the file
				}
				return fmt.Errorf("%s: %w", t.File.FilePath(), err)
			}
			return nil
		})
	}
	return g.Wait()
}

// Prepare computes a change and writes its files, without committing.
// With req.Reuse set, every file it writes is registered there (Own) and
// left to the change's owner; without, the files this attempt wrote are
// removed on error.
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
	if req.Mode == Auto {
		// The mode is chosen once the match pass has seen the touched
		// files; without a match pass (no visitor, an empty table) nothing
		// is rewritten or deleted, and copy-on-write stages it as well.
		res.Mode = CopyOnWrite
		if res.auto, err = autoFor(tbl, req); err != nil {
			return nil, err
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("table %s: its file system is read-only", scan.FormatIdent(tbl.Identifier()))
	}
	defer func() {
		req.Reuse.Own(res.written...)
		if err != nil {
			if req.Reuse == nil {
				Cleanup(wfs, res.written)
			}
			res = nil
		}
	}()
	if req.RemoveAll {
		if err := res.removeAll(ctx, req); err != nil {
			return res, err
		}
		res.addPrewritten(req)
		return res, nil
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return res, err
	}
	schema, _, err := reader.ArrowSchema(nil)
	if err != nil {
		return res, err
	}
	if req.Visitor != nil && base != nil {
		tasks, err := scan.Plan(ctx, tbl, base, req.Filter)
		if err != nil {
			return res, err
		}
		res.FilesScanned = len(tasks)
		works := make([]*fileWork, len(tasks))
		auto := req.Mode == Auto
		var matched []*fileWork
		if auto {
			if matched, err = res.chooseMode(ctx, reader, tasks, req); err != nil {
				return res, err
			}
		}
		err = res.eachTask(ctx, reader, tasks, func(ctx context.Context, i int, t scan.Task) ([]string, error) {
			key := workKey(t, res.Mode, auto)
			if fw := req.Reuse.get(key); fw != nil {
				works[i] = fw
				return nil, nil
			}
			var fw *fileWork
			var written []string
			var err error
			if auto && matched[i] != nil {
				// The match pass ran in this attempt: the rewrite pass
				// follows it, as the visitor expects.
				fw, written, err = res.finishFile(ctx, reader, wfs, schema, t, req, matched[i].touched, matched[i].live)
			} else {
				fw, written, err = res.doFile(ctx, reader, wfs, schema, t, req)
			}
			if err == nil {
				req.Reuse.put(key, fw)
				works[i] = fw
			}
			return written, err
		})
		if err != nil {
			return res, err
		}
		if err := res.assemble(ctx, wfs, tasks, works); err != nil {
			return res, err
		}
		if req.Mode == Auto {
			res.recordChoice()
		}
	}
	res.addPrewritten(req)
	if req.Inserts != nil {
		var n int64
		counted := func(yield func(arrow.RecordBatch, error) bool) {
			for rec, err := range req.Inserts {
				if err == nil {
					n += rec.NumRows()
				}
				if !yield(rec, err) {
					return
				}
			}
		}
		files, err := writeData(ctx, tbl, schema, counted)
		res.AddData = append(res.AddData, files...)
		res.written = append(res.written, paths(files)...)
		res.RowsAdded += n
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// addPrewritten adds the files the caller wrote for the change.
func (res *Result) addPrewritten(req Request) {
	res.AddDeletes = append(res.AddDeletes, req.DeleteFiles...)
	res.AddData = append(res.AddData, req.InsertFiles...)
	for _, f := range req.InsertFiles {
		res.RowsAdded += f.Count()
	}
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

// doFile runs the match pass over one data file and, when rows are
// touched, the rewrite pass. It returns the work and the files it wrote.
func (res *Result) doFile(ctx context.Context, reader *scan.Reader, wfs iceio.WriteFileIO, schema *arrow.Schema, t scan.Task, req Request) (*fileWork, []string, error) {
	// NB: live, from the row groups read, is used by auto only, which
	// matched every row (chooseMode).
	touched, live, err := matchFile(ctx, reader, t, req.Visitor, req.Filter)
	if err != nil {
		return nil, nil, err
	}
	return res.finishFile(ctx, reader, wfs, schema, t, req, touched, live)
}

// finishFile does the work of res.Mode on one data file whose match pass
// touched the rows touched (nil: none) of its live rows: the rewrite pass
// and, on v2 merge-on-read, the position delete file.
func (res *Result) finishFile(ctx context.Context, reader *scan.Reader, wfs iceio.WriteFileIO, schema *arrow.Schema, t scan.Task, req Request, touched *roaring64.Bitmap, live int64) (*fileWork, []string, error) {
	fw := &fileWork{live: live}
	if touched == nil {
		return fw, nil, nil
	}
	fw.touched = touched
	tf := touchedFile{task: t, touched: touched}
	removed := roaring64.New()
	if res.Mode == MergeOnRead && req.Visitor.Rewrite == nil {
		removed = touched
	} else {
		keepRows := res.Mode == CopyOnWrite
		var lw *lineageWrite
		var err error
		if keepRows {
			if lw, err = rewriteLineage(res.Table, t); err != nil {
				return nil, nil, err
			}
		}
		stream := func(yield func(arrow.RecordBatch, error) bool) {
			_, err := rewriteFile(ctx, reader, tf, req.Visitor, keepRows, schema, lw,
				func(p int64) { removed.Add(uint64(p)) }, func(k int64) { fw.addedRows += k }, yield)
			if err != nil {
				yield(nil, err)
			}
		}
		var files []iceberg.DataFile
		if lw != nil {
			files, err = writeDataLineage(ctx, res.Table, lw, stream)
		} else {
			files, err = writeData(ctx, res.Table, schema, stream)
		}
		fw.added = files
		if err != nil {
			return nil, paths(files), err
		}
	}
	fw.removed = removed
	fw.removedRows = int64(removed.GetCardinality())
	written := paths(fw.added)
	if res.Mode == MergeOnRead && res.Table.Metadata().Version() < 3 && !removed.IsEmpty() {
		pf, err := writePositionDeletes(ctx, res.Table, wfs, t.File, bitmapPositions(removed))
		if err != nil {
			return nil, written, err
		}
		fw.posDelete = pf
		written = append(written, pf.FilePath())
	}
	return fw, written, nil
}

func bitmapPositions(bm *roaring64.Bitmap) []int64 {
	out := make([]int64, 0, bm.GetCardinality())
	it := bm.Iterator()
	for it.HasNext() {
		out = append(out, int64(it.Next()))
	}
	return out
}

// assemble turns per-file work into the files of one commit.
func (res *Result) assemble(ctx context.Context, wfs iceio.WriteFileIO, tasks []scan.Task, works []*fileWork) error {
	v3 := res.Table.Metadata().Version() >= 3
	var dvw *dv.DVWriter
	dvs := 0
	if res.Mode == MergeOnRead && v3 {
		meta := res.Table.Metadata()
		dvw = dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	}
	for i, fw := range works {
		if fw.removed == nil {
			continue
		}
		t := tasks[i]
		df := t.File
		res.AddData = append(res.AddData, fw.added...)
		res.RowsAdded += fw.addedRows
		if res.Mode == CopyOnWrite {
			res.RemoveData = append(res.RemoveData, df)
			res.Touched = append(res.Touched, df.FilePath())
			res.RowsRemoved += fw.removedRows
			// Delete files scoped to a removed file only would dangle.
			if t.Deletes.DV != nil {
				res.RemoveDeletes = append(res.RemoveDeletes, t.Deletes.DV)
			}
			for _, p := range t.Deletes.Pos {
				if ref := p.ReferencedDataFile(); ref != nil && *ref == df.FilePath() {
					res.RemoveDeletes = append(res.RemoveDeletes, p)
				}
			}
			continue
		}
		if fw.removed.IsEmpty() {
			continue
		}
		res.Touched = append(res.Touched, df.FilePath())
		res.RowsRemoved += fw.removedRows
		if !v3 {
			res.AddDeletes = append(res.AddDeletes, fw.posDelete)
			continue
		}
		if old := t.Deletes.DV; old != nil {
			prev, err := dv.ReadDV(wfs, old)
			if err != nil {
				return fmt.Errorf("%w: deletion vector %s: %w", scan.ErrInvalidDeleteFile, old.FilePath(), err)
			}
			dvw.Load(df.FilePath(), prev, df.SpecID(), df.Partition())
			res.RemoveDeletes = append(res.RemoveDeletes, old)
		}
		if err := dvw.Add(df.FilePath(), bitmapPositions(fw.removed), df.SpecID(), df.Partition()); err != nil {
			return err
		}
		dvs++
	}
	if dvs > 0 {
		lp, err := res.Table.LocationProvider()
		if err != nil {
			return err
		}
		loc := lp.NewDataLocation(fmt.Sprintf("dv-%s.puffin", newID()))
		// Registered before it is written: a failed write may leave part
		// of it.
		res.written = append(res.written, loc)
		files, err := dvw.Flush(ctx, loc)
		if err != nil {
			return fmt.Errorf("write deletion vectors %s: %w", loc, err)
		}
		res.AddDeletes = append(res.AddDeletes, files...)
	}
	return nil
}

type touchedFile struct {
	task    scan.Task
	touched *roaring64.Bitmap
}

// matchFile reads the match columns of one file's live rows and returns
// the positions the visitor touches (nil when none) and the number of live
// rows read. With filter (the request's: no row it rules out is touched)
// the row groups whose statistics rule it out are not read, so the count
// is of the rows of the others.
func matchFile(ctx context.Context, reader *scan.Reader, t scan.Task, v *Visitor, filter iceberg.BooleanExpression) (*roaring64.Bitmap, int64, error) {
	_, seq, err := reader.LiveWhere(ctx, t.File, t.Deletes, v.MatchColumns, filter)
	if err != nil {
		return nil, 0, err
	}
	var bm *roaring64.Bitmap
	var live int64
	for b, err := range seq {
		if err != nil {
			return nil, 0, err
		}
		live += int64(len(b.Pos))
		mask, err := v.Match(ctx, t.File, b)
		if err == nil && len(mask) != len(b.Pos) {
			err = fmt.Errorf("match returned %d flags for %d rows", len(mask), len(b.Pos))
		}
		if err != nil {
			b.Release()
			return nil, 0, err
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
	return bm, live, nil
}

// rewriteFile runs the second pass over one touched file: it yields the
// rows that stay (when keepRows), the rows Rewrite adds, and records the
// removed positions. With lw, the rows that stay keep their row lineage
// and the rows added get none (see rewriteLineage); schema is the data
// columns' Arrow schema.
func rewriteFile(ctx context.Context, reader *scan.Reader, tf touchedFile, v *Visitor, keepRows bool, schema *arrow.Schema, lw *lineageWrite,
	removed func(pos int64), added func(n int64), yield func(arrow.RecordBatch, error) bool) (bool, error) {
	var seq iter.Seq2[scan.Batch, error]
	var err error
	if lw != nil {
		_, seq, err = reader.LiveLineage(ctx, tf.task.File, lw.lin, tf.task.Deletes, nil)
	} else {
		_, seq, err = reader.Live(ctx, tf.task.File, tf.task.Deletes, nil)
	}
	if err != nil {
		return false, err
	}
	for b, err := range seq {
		if err != nil {
			return false, err
		}
		var withLineage arrow.RecordBatch // b.Rec, when it holds lineage
		if lw != nil {
			withLineage = b.Rec
			b.Rec = splitLineage(withLineage, schema)
		}
		more, err := rewriteBatch(ctx, tf, v, keepRows, b, withLineage, lw, removed, added, yield)
		if withLineage != nil {
			withLineage.Release()
		}
		if err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// rewriteBatch is rewriteFile for one batch b (data columns) of the file,
// read with its lineage columns as withLineage when lw is set. It takes b.
func rewriteBatch(ctx context.Context, tf touchedFile, v *Visitor, keepRows bool, b scan.Batch, withLineage arrow.RecordBatch, lw *lineageWrite,
	removed func(pos int64), added func(n int64), yield func(arrow.RecordBatch, error) bool) (bool, error) {
	var err error
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
	if keepRows && lw == nil && v.InPlace && add != nil && add.NumRows() > 0 && add.NumRows() == int64(countFalse(keep)) && sameTypes(b.Rec.Schema(), add.Schema()) {
		// Each added row in the place of the row it replaces.
		both, err := rows.Concat(b.Rec.Schema(), []arrow.RecordBatch{b.Rec, add})
		n := b.Rec.NumRows()
		b.Release()
		add.Release()
		if err != nil {
			return false, err
		}
		idx := make([]int64, len(keep))
		next := n
		for i, k := range keep {
			if k {
				idx[i] = int64(i)
			} else {
				idx[i], next = next, next+1
			}
		}
		out, err := rows.Take(ctx, both, idx)
		both.Release()
		if err != nil {
			return false, err
		}
		added(int64(countFalse(keep)))
		return yield(out, nil), nil
	}
	if keepRows {
		src := b.Rec
		if lw != nil {
			src = withLineage
		}
		kept, err := rows.Select(ctx, src, keep)
		if err != nil {
			b.Release()
			return false, err
		}
		if lw != nil {
			k, err := lw.kept(kept)
			kept.Release()
			if err != nil {
				b.Release()
				return false, err
			}
			kept = k
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
			if lw != nil {
				if add, err = lw.added(add); err != nil {
					return false, err
				}
			}
			if !yield(add, nil) {
				return false, nil
			}
		} else {
			add.Release()
		}
	}
	return true, nil
}

// WriteRows writes rows in the table's Arrow schema as data files of its
// current spec, without committing them: the inserts of a change, written
// once and reused by every commit attempt (Request.InsertFiles).
func WriteRows(ctx context.Context, tbl *table.Table, rows iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, error) {
	schema, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	files, err := writeData(ctx, tbl, schema, rows)
	if err != nil {
		if fs, ferr := tbl.FS(ctx); ferr == nil {
			Cleanup(fs, paths(files))
		}
		return nil, err
	}
	return files, nil
}

// ErrIncompleteWrite is returned when the data files written do not hold
// every row given: iceberg-go v0.7's partitioned writer can stop reading
// its input after a failed file create and end without reporting the
// error, which for a copy-on-write rewrite would drop the rows it did not
// write.
var ErrIncompleteWrite = errors.New("incomplete write")

// WriteData writes rows of schema as data files of the table's current
// spec, without committing them, checking that the files hold every row
// given (see writeData). The files written are returned even on error.
func WriteData(ctx context.Context, tbl *table.Table, schema *arrow.Schema, rows iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, error) {
	return writeData(ctx, tbl, schema, rows)
}

// writeData writes rows as data files of the table's current spec. The
// files written so far are returned even on error, for cleanup. It checks
// that the input was read to its end and that the files hold as many rows
// as it gave (ErrIncompleteWrite otherwise).
func writeData(ctx context.Context, tbl *table.Table, schema *arrow.Schema, stream iter.Seq2[arrow.RecordBatch, error]) ([]iceberg.DataFile, error) {
	return writeDataWith(ctx, tbl, schema, stream)
}

// writeDataWith is writeData with options for iceberg-go's writer.
func writeDataWith(ctx context.Context, tbl *table.Table, schema *arrow.Schema, stream iter.Seq2[arrow.RecordBatch, error], opts ...table.WriteRecordOption) ([]iceberg.DataFile, error) {
	var given atomic.Int64
	var ended atomic.Bool
	counted := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range stream {
			if err != nil {
				yield(nil, err)
				return
			}
			given.Add(rec.NumRows())
			if !yield(rec, nil) {
				return
			}
		}
		ended.Store(true)
	}
	name := scan.FormatIdent(tbl.Identifier())
	var files []iceberg.DataFile
	var written int64
	for df, err := range table.WriteRecords(ctx, tbl, schema, counted, opts...) {
		if err != nil {
			return files, fmt.Errorf("write data files of %s: %w", name, err)
		}
		files = append(files, df)
		written += df.Count()
	}
	if !ended.Load() || given.Load() != written {
		return files, fmt.Errorf("write data files of %s: %w: %d rows given, %d written (the writer stopped without an error); nothing was committed",
			name, ErrIncompleteWrite, given.Load(), written)
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
	res.written = append(res.written, paths(files)...)
	return err
}

// countFalse is the number of false values of b.
func countFalse(b []bool) int {
	n := 0
	for _, v := range b {
		if !v {
			n++
		}
	}
	return n
}

// sameTypes reports whether a and b have the same column types.
func sameTypes(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}
