package merge

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// writeUpserts reduces the change set to one action per key and writes the
// upserted rows as data files of tbl, counting the actions in res. It
// returns the keys that have an action and a function that waits for the
// files written (returned also on error, for cleanup).
//
// A change set held in memory whole is reduced at once, and its upserted
// rows, taken from the change batches, are written in the background: the
// deletes and the match pass need only the keys. A spilled one is reduced
// a partition at a time as the writer asks for rows, each partition's
// upserted rows handed to the writer and its action keys gathered in a
// keyStore, so it is written before writeUpserts returns.
func (cs *changeSet) writeUpserts(ctx context.Context, tbl *table.Table, res *Result) (actionKeys, func() ([]iceberg.DataFile, error), error) {
	done := func(files []iceberg.DataFile, err error) func() ([]iceberg.DataFile, error) {
		return func() ([]iceberg.DataFile, error) { return files, err }
	}
	if !cs.part.Spilled() {
		var recs []arrow.RecordBatch
		for p, err := range cs.part.Partitions() {
			if err != nil {
				return nil, done(nil, nil), err
			}
			recs = append(recs, p...)
		}
		acts, err := cs.reduce(recs)
		if err != nil {
			releaseAll(recs)
			return nil, done(nil, nil), err
		}
		keys := &memKeys{cs: cs, recs: recs, acts: acts, budget: cs.o.budget() / 2}
		res.Upserts, res.Deletes = acts.upserts, acts.deletes
		if acts.upserts == 0 {
			return keys, done(nil, nil), nil
		}
		var files []iceberg.DataFile
		var werr error
		wrote := make(chan struct{})
		go func() {
			defer close(wrote)
			files, werr = write.WriteRows(ctx, tbl, cs.upsertRows(ctx, recs, acts))
		}()
		return keys, func() ([]iceberg.DataFile, error) {
			<-wrote
			return files, werr
		}, nil
	}
	fields := make([]arrow.Field, len(cs.keyCols))
	for k, c := range cs.keyCols {
		fields[k] = cs.schema.Field(c)
	}
	ks := newKeyStore(arrow.NewSchema(fields, nil), cs.keyNames, cs.strict.actionKeyBudget(cs.o.budget()/2), cs.o.TempDir)
	seq := func(yield func(arrow.RecordBatch, error) bool) {
		for recs, err := range cs.part.Partitions() {
			if err != nil {
				yield(nil, err)
				return
			}
			ok, err := cs.reducePartition(ctx, recs, ks, res, yield)
			releaseAll(recs)
			if err != nil {
				yield(nil, err)
				return
			}
			if !ok {
				return
			}
		}
	}
	files, err := write.WriteRows(ctx, tbl, seq)
	res.Spilled = cs.part.SpilledBytes() + ks.spilledBytes()
	if testHookSpill != nil {
		testHookSpill(res.Spilled, cs.part.Repartitioned(), ks.groupCount())
	}
	if err != nil {
		ks.release()
		return nil, done(files, nil), err
	}
	return ks, done(files, nil), nil
}

// reducePartition reduces one partition of a spilled change set: its
// action keys go to ks, its upserted rows to yield. It reports false when
// yield stopped.
func (cs *changeSet) reducePartition(ctx context.Context, recs []arrow.RecordBatch, ks *keyStore, res *Result, yield func(arrow.RecordBatch, error) bool) (bool, error) {
	acts, err := cs.reduce(recs)
	if err != nil {
		return false, err
	}
	defer acts.release()
	res.Upserts += acts.upserts
	res.Deletes += acts.deletes
	keys := make([][]int64, len(recs))
	ups := make([][]int64, len(recs))
	for a := range acts.all {
		keys[a.b] = append(keys[a.b], int64(a.i))
		if a.upsert {
			ups[a.b] = append(ups[a.b], int64(a.i))
		}
	}
	for b, idx := range keys {
		if len(idx) == 0 {
			continue
		}
		slices.Sort(idx)
		k := keyColumns(recs[b], cs.keyCols)
		t, err := rows.Take(ctx, k, idx)
		k.Release()
		if err != nil {
			return false, err
		}
		err = ks.add(t)
		t.Release()
		if err != nil {
			return false, err
		}
	}
	for b, idx := range ups {
		if len(idx) == 0 {
			continue
		}
		slices.Sort(idx)
		p, err := cs.takeTableRows(ctx, recs[b], idx)
		if err != nil {
			return false, err
		}
		if !yield(p, nil) {
			return false, nil
		}
	}
	return true, nil
}

// upsertRows yields the rows of upsert actions in the table's schema.
func (cs *changeSet) upsertRows(ctx context.Context, recs []arrow.RecordBatch, acts *actionSet) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		idx := make([][]int64, len(recs))
		for a := range acts.all {
			if a.upsert {
				idx[a.b] = append(idx[a.b], int64(a.i))
			}
		}
		for b, rec := range recs {
			ids := idx[b]
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			p, err := cs.takeTableRows(ctx, rec, ids)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(p, nil) {
				return
			}
		}
	}
}

// takeTableRows returns the rows ids (ascending, distinct) of a change set
// batch, in the table's schema: the table columns only are copied (not the
// change type, sequence and ordinal columns), and rows that are one
// contiguous range (a batch of inserts) are a zero-copy slice.
func (cs *changeSet) takeTableRows(ctx context.Context, rec arrow.RecordBatch, ids []int64) (arrow.RecordBatch, error) {
	p := rows.Project(rec, cs.tableSch, seqInts(cs.nTable))
	defer p.Release()
	if lo, hi := ids[0], ids[len(ids)-1]; hi-lo == int64(len(ids)-1) {
		return p.NewSlice(lo, hi+1), nil
	}
	return rows.Take(ctx, p, ids)
}

// tableMatch finds the table rows of the action keys for write.Visitor's
// Match: with one matcher (the keys fit the budget) as the rows are
// read; with several, by reading the key columns of the candidate files
// once per group before write.Prepare does, noting the positions of the
// rows found.
type tableMatch struct {
	m    keyMatcher
	pre  map[string]*roaring64.Bitmap // several groups: data file path -> positions found
	nPre int64
	mu   sync.Mutex
}

func (t *tableMatch) found() int64 {
	if t.m != nil {
		return t.m.found()
	}
	return t.nPre
}

func (t *tableMatch) match(_ context.Context, f iceberg.DataFile, b scan.Batch) ([]bool, error) {
	out := make([]bool, len(b.Pos))
	if t.m != nil {
		t.m.mark(b.Rec, out)
		return out, nil
	}
	t.mu.Lock()
	bm := t.pre[f.FilePath()]
	t.mu.Unlock()
	if bm == nil {
		return out, nil
	}
	for i, p := range b.Pos {
		out[i] = bm.Contains(uint64(p))
	}
	return out, nil
}

// matchTable returns how this attempt finds the rows of the keys acts in
// tbl (last: the previous attempt's).
func (cs *changeSet) matchTable(ctx context.Context, tbl *table.Table, branch string, filter iceberg.BooleanExpression, acts actionKeys, last *tableMatch) (*tableMatch, error) {
	if m := acts.matcher(); m != nil {
		if last != nil {
			return last, nil // the keys found by earlier attempts stay found
		}
		return &tableMatch{m: m}, nil
	}
	base, err := write.BranchHead(tbl, branch)
	if err != nil {
		return nil, err
	}
	t := &tableMatch{pre: map[string]*roaring64.Bitmap{}}
	if base == nil {
		return t, nil
	}
	tasks, err := scan.Plan(ctx, tbl, base, filter)
	if err != nil {
		return nil, err
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return nil, err
	}
	for m, err := range acts.groups(ctx) {
		if err != nil {
			return nil, err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(2)
		for _, task := range tasks {
			g.Go(func() error {
				_, seq, err := reader.Live(gctx, task.File, task.Deletes, cs.keyNames)
				if err != nil {
					return fmt.Errorf("%s: %w", task.File.FilePath(), err)
				}
				var found []uint64
				for b, err := range seq {
					if err != nil {
						return fmt.Errorf("%s: %w", task.File.FilePath(), err)
					}
					out := make([]bool, len(b.Pos))
					m.mark(b.Rec, out)
					for i, hit := range out {
						if hit {
							found = append(found, uint64(b.Pos[i]))
						}
					}
					b.Release()
				}
				if len(found) == 0 {
					return nil
				}
				t.mu.Lock()
				defer t.mu.Unlock()
				bm := t.pre[task.File.FilePath()]
				if bm == nil {
					bm = roaring64.New()
					t.pre[task.File.FilePath()] = bm
				}
				bm.AddMany(found)
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		t.nPre += m.found()
	}
	return t, nil
}

// testHookSpill, set by tests only, is told how much a spilled change set
// of Apply wrote to disk, how many of its partitions were split again, and
// in how many groups its keys were matched (or a MERGE source's rows, the
// second number 0).
var testHookSpill func(spilled, repartitioned int64, groups int)
