package merge

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// pairRef is a batch of a pairs file: target rows touched by a WHEN
// MATCHED clause (their positions) with the source rows they matched.
type pairRef struct {
	file  *rows.BatchFile
	batch int
}

// pairsSchema is the schema of pairs files: the position, then the
// source's columns.
func pairsSchema(source *arrow.Schema) *arrow.Schema {
	return arrow.NewSchema(append([]arrow.Field{{Name: "pos", Type: arrow.PrimitiveTypes.Int64}}, source.Fields()...), nil)
}

// pairRows are a data file's touched rows matched by spilled source rows,
// read back for its rewrite.
type pairRows struct {
	src arrow.RecordBatch // the source rows (source schema)
	pos []int64           // ascending
	row []int32           // row of src for pos[k]
}

func readPairs(refs []pairRef, source *arrow.Schema) (*pairRows, error) {
	var recs []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	for _, r := range refs {
		rec, err := r.file.Read(r.batch)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	all, err := rows.Concat(pairsSchema(source), recs)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	pr := &pairRows{src: rows.Project(all, source, seqInts(source.NumFields() + 1)[1:])}
	positions := all.Column(0).(*array.Int64).Int64Values()
	order := make([]int32, len(positions))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int { return cmp.Compare(positions[x], positions[y]) })
	pr.pos = make([]int64, len(order))
	for k, i := range order {
		pr.pos[k] = positions[i]
	}
	pr.row = order
	return pr, nil
}

func (p *pairRows) rowOf(pos int64) (int32, bool) {
	k, ok := slices.BinarySearch(p.pos, pos)
	if !ok {
		return 0, false
	}
	return p.row[k], true
}

func (p *pairRows) release() { p.src.Release() }

// prepass joins the candidate files with the source's spilled runs, one
// run at a time, before write.Prepare reads them: for each file it notes
// the rows the runs matched and touched, and writes the touched rows'
// source rows to a pairs file for the rewrite. Files whose work an
// earlier attempt did (write.Reuse skips them) are left out. Nothing is
// done when the source is in memory.
func (a *attempt) prepass(ctx context.Context, tbl *table.Table, tasks []scan.Task) error {
	j := a.j
	if !j.src.spilled() {
		return nil
	}
	var todo []scan.Task
	j.mu.Lock()
	for _, t := range tasks {
		if j.files[workKey(t)] == nil {
			todo = append(todo, t)
		}
	}
	j.mu.Unlock()
	if len(todo) == 0 {
		return nil
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return err
	}
	p := a.p
	matchCols := make([]string, len(p.matchCols))
	for i, c := range p.matchCols {
		matchCols[i] = p.target.Field(c).Name
	}
	pf, err := rows.CreateBatchFile(j.dir, pairsSchema(j.src.schema))
	if err != nil {
		return err
	}
	j.pairFiles = append(j.pairFiles, pf)
	for r, run := range j.src.runs {
		src, err := run.load()
		if err != nil {
			return err
		}
		x, err := buildJoinIndex(ctx, p, src)
		if err != nil {
			src.Release()
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(2)
		for _, t := range todo {
			g.Go(func() error {
				if err := a.prepassFile(gctx, reader, t, matchCols, src, x, run.base, r, pf); err != nil {
					return fmt.Errorf("%s: %w", t.File.FilePath(), err)
				}
				return nil
			})
		}
		err = g.Wait()
		x.release()
		src.Release()
		if err != nil {
			return err
		}
	}
	return pf.Finish()
}

// prepassFile joins one candidate file with one spilled run.
func (a *attempt) prepassFile(ctx context.Context, reader *scan.Reader, t scan.Task, matchCols []string, src arrow.RecordBatch, x *joinIndex, base int64, run int, pf *rows.BatchFile) error {
	st := a.stateOf(workKey(t))
	_, seq, err := reader.Live(ctx, t.File, t.Deletes, matchCols)
	if err != nil {
		return err
	}
	for b, err := range seq {
		if err != nil {
			return err
		}
		first, choice, err := a.joinGroup(ctx, st, b, src, x, base, run)
		if err != nil {
			b.Release()
			return err
		}
		var joinedPos []uint64
		var tPos, tSrc []int64
		for i, s := range first {
			if s < 0 {
				continue
			}
			joinedPos = append(joinedPos, uint64(b.Pos[i]))
			if choice[i] >= 0 {
				tPos = append(tPos, b.Pos[i])
				tSrc = append(tSrc, int64(s))
			}
		}
		b.Release()
		if len(joinedPos) == 0 {
			continue
		}
		if st.preJoined == nil {
			st.preJoined, st.preTouched = roaring64.New(), roaring64.New()
		}
		st.preJoined.AddMany(joinedPos)
		if len(tPos) == 0 {
			continue
		}
		for _, pos := range tPos {
			st.preTouched.Add(uint64(pos))
		}
		cols, err := takeCols(ctx, src, tSrc)
		if err != nil {
			return err
		}
		pb := array.NewInt64Builder(memory.DefaultAllocator)
		pb.AppendValues(tPos, nil)
		pa := pb.NewArray()
		pb.Release()
		rec := array.NewRecordBatch(pf.Schema(), append([]arrow.Array{pa}, cols...), int64(len(tPos)))
		pa.Release()
		releaseAll(cols)
		n, err := pf.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
		st.preRefs = append(st.preRefs, pairRef{file: pf, batch: n})
	}
	return nil
}

// crossCardinality reports target row i of b, matched by source row s2,
// which a row of an earlier spilled run (before run) matched too: it
// finds that row for the message.
func (a *attempt) crossCardinality(ctx context.Context, b scan.Batch, i, run int, s2 int64) error {
	row := b.Rec.NewSlice(int64(i), int64(i+1))
	defer row.Release()
	for r := 0; r < run && r < len(a.j.src.runs); r++ {
		s, ok, err := a.firstMatch(ctx, row, a.j.src.runs[r])
		if err != nil {
			return err
		}
		if ok {
			return a.cardinalityError(b, i, a.j.src.runs[r].base+s, s2)
		}
	}
	return a.cardinalityError(b, i, -1, s2)
}

// firstMatch returns the first row of a spilled run that the one-row
// record of match columns row matches.
func (a *attempt) firstMatch(ctx context.Context, row arrow.RecordBatch, run *sourceRun) (int64, bool, error) {
	p := a.p
	src, err := run.load()
	if err != nil {
		return 0, false, err
	}
	defer src.Release()
	x, err := buildJoinIndex(ctx, p, src)
	if err != nil {
		return 0, false, err
	}
	defer x.release()
	keys, err := keyArrays(ctx, p, row, p.keyInMatch)
	if err != nil {
		return 0, false, err
	}
	tIdx, sIdx := x.probe(keys, 1)
	releaseAll(keys)
	for k := range tIdx {
		if p.residual == nil {
			return sIdx[k], true, nil
		}
		j, err := joined(ctx, p.matchSchema, row, tIdx[k:k+1], src, sIdx[k:k+1])
		if err != nil {
			return 0, false, err
		}
		mask, err := p.residual.Mask(ctx, j)
		j.Release()
		if err != nil {
			return 0, false, err
		}
		hit := mask.Value(0)
		mask.Release()
		if hit {
			return sIdx[k], true, nil
		}
	}
	return 0, false, nil
}

// sourceStats sum up the join keys of the source rows, as the target's
// columns hold them, for the filter that prunes the target's files: per
// key the statistics of its values (keyStats), for the plan they were
// computed for.
type sourceStats struct {
	keys  []keyPair
	types []arrow.DataType // target column types
	names []string
	ok    []bool // the key's values convert to the column's type
	st    *keyStats
	rows  int64 // source rows without a NULL key
}

func newSourceStats(p *plan) *sourceStats {
	s := &sourceStats{keys: p.keys}
	for _, kp := range p.keys {
		tf := p.target.Field(kp.tCol)
		s.types = append(s.types, tf.Type)
		s.names = append(s.names, tf.Name)
		s.ok = append(s.ok, true)
	}
	s.st = newKeyStats(s.types, 0)
	return s
}

// fits reports whether the statistics hold for plan p.
func (s *sourceStats) fits(p *plan) bool {
	if len(p.keys) != len(s.keys) {
		return false
	}
	for k, kp := range p.keys {
		o := s.keys[k]
		if kp.tCol != o.tCol || kp.sCol != o.sCol || !arrow.TypeEqual(p.target.Field(kp.tCol).Type, s.types[k]) ||
			(kp.hash == nil) != (o.hash == nil) || kp.hash != nil && !arrow.TypeEqual(kp.hash, o.hash) {
			return false
		}
	}
	return true
}

// add adds the source rows of rec (source schema).
func (s *sourceStats) add(ctx context.Context, rec arrow.RecordBatch) {
	n := int(rec.NumRows())
	cols := make([]arrow.Array, len(s.keys))
	for k, kp := range s.keys {
		if !s.ok[k] {
			continue
		}
		arr, err := castTo(ctx, rec.Column(kp.sCol), s.types[k])
		if err != nil {
			// A source value the column cannot hold: no pruning on it.
			s.ok[k] = false
			s.st.cols[k].bad = true
			continue
		}
		cols[k] = arr
	}
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
rowsLoop:
	for i := range n {
		for _, kp := range s.keys {
			if rec.Column(kp.sCol).IsNull(i) {
				continue rowsLoop // a NULL key never matches
			}
		}
		s.rows++
		for k, c := range cols {
			if c != nil {
				s.st.cols[k].add(c, i)
			}
		}
	}
}

// filter is the pruning filter of the keys (AlwaysFalse when no source
// row has a non-NULL key).
func (s *sourceStats) filter(sc *iceberg.Schema) iceberg.BooleanExpression {
	if s.rows == 0 {
		return iceberg.AlwaysFalse{}
	}
	return s.st.filter(sc, s.names)
}
