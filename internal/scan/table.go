package scan

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/safe"
)

// ErrSnapshotNotFound is wrapped when a snapshot, ref or point in time
// does not resolve to a snapshot of the table.
var ErrSnapshotNotFound = errors.New("snapshot not found")

// At selects a table state. At most one field may be set; the zero value is
// the current snapshot of the main branch.
type At struct {
	SnapshotID *int64
	Ref        string // a branch or tag name
	AsOfMs     *int64 // the snapshot of main that was current at this time (epoch ms)
}

// Resolve returns the snapshot that at selects, or nil when the table has
// no snapshot at that point (an empty table, or a time before its first
// snapshot).
func (at At) Resolve(tbl *table.Table) (*table.Snapshot, error) {
	name := FormatIdent(tbl.Identifier())
	n := 0
	if at.SnapshotID != nil {
		n++
	}
	if at.Ref != "" {
		n++
	}
	if at.AsOfMs != nil {
		n++
	}
	if n > 1 {
		return nil, fmt.Errorf("choose one of a snapshot id, a ref and a timestamp")
	}
	meta := tbl.Metadata()
	switch {
	case at.SnapshotID != nil:
		s := meta.SnapshotByID(*at.SnapshotID)
		if s == nil {
			return nil, fmt.Errorf("%w: table %s has no snapshot %d (never existed or expired)", ErrSnapshotNotFound, name, *at.SnapshotID)
		}
		return s, nil
	case at.Ref != "":
		if _, ok := refOf(meta, at.Ref); !ok {
			return nil, fmt.Errorf("%w: table %s has no branch or tag %q", ErrSnapshotNotFound, name, at.Ref)
		}
		return meta.SnapshotByName(at.Ref), nil
	case at.AsOfMs != nil:
		s := tbl.SnapshotAsOf(*at.AsOfMs, true)
		if s == nil {
			return nil, fmt.Errorf("%w: table %s has no snapshot at or before %s", ErrSnapshotNotFound, name,
				time.UnixMilli(*at.AsOfMs).UTC().Format(time.RFC3339Nano))
		}
		return s, nil
	}
	return meta.CurrentSnapshot(), nil
}

func refOf(meta table.Metadata, name string) (table.SnapshotRef, bool) {
	for n, r := range meta.Refs() {
		if n == name {
			return r, true
		}
	}
	return table.SnapshotRef{}, false
}

// Options configure Rows.
type Options struct {
	At      At
	Columns []string // projection; nil = all columns
	// Filter prunes files by partition values and column statistics. It
	// must be conservative (never rule out a file holding a matching row).
	Filter iceberg.BooleanExpression
	// RowFilter keeps the rows of a batch that match exactly. It sees the
	// projected columns plus FilterColumns.
	RowFilter     func(context.Context, arrow.RecordBatch) (arrow.RecordBatch, error)
	FilterColumns []string
	Limit         int64 // 0 = no limit
	Concurrency   int   // files read at once; 0 = 4
}

// Task is a data file to read with the delete files that apply to it.
type Task struct {
	File    iceberg.DataFile
	Deletes Deletes
	// DataSeq is the data sequence number of the file's manifest entry,
	// when the plan knows it (row lineage needs it: see Lineage).
	DataSeq *int64
}

// Plan lists the data files of snap that may hold rows matching filter,
// with all their delete files: one task per data file, however large.
// With a ManifestCache in ctx (a transform build), it plans from the
// cached manifests (see planCached).
func Plan(ctx context.Context, tbl *table.Table, snap *table.Snapshot, filter iceberg.BooleanExpression) ([]Task, error) {
	if snap == nil {
		return nil, nil
	}
	if manifestCacheOf(ctx) != nil {
		if tasks, ok, err := planCached(ctx, tbl, snap, filter); ok || err != nil {
			return tasks, err
		}
	}
	opts := []table.ScanOption{table.WithSnapshotID(snap.SnapshotID)}
	if filter != nil {
		opts = append(opts, table.WithRowFilter(filter))
	}
	fts, err := tbl.Scan(opts...).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan scan of %s at snapshot %d: %w", FormatIdent(tbl.Identifier()), snap.SnapshotID, err)
	}
	if filter != nil && mayHaveEqualityDeletes(snap) {
		// NB: iceberg-go prunes equality delete files by the filter too:
		// right for the rows that match it, wrong for the others, which a
		// copy-on-write rewrite keeps; with a delete file pruned they came
		// back. The data files are the filter's; their delete files come
		// from a plan without it.
		all, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
		if err != nil {
			return nil, fmt.Errorf("plan scan of %s at snapshot %d: %w", FormatIdent(tbl.Identifier()), snap.SnapshotID, err)
		}
		byPath := make(map[string]table.FileScanTask, len(all))
		for _, t := range all {
			byPath[t.File.FilePath()] = t
		}
		for i, t := range fts {
			full, ok := byPath[t.File.FilePath()]
			if !ok {
				return nil, fmt.Errorf("plan scan of %s at snapshot %d: data file %s is in the filtered plan only", FormatIdent(tbl.Identifier()), snap.SnapshotID, t.File.FilePath())
			}
			fts[i].DeleteFiles, fts[i].EqualityDeleteFiles, fts[i].DeletionVectorFiles = full.DeleteFiles, full.EqualityDeleteFiles, full.DeletionVectorFiles
		}
	}
	out := make([]Task, 0, len(fts))
	seen := make(map[string]bool, len(fts))
	for _, t := range fts {
		// NB: iceberg-go splits a Parquet file larger than
		// read.split.target-size (128 MiB by default) into one task per
		// byte range, each with the same delete files. floe reads whole
		// files, so a file is one task; a task per range would read every
		// row once per range.
		if seen[t.File.FilePath()] {
			continue
		}
		seen[t.File.FilePath()] = true
		d := Deletes{Pos: t.DeleteFiles, Eq: t.EqualityDeleteFiles}
		if len(t.DeletionVectorFiles) > 1 {
			return nil, fmt.Errorf("%w: data file %s has %d deletion vectors; the spec allows one", ErrInvalidDeleteFile, t.File.FilePath(), len(t.DeletionVectorFiles))
		}
		if len(t.DeletionVectorFiles) == 1 {
			d.DV = t.DeletionVectorFiles[0]
		}
		out = append(out, Task{File: t.File, Deletes: d, DataSeq: t.DataSequenceNumber})
	}
	return out, nil
}

// mayHaveEqualityDeletes reports whether equality delete files may apply
// in snap: unless its summary says there are none.
func mayHaveEqualityDeletes(snap *table.Snapshot) bool {
	if snap.Summary == nil {
		return true
	}
	n, ok := snap.Summary.Properties["total-equality-deletes"]
	return !ok || n != "0"
}

// Rows streams the live rows of a table state: deletes applied, identity
// partition columns filled, filters applied, projected to opts.Columns.
func Rows(ctx context.Context, tbl *table.Table, opts Options) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	snap, err := opts.At.Resolve(tbl)
	if err != nil {
		return nil, nil, err
	}
	var sid *int64
	if snap != nil && (opts.At.SnapshotID != nil || opts.At.AsOfMs != nil) {
		// Time travel reads with the schema of the snapshot, as Spark does;
		// branch heads read with the table's current schema.
		sid = &snap.SnapshotID
	}
	r, err := NewReader(ctx, tbl, sid)
	if err != nil {
		return nil, nil, err
	}
	outSchema, _, err := r.ArrowSchema(opts.Columns)
	if err != nil {
		return nil, nil, fmt.Errorf("table %s: %w", FormatIdent(tbl.Identifier()), err)
	}
	readCols := opts.Columns
	if readCols != nil && len(opts.FilterColumns) > 0 {
		seen := map[string]bool{}
		readCols = nil
		for _, c := range append(append([]string{}, opts.Columns...), opts.FilterColumns...) {
			if !seen[c] {
				seen[c] = true
				readCols = append(readCols, c)
			}
		}
	}
	tasks, err := Plan(ctx, tbl, snap, opts.Filter)
	if err != nil {
		return nil, nil, err
	}
	nOut := outSchema.NumFields()
	trim := func(rec arrow.RecordBatch) arrow.RecordBatch {
		if int(rec.NumCols()) == nOut {
			rec.Retain()
			return rec
		}
		idx := make([]int, nOut)
		for i := range idx {
			idx[i] = i
		}
		return rows.Project(rec, outSchema, idx)
	}
	readTask := func(ctx context.Context, t Task, emit func(arrow.RecordBatch) bool) (err error) {
		// NB: this runs in a goroutine of ordered's, where a panic (a
		// decoder's, on a damaged file) would end the process.
		defer r.RecoverRead(&err, t.File)
		_, seq, err := r.Live(ctx, t.File, t.Deletes, readCols)
		if err != nil {
			return err
		}
		for b, err := range seq {
			if err != nil {
				return err
			}
			rec := b.Rec
			if opts.RowFilter != nil {
				f, err := opts.RowFilter(ctx, rec)
				rec.Release()
				if err != nil {
					return fmt.Errorf("filter rows of %s: %w", t.File.FilePath(), err)
				}
				rec = f
			}
			out := trim(rec)
			rec.Release()
			if out.NumRows() == 0 {
				out.Release()
				continue
			}
			if !emit(out) {
				return nil
			}
		}
		return nil
	}
	conc := opts.Concurrency
	if conc <= 0 {
		conc = 4
	}
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		remaining := opts.Limit
		for rec, err := range ordered(ctx, conc, tasks, readTask) {
			if err != nil {
				yield(nil, err)
				return
			}
			if opts.Limit > 0 {
				if remaining <= 0 {
					rec.Release()
					return
				}
				if rec.NumRows() > remaining {
					s := rec.NewSlice(0, remaining)
					rec.Release()
					rec = s
				}
				remaining -= rec.NumRows()
			}
			if !yield(rec, nil) {
				return
			}
			if opts.Limit > 0 && remaining <= 0 {
				return
			}
		}
	}
	return outSchema, seq, nil
}

// orderedAhead is how many batches a task that is not yet being consumed
// may read ahead (per task, up to Concurrency tasks at once).
const orderedAhead = 4

// ordered runs read over tasks with up to conc at once and yields their
// batches in task order. The task being consumed streams; a task read
// ahead of its turn blocks after orderedAhead batches, so memory stays at
// about conc*(orderedAhead+1) batches however large the files are.
func ordered[T any](ctx context.Context, conc int, tasks []T, read func(context.Context, T, func(arrow.RecordBatch) bool) error) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		if len(tasks) == 0 {
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		type item struct {
			rec arrow.RecordBatch
			err error
		}
		chans := make([]chan item, len(tasks))
		for i := range chans {
			chans[i] = make(chan item, orderedAhead)
		}
		// NB: a slot is taken when a task starts and given back when the
		// consumer has taken its last batch, not when its reader returns:
		// a slot per finished-but-unconsumed task would let every task
		// read its whole file into its channel's backlog otherwise.
		sem := make(chan struct{}, conc)
		var workers sync.WaitGroup
		launched := make(chan int, 1) // tasks started, when the launcher ends
		go func() {
			n := 0
			defer func() { launched <- n }()
			defer safe.Recover(func(err error) { safe.Send(ctx, chans[n%len(chans)], item{err: err}) }) // task n is the next the consumer reads (n < len(chans) inside the loop)
			for i, t := range tasks {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				if ctx.Err() != nil {
					return
				}
				n++
				workers.Add(1)
				go func(ch chan item, t T) {
					defer workers.Done()
					defer close(ch)
					defer safe.Recover(func(err error) { safe.Send(ctx, ch, item{err: err}) })
					err := read(ctx, t, func(r arrow.RecordBatch) bool {
						select {
						case ch <- item{rec: r}:
							return true
						case <-ctx.Done():
							r.Release()
							return false
						}
					})
					if err != nil {
						select {
						case ch <- item{err: err}:
						case <-ctx.Done():
						}
					}
				}(chans[i], t)
			}
		}()
		defer func() {
			cancel()
			// Release what workers produced after we stopped, once they
			// have all returned.
			go func() {
				defer safe.Recover(nil)
				n := <-launched
				workers.Wait()
				for _, ch := range chans[:n] {
					for it := range ch {
						if it.rec != nil {
							it.rec.Release()
						}
					}
				}
			}()
		}()
		for i := range tasks {
			for it := range chans[i] {
				if it.err != nil {
					yield(nil, it.err)
					return
				}
				if !yield(it.rec, nil) {
					return
				}
			}
			if ctx.Err() != nil {
				// The channel was closed by a worker that stopped early.
				yield(nil, ctx.Err())
				return
			}
			<-sem
		}
	}
}
