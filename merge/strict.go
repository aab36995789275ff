package merge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// ErrInsertExists is wrapped (with ErrCardinality) when, with
// WithInsertsMustBeNew, a change adds a key that the table already holds or
// that an earlier change of the same batch added and none removed.
var ErrInsertExists = fmt.Errorf("%w: INSERT of a key that is already there", ErrCardinality)

// WithInsertsMustBeNew makes Apply refuse a change that adds a key the
// table already holds: for sources whose INSERT means "a new row" (a Delta
// table's Change Data Feed, which has no primary key: an insert of a key
// still in the table leaves two rows with it there, and an upsert would
// silently keep one). A key adds a row when its first change, in sequence
// order (ties UPDATE_BEFORE < DELETE < UPDATE_AFTER < INSERT, as Apply
// collapses them), is an INSERT, or, with a sequence column, an
// UPDATE_AFTER that no UPDATE_BEFORE of the key precedes (an update that
// changed the key); such a key must not match a live row of the table.
// With a sequence column, an INSERT or UPDATE_AFTER that follows another
// one of the key with no DELETE or UPDATE_BEFORE between them is refused
// too. Both fail with ErrInsertExists (and ErrCardinality), naming the
// key, and nothing is committed.
//
// The keys the changes add are matched against the table's rows as Apply
// finds the rows it changes (position and copy-on-write modes), or, in
// equality-delete mode or when they do not fit their share of the memory
// budget, by reading the key columns of the table's files that may hold
// them, once per group of keys. Under a memory budget the changes of a key
// spill uncombined (every change, not only the one that wins, is needed to
// find a key added twice), and the keys the changes add take half of the
// memory the keys Apply changes have otherwise.
func WithInsertsMustBeNew() Option { return func(o *Options) { o.InsertsMustBeNew = true } }

// strictKeys gathers, as the change set is reduced partition by partition
// (every change of a key in one partition), the keys whose changes add
// them, and checks them against the table. A nil *strictKeys checks
// nothing.
type strictKeys struct {
	cs    *changeSet
	fresh *keyStore // the keys added, the key columns in key order
	// With a sequence column, the sequence value of each key's adding
	// change, for the message: rows of the key columns and the value, in
	// memory while the change set is, else in a spill file.
	seqSchema *arrow.Schema
	seqs      []arrow.RecordBatch
	seqFile   *rows.SpillFile
	seqMu     sync.Mutex // seqOf runs in the visitor's goroutines
}

func newStrictKeys(cs *changeSet) *strictKeys {
	fields := make([]arrow.Field, len(cs.keyCols))
	for k, c := range cs.keyCols {
		fields[k] = cs.schema.Field(c)
	}
	sk := &strictKeys{cs: cs, fresh: newKeyStore(arrow.NewSchema(fields, nil), cs.keyNames, cs.o.budget()/4, cs.o.TempDir)}
	if cs.seqCol >= 0 {
		sk.seqSchema = arrow.NewSchema(append(fields, cs.schema.Field(cs.seqCol)), nil)
	}
	return sk
}

func (sk *strictKeys) release() {
	if sk == nil {
		return
	}
	sk.fresh.release()
	releaseAll(sk.seqs)
	sk.seqs = nil
	if sk.seqFile != nil {
		sk.seqFile.Remove()
		sk.seqFile = nil
	}
}

// actionKeyBudget is the memory of the keys Apply changes in a spilled
// change set (def without WithInsertsMustBeNew): the keys added take half.
func (sk *strictKeys) actionKeyBudget(def int64) int64 {
	if sk == nil {
		return def
	}
	return def / 2
}

// add finds the keys of acts whose first change adds them, among recs
// (every row of their keys, as reduce is given them), and fails when a
// key is added twice without a removal between.
func (sk *strictKeys) add(recs []arrow.RecordBatch, acts *actionSet) error {
	if sk == nil {
		return nil
	}
	cs := sk.cs
	type ev struct {
		slot     int32
		kind     int8
		b, i     int32
		seq, ord int64
	}
	var evs []ev
	var slots []int32
	var hashes []uint64
	for b, rec := range recs {
		kc := keyColumns(rec, cs.keyCols)
		slots, hashes = acts.lookup(kc, slots, hashes)
		kc.Release()
		// NB: without a sequence column the change set holds no
		// UPDATE_BEFORE rows (collect leaves them out).
		kinds, ords, seqs := cs.kinds(rec), cs.ords(rec), cs.seqs(rec)
		for i, s := range slots {
			if s < 0 {
				continue
			}
			e := ev{slot: s, kind: kinds[i], b: int32(b), i: int32(i), ord: ords[i]}
			if seqs != nil {
				e.seq = seqs[i]
			}
			evs = append(evs, e)
		}
	}
	slices.SortFunc(evs, func(a, b ev) int {
		return cmp.Or(cmp.Compare(a.slot, b.slot), cmp.Compare(a.seq, b.seq), cmp.Compare(a.kind, b.kind), cmp.Compare(a.ord, b.ord))
	})
	adds := func(k int8) bool {
		return k == kindInsert || cs.seqCol >= 0 && k == kindUpdateAfter
	}
	added := make([][]int64, len(recs)) // by batch, the rows of the adding changes
	for j := 0; j < len(evs); {
		k := j
		for ; k < len(evs) && evs[k].slot == evs[j].slot; k++ {
			e := evs[k]
			switch {
			case !adds(e.kind):
			case k == j:
				added[e.b] = append(added[e.b], int64(e.i))
			case adds(evs[k-1].kind):
				p := evs[k-1]
				return fmt.Errorf("%w: the key (%s) is added by %s at %s %d after %s at %d, with no DELETE or UPDATE_BEFORE between: the source would hold two rows with that key; nothing was committed",
					ErrInsertExists, rows.FormatKey(recs[e.b], cs.keyCols, int(e.i)), kindNames[e.kind], cs.o.SequenceColumn, e.seq, kindNames[p.kind], p.seq)
			}
		}
		j = k
	}
	ctx := context.Background()
	cols := cs.keyCols
	if cs.seqCol >= 0 {
		cols = append(slices.Clone(cols), cs.seqCol)
	}
	keyCols := seqInts(len(cs.keyCols))
	for b, idx := range added {
		if len(idx) == 0 {
			continue
		}
		slices.Sort(idx)
		kc := keyColumns(recs[b], cols)
		t, err := rows.Take(ctx, kc, idx)
		kc.Release()
		if err != nil {
			return err
		}
		keys := rows.Project(t, sk.fresh.schema, keyCols)
		err = sk.fresh.add(keys)
		keys.Release()
		if err == nil && sk.seqSchema != nil {
			err = sk.addSeqs(t)
		}
		t.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// addSeqs keeps rows of the key columns and the sequence value (the
// caller keeps its reference).
func (sk *strictKeys) addSeqs(rec arrow.RecordBatch) error {
	if sk.seqFile == nil && !sk.cs.part.Spilled() {
		rec.Retain()
		sk.seqs = append(sk.seqs, rec)
		return nil
	}
	if sk.seqFile == nil {
		f, err := rows.CreateSpillFile(sk.cs.o.TempDir, sk.seqSchema)
		if err != nil {
			return err
		}
		sk.seqFile = f
	}
	return sk.seqFile.Write(rec)
}

// seqOf returns the sequence value of the change that adds the key of row
// i of rec (the key columns in key order).
func (sk *strictKeys) seqOf(rec arrow.RecordBatch, i int) (int64, bool) {
	sk.seqMu.Lock()
	defer sk.seqMu.Unlock()
	keyCols := seqInts(len(sk.cs.keyCols))
	find := func(r arrow.RecordBatch) (int64, bool) {
		for j := range int(r.NumRows()) {
			if rows.KeysEqual(r, j, rec, i, keyCols) {
				return seqValue(r.Column(len(keyCols)), j), true
			}
		}
		return 0, false
	}
	for _, r := range sk.seqs {
		if v, ok := find(r); ok {
			return v, true
		}
	}
	if sk.seqFile == nil {
		return 0, false
	}
	var v int64
	found := false
	_ = sk.seqFile.Each(func(r arrow.RecordBatch) error {
		if v, found = find(r); found {
			return errStop
		}
		return nil
	})
	return v, found
}

// exists is the error for row i of rec, a table row (the key columns in
// key order) whose key the changes add.
func (sk *strictKeys) exists(rec arrow.RecordBatch, i int) error {
	at := ""
	if sk.seqSchema != nil {
		if v, ok := sk.seqOf(rec, i); ok {
			at = fmt.Sprintf(" at %s %d", sk.cs.o.SequenceColumn, v)
		}
	}
	return fmt.Errorf("%w: the changes add the key (%s)%s, and the table already holds a row with it: the source would hold two rows with that key; nothing was committed",
		ErrInsertExists, rows.FormatKey(rec, seqInts(int(rec.NumCols())), i), at)
}

// match wraps Apply's write.Visitor Match (in position and copy-on-write
// modes, over every live row of the candidate files) so that it fails on
// a row whose key the changes add, when those keys are matched in one
// group; checkTable does it otherwise. (write.Prepare names the file.)
func (sk *strictKeys) match(inner func(context.Context, iceberg.DataFile, scan.Batch) ([]bool, error)) func(context.Context, iceberg.DataFile, scan.Batch) ([]bool, error) {
	if sk == nil || sk.fresh.count() == 0 {
		return inner
	}
	m := sk.fresh.matcher()
	if m == nil {
		return inner
	}
	return func(ctx context.Context, f iceberg.DataFile, b scan.Batch) ([]bool, error) {
		out, err := inner(ctx, f, b)
		if err != nil {
			return nil, err
		}
		hit := make([]bool, len(b.Pos))
		m.mark(b.Rec, hit)
		if i := slices.Index(hit, true); i >= 0 {
			return nil, sk.exists(b.Rec, i)
		}
		return out, nil
	}
}

// checkTable fails when tbl (on branch) holds a live row with a key the
// changes add, unless match finds them (visited: Apply's visitor reads
// every candidate row, and the keys are in one group). It reads the key
// columns of the files that may hold them, once per group of keys, at
// every attempt: a concurrent writer may have added one.
func (sk *strictKeys) checkTable(ctx context.Context, tbl *table.Table, branch string, visited bool) error {
	if sk == nil || sk.fresh.count() == 0 {
		return nil
	}
	groups := 0
	defer func() {
		if testHookStrict != nil {
			testHookStrict(groups)
		}
	}()
	if visited && sk.fresh.matcher() != nil {
		groups = 1
		return nil
	}
	base, err := write.BranchHead(tbl, branch)
	if err != nil || base == nil {
		return err
	}
	tasks, err := scan.Plan(ctx, tbl, base, sk.fresh.filter(tbl.Schema()))
	if err != nil || len(tasks) == 0 {
		return err
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return err
	}
	for m, err := range sk.fresh.groups(ctx) {
		if err != nil {
			return err
		}
		groups++
		g, gctx := safe.WithContext(ctx)
		g.SetLimit(2)
		for _, task := range tasks {
			g.Go(func() (err error) {
				defer reader.RecoverRead(&err, task.File)
				err = sk.checkFile(gctx, reader, task, m)
				if err != nil && !errors.As(err, new(*scan.CorruptFileError)) {
					err = fmt.Errorf("%s: %w", task.File.FilePath(), err)
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	return nil
}

func (sk *strictKeys) checkFile(ctx context.Context, reader *scan.Reader, task scan.Task, m keyMatcher) error {
	_, seq, err := reader.Live(ctx, task.File, task.Deletes, sk.cs.keyNames)
	if err != nil {
		return err
	}
	for b, err := range seq {
		if err != nil {
			return err
		}
		hit := make([]bool, len(b.Pos))
		m.mark(b.Rec, hit)
		if i := slices.Index(hit, true); i >= 0 {
			err := sk.exists(b.Rec, i)
			b.Release()
			return err
		}
		b.Release()
	}
	return nil
}

// testHookStrict, set by tests only, is told in how many groups the keys
// the changes add were checked against the table (1 also when Apply's
// visitor matched them).
var testHookStrict func(groups int)
