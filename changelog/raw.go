package changelog

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// snapshotFiles are the files one snapshot added and removed.
type snapshotFiles struct {
	addedData, removedData       []*scan.Entry
	addedDeletes, removedDeletes []*scan.Entry
}

// filesOf reads the manifests a snapshot wrote and returns the entries it
// added or removed (EXISTING entries are ignored, as the reference does).
func filesOf(ctx context.Context, fs iceio.IO, s *table.Snapshot) (*snapshotFiles, error) {
	manifests, err := s.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: read manifest list %s: %w", s.SnapshotID, s.ManifestList, err)
	}
	out := &snapshotFiles{}
	for _, m := range manifests {
		if m.SnapshotID() != s.SnapshotID {
			continue
		}
		for e, err := range m.Entries(fs, false) {
			if err != nil {
				return nil, fmt.Errorf("snapshot %d: read manifest %s: %w", s.SnapshotID, m.FilePath(), err)
			}
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if e.SnapshotID() != s.SnapshotID {
				continue
			}
			ent := &scan.Entry{File: e.DataFile(), DataSeq: e.SequenceNum(), SnapshotID: e.SnapshotID()}
			data := e.DataFile().ContentType() == iceberg.EntryContentData
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				if data {
					out.addedData = append(out.addedData, ent)
				} else {
					out.addedDeletes = append(out.addedDeletes, ent)
				}
			case iceberg.EntryStatusDELETED:
				if data {
					out.removedData = append(out.removedData, ent)
				} else {
					out.removedDeletes = append(out.removedDeletes, ent)
				}
			}
		}
	}
	return out, nil
}

// hasDeleteFiles says whether a snapshot may hold delete files, from its
// summary when it has one.
func hasDeleteFiles(s *table.Snapshot) bool {
	if s == nil {
		return false
	}
	if s.Summary == nil || s.Summary.Properties == nil {
		return true
	}
	v, ok := s.Summary.Properties["total-delete-files"]
	if !ok {
		return true
	}
	n, err := strconv.Atoi(v)
	return err != nil || n > 0
}

// source produces the raw row changes (INSERT and DELETE) of snapshots.
type source struct {
	c      *Changelog
	fs     iceio.IO
	states map[string]*scan.State // by snapshot and partitions
	// keepCarryovers turns off the early cancelling of a rewrite's
	// identical DELETE/INSERT pairs (pairer): net changes must see every
	// carry-over, because the reference's net-change pass gives a surviving
	// row the ordinal of its last re-insertion, carry-overs included.
	keepCarryovers bool
}

// state returns the state of s restricted to the partitions parts (see
// scan.LoadStateIn): only the manifests that may list files of the
// partitions a snapshot's changes touch are read, so the cost follows the
// change rather than the table.
func (src *source) state(ctx context.Context, s *table.Snapshot, parts *scan.Partitions) (*scan.State, error) {
	if s == nil {
		return scan.LoadState(ctx, src.fs, src.c.tbl.Metadata(), nil)
	}
	key := fmt.Sprintf("%d|%s", s.SnapshotID, parts.Key())
	if st, ok := src.states[key]; ok {
		return st, nil
	}
	st, err := scan.LoadStateIn(ctx, src.fs, src.c.tbl.Metadata(), s, parts)
	if err != nil {
		return nil, err
	}
	// Keep the last two: a snapshot's state is the next one's parent state.
	if len(src.states) >= 2 {
		for k := range src.states {
			delete(src.states, k)
		}
	}
	src.states[key] = st
	return st, nil
}

// partitions returns the partitions of the files a snapshot adds and
// removes.
func (files *snapshotFiles) partitions(meta table.Metadata) *scan.Partitions {
	p := scan.NewPartitions(meta)
	for _, list := range [][]*scan.Entry{files.addedData, files.removedData, files.addedDeletes, files.removedDeletes} {
		for _, e := range list {
			p.Add(e.File)
		}
	}
	return p
}

// kinds reports which change types a snapshot may produce, before reading
// any row.
type kinds struct{ inserts, deletes bool }

// changes streams the raw row changes of snapshot s with its ordinal:
// rows of added data files minus the deletes that apply to them in s,
// rows of removed data files that were live before s, and rows of other
// files whose delete files s changed (deleted by a new position delete,
// deletion vector or equality delete; or revived by a removed one). Once
// the snapshot's files are known, and before any row is read, sink is
// told which change types the snapshot may produce and returns the
// function that takes each batch of changes.
func (src *source) changes(ctx context.Context, s *table.Snapshot, ordinal int, sink func(kinds) func(arrow.RecordBatch) error) (kinds, error) {
	meta := src.c.tbl.Metadata()
	files, err := filesOf(ctx, src.fs, s)
	if err != nil {
		return kinds{}, err
	}
	var parent *table.Snapshot
	if s.ParentSnapshotID != nil {
		parent = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	deleteChanges := len(files.addedDeletes) > 0 || len(files.removedDeletes) > 0
	parts := files.partitions(meta)
	var before, after *scan.State
	// The state before s is needed for the rows of files it removes and
	// for delete files it changes; the state after s for the deletes that
	// apply to the files it adds. Neither is read when no delete file is
	// involved: a snapshot's own manifests then say everything.
	needBefore := deleteChanges || (len(files.removedData) > 0 && hasDeleteFiles(parent))
	needAfter := deleteChanges || (len(files.addedData) > 0 && hasDeleteFiles(s))
	if needBefore {
		if parent == nil && s.ParentSnapshotID != nil {
			return kinds{}, fmt.Errorf("%w: %w: snapshot %d removes files but its parent %d has expired; its removed rows cannot be read",
				ErrInvalidRange, ErrRebuildNeeded, s.SnapshotID, *s.ParentSnapshotID)
		}
		if before, err = src.state(ctx, parent, parts); err != nil {
			return kinds{}, err
		}
	}
	if needAfter {
		if after, err = src.state(ctx, s, parts); err != nil {
			return kinds{}, err
		}
	}
	k := kinds{
		inserts: len(files.addedData) > 0 || len(files.removedDeletes) > 0,
		deletes: len(files.removedData) > 0 || len(files.addedDeletes) > 0,
	}
	emit := sink(k)
	r := src.c.reader
	mk := func(rec arrow.RecordBatch, kind string) error {
		out, err := src.c.meta.withMeta(rec, kind, ordinal, s.SnapshotID)
		if err != nil {
			return err
		}
		err = emit(out)
		return err
	}
	afterDeletes := func(e *scan.Entry) scan.Deletes {
		if after == nil {
			return scan.Deletes{}
		}
		return after.DeletesFor(e)
	}
	beforeDeletes := func(e *scan.Entry) scan.Deletes {
		if before != nil {
			if pe, ok := before.DataFile(e.Path()); ok {
				return before.DeletesFor(pe)
			}
		}
		return scan.Deletes{}
	}
	if len(files.addedData) > 0 && len(files.removedData) > 0 && !src.keepCarryovers {
		// A rewrite: pair identical rows of the removed and added files as
		// they are read (see pairer). The pairer sees data rows only; the
		// metadata columns are added to the rows it emits, so the rows that
		// cancel (almost all) never get them.
		live := func(entries []*scan.Entry, deletes func(*scan.Entry) scan.Deletes) iter.Seq2[arrow.RecordBatch, error] {
			return liveRows(ctx, r, entries, deletes)
		}
		parentState := func() (*scan.State, error) {
			if before == nil && parent != nil {
				st, err := src.state(ctx, parent, parts)
				if err != nil {
					return nil, err
				}
				before = st
			}
			return before, nil
		}
		done, err := src.lineageRewrite(ctx, s, files, parentState, beforeDeletes, afterDeletes, ordinal, emit)
		if err != nil || done {
			return k, err
		}
		// Both sides are decoded in parallel (prefetch); the pairer still
		// takes their batches in its fixed order.
		sideKind := [2]string{Delete, Insert}
		p := newPairer(ctx, src.c.dataCols, pairWindow(src.c.opts.MemoryBudget), func(side int, rec arrow.RecordBatch) error {
			out, err := src.c.meta.withMeta(rec, sideKind[side], ordinal, s.SnapshotID)
			rec.Release()
			if err != nil {
				return err
			}
			return emit(out)
		})
		removed, added := files.removedData, files.addedData
		var dels, ins iter.Seq2[arrow.RecordBatch, error]
		if useShared {
			// Files the rewrite kept columns of are read once for both
			// sides (sharedRewrite), the rest as before.
			pairs, restRemoved, restAdded, err := src.pairFiles(ctx, removed, added, beforeDeletes, afterDeletes)
			if err != nil {
				return k, err
			}
			if len(pairs) > 0 {
				sh := newSharedRewrite(ctx, r, pairs)
				defer sh.close()
				dels, ins = sh.side(0), sh.side(1)
				removed, added = restRemoved, restAdded
			}
		}
		rest := [2]iter.Seq2[arrow.RecordBatch, error]{prefetch(ctx, live(removed, beforeDeletes)), prefetch(ctx, live(added, afterDeletes))}
		if dels != nil {
			rest[0], rest[1] = concatSeq(dels, rest[0]), concatSeq(ins, rest[1])
		}
		if err := p.run(rest[0], rest[1]); err != nil {
			return k, err
		}
	} else {
		for _, e := range files.addedData {
			if err := src.emitLive(ctx, r, e.File, afterDeletes(e), Insert, mk); err != nil {
				return k, err
			}
		}
		for _, e := range files.removedData {
			if err := src.emitLive(ctx, r, e.File, beforeDeletes(e), Delete, mk); err != nil {
				return k, err
			}
		}
	}
	if !deleteChanges {
		return k, nil
	}
	if before == nil {
		if before, err = src.state(ctx, parent, parts); err != nil {
			return k, err
		}
	}
	if after == nil {
		if after, err = src.state(ctx, s, parts); err != nil {
			return k, err
		}
	}
	affected, err := src.affected(ctx, files, before, after)
	if err != nil {
		return k, err
	}
	for _, path := range affected {
		eb, okB := before.DataFile(path)
		ea, okA := after.DataFile(path)
		if !okB || !okA {
			continue // added or removed in s: handled above
		}
		db, da := before.DeletesFor(eb), after.DeletesFor(ea)
		if db.Key() == da.Key() {
			continue
		}
		if err := src.emitDiff(ctx, r, ea.File, db, da, mk); err != nil {
			return k, err
		}
	}
	return k, nil
}

// affected lists the data files (live before and after s) that the delete
// files s added or removed may touch.
func (src *source) affected(ctx context.Context, files *snapshotFiles, before, after *scan.State) ([]string, error) {
	set := map[string]bool{}
	var out []string
	add := func(p string) {
		if !set[p] {
			set[p] = true
			out = append(out, p)
		}
	}
	for _, list := range [][]*scan.Entry{files.addedDeletes, files.removedDeletes} {
		for _, d := range list {
			df := d.File
			switch df.ContentType() {
			case iceberg.EntryContentPosDeletes:
				if ref := df.ReferencedDataFile(); ref != nil {
					add(*ref)
					continue
				}
				paths, err := src.c.reader.PositionDeletePaths(ctx, df)
				if err != nil {
					return nil, err
				}
				for _, p := range paths {
					add(p)
				}
			case iceberg.EntryContentEqDeletes:
				for _, st := range []*scan.State{before, after} {
					for _, e := range st.Data {
						if e.DataSeq < d.DataSeq && scan.SamePartitionOrGlobal(st, e, d) {
							add(e.Path())
						}
					}
				}
			}
		}
	}
	return out, nil
}

func (src *source) emitLive(ctx context.Context, r *scan.Reader, df iceberg.DataFile, d scan.Deletes, kind string, mk func(arrow.RecordBatch, string) error) error {
	_, seq, err := r.Live(ctx, df, d, nil)
	if err != nil {
		return err
	}
	for b, err := range seq {
		if err != nil {
			return err
		}
		err = mk(b.Rec, kind)
		b.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// pairWindow is the memory the pairer of a rewrite may hold: a quarter of
// the changelog's budget, the rest being the partitioner's.
func pairWindow(budget int64) int64 {
	if budget <= 0 {
		budget = rows.DefaultMemoryBudget
	}
	return budget / 4
}

// liveRows streams the live rows of the data files entries (with the
// delete files deletes gives for each), data columns only, in file order.
// The consumer takes each batch.
func liveRows(ctx context.Context, r *scan.Reader, entries []*scan.Entry, deletes func(*scan.Entry) scan.Deletes) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		open := func(_ int, e *scan.Entry) (iter.Seq2[scan.Batch, error], error) {
			_, seq, err := r.Live(ctx, e.File, deletes(e), nil)
			return seq, err
		}
		for b, err := range liveBatches(entries, open) {
			if !yield(b.Rec, err) || err != nil {
				return
			}
		}
	}
}

// fileBatch is a batch of the live rows of entries[file] (liveBatches).
type fileBatch struct {
	scan.Batch
	file int
}

// liveBatches streams the batches of the data files entries, in file
// order, each file read by open (typically scan.Reader.Live or
// LiveLineage with the deletes that apply to it); open returns a nil
// sequence to skip a file. The consumer takes each batch. The first error
// ends the stream.
func liveBatches(entries []*scan.Entry, open func(i int, e *scan.Entry) (iter.Seq2[scan.Batch, error], error)) iter.Seq2[fileBatch, error] {
	return func(yield func(fileBatch, error) bool) {
		for i, e := range entries {
			seq, err := open(i, e)
			if err != nil {
				yield(fileBatch{}, err)
				return
			}
			if seq == nil {
				continue
			}
			for b, err := range seq {
				if err != nil {
					yield(fileBatch{}, err)
					return
				}
				if !yield(fileBatch{b, i}, nil) {
					return
				}
			}
		}
	}
}

// emitDiff reads a data file once and emits the rows the delete sets db
// (before) and da (after) treat differently.
func (src *source) emitDiff(ctx context.Context, r *scan.Reader, df iceberg.DataFile, db, da scan.Deletes, mk func(arrow.RecordBatch, string) error) error {
	sb, err := r.LoadDeletes(ctx, df, db)
	if err != nil {
		return err
	}
	sa, err := r.LoadDeletes(ctx, df, da)
	if err != nil {
		return err
	}
	fr, err := r.Open(ctx, df, nil, sb, sa)
	if err != nil {
		return err
	}
	var buf []byte
	for b, err := range fr.Rows {
		if err != nil {
			return err
		}
		n := len(b.Pos)
		del := make([]bool, n)
		ins := make([]bool, n)
		anyDel, anyIns := false, false
		for i := 0; i < n; i++ {
			var gone, goneAfter bool
			gone, buf = sb.Deleted(b.Rec, fr.ColOf, i, b.Pos[i], buf)
			goneAfter, buf = sa.Deleted(b.Rec, fr.ColOf, i, b.Pos[i], buf)
			if !gone && goneAfter {
				del[i], anyDel = true, true
			} else if gone && !goneAfter {
				ins[i], anyIns = true, true
			}
		}
		trimmed := fr.Trim(b.Rec)
		b.Release()
		for _, x := range []struct {
			any  bool
			mask []bool
			kind string
		}{{anyDel, del, Delete}, {anyIns, ins, Insert}} {
			if !x.any {
				continue
			}
			sel, err := rows.Select(ctx, trimmed, x.mask)
			if err != nil {
				trimmed.Release()
				return err
			}
			err = mk(sel, x.kind)
			sel.Release()
			if err != nil {
				trimmed.Release()
				return err
			}
		}
		trimmed.Release()
	}
	return nil
}

// metaColumns appends the three metadata columns to batches of data rows
// of schema full. Within a snapshot the columns are constants, and most
// batches have the same length (the reader's batch size), so it builds
// each constant array once per (column, value, length) and gives every
// batch that needs it a reference to the same array, instead of
// materialising the three columns per batch. It keeps the arrays of the
// last few (value, length) pairs: lengths that come and go (the last
// batch of a file, selected rows) only cost a rebuild. Safe for
// concurrent use.
type metaColumns struct {
	full *arrow.Schema

	mu     sync.Mutex
	arrays map[metaKey]arrow.Array
}

type metaKey struct {
	col int // 0: _change_type, 1: _change_ordinal, 2: _commit_snapshot_id
	s   string
	i   int64
	n   int
}

// maxMetaArrays bounds the arrays a metaColumns keeps: with 64k-row
// batches the three columns of one (kind, snapshot) take about 1.6 MiB.
const maxMetaArrays = 12

func newMetaColumns(full *arrow.Schema) *metaColumns {
	return &metaColumns{full: full, arrays: map[metaKey]arrow.Array{}}
}

// withMeta returns rec with the metadata columns of kind, ordinal and
// snapshotID appended. It does not take rec.
func (m *metaColumns) withMeta(rec arrow.RecordBatch, kind string, ordinal int, snapshotID int64) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	ct, err := m.constant(metaKey{col: 0, s: kind, n: n}, arrow.BinaryTypes.String, kind)
	if err != nil {
		return nil, err
	}
	defer ct.Release()
	co, err := m.constant(metaKey{col: 1, i: int64(ordinal), n: n}, arrow.PrimitiveTypes.Int32, int32(ordinal))
	if err != nil {
		return nil, err
	}
	defer co.Release()
	cs, err := m.constant(metaKey{col: 2, i: snapshotID, n: n}, arrow.PrimitiveTypes.Int64, snapshotID)
	if err != nil {
		return nil, err
	}
	defer cs.Release()
	cols := append(append([]arrow.Array{}, rec.Columns()...), ct, co, cs)
	return array.NewRecordBatch(m.full, cols, int64(n)), nil
}

// constant returns (a new reference to) the array of k.n copies of v.
func (m *metaColumns) constant(k metaKey, dt arrow.DataType, v any) (arrow.Array, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.arrays[k]; ok {
		a.Retain()
		return a, nil
	}
	a, err := rows.ConstantArray(dt, v, k.n)
	if err != nil {
		return nil, fmt.Errorf("changelog: metadata column %s: %w", m.full.Field(m.full.NumFields()-3+k.col).Name, err)
	}
	if len(m.arrays) >= maxMetaArrays {
		for key, old := range m.arrays {
			old.Release()
			delete(m.arrays, key)
		}
	}
	m.arrays[k] = a
	a.Retain()
	return a, nil
}

// release drops the kept arrays.
func (m *metaColumns) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, a := range m.arrays {
		a.Release()
		delete(m.arrays, key)
	}
}
