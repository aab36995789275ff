package merge

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/commit"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
	"github.com/floedata/floe/write"
)

// Source is the USING side of a MERGE: a stream of rows with its schema.
// Merge reads it once, into memory, and releases every batch it yields.
type Source struct {
	// Name is what the source is called when the statement gives it no
	// alias; "" means the statement's name for it: a table name's last
	// part, or a file's base name without its extension.
	Name string
	// Schema and Rows are the rows; for a subquery source (USING (SELECT
	// ... FROM t ...)) those of its table t, which Merge filters and projects
	// as the subquery says.
	Schema *arrow.Schema
	Rows   iter.Seq2[arrow.RecordBatch, error]
}

// MergeResult says what Merge did. The first four fields are Spark's
// MERGE metrics.
type MergeResult struct {
	NumAffectedRows int64 // updated + deleted + inserted
	NumUpdatedRows  int64
	NumDeletedRows  int64
	NumInsertedRows int64
	// RowsAdded counts the rows written as new (updated and inserted
	// rows), RowsRemoved the rows removed from existing data files
	// (deleted rows and the old versions of updated ones). Untouched rows
	// that copy-on-write carries over into rewritten files are in neither.
	RowsAdded, RowsRemoved int64
	// FilesScanned is the number of candidate data files left after
	// pruning by partition values and column statistics, whose join key
	// columns were read.
	FilesScanned int
	Mode         string // copy-on-write or merge-on-read
	SnapshotID   int64  // the new snapshot; 0 when nothing was committed
	Attempts     int
	Committed    bool
	// CommitID and AnswerLost: as in Result.
	CommitID   string
	AnswerLost bool
	Table      *table.Table // the table after the merge
}

// testHookPrepared, set by tests only, is called after each attempt has
// written its files (inserts are the paths of the inserted rows' files)
// and before it commits.
var testHookPrepared func(attempt int, inserts []string)

// counts are the Spark metrics of one attempt.
type counts struct {
	updated, deleted, inserted int64
}

// insertWork is the data files written for the inserted rows of an
// attempt, reused by the next attempt when it inserts the same rows.
type insertWork struct {
	files     []iceberg.DataFile
	unmatched []int64 // the source rows they were computed from
	schemaID  int
	specID    int
	n         int64
}

// Merge runs a MERGE INTO statement, with Spark SQL's semantics (and
// Iceberg's Spark extensions), on the target table the statement names,
// with the rows of source as the USING relation.
//
// Names: the target is known by its alias or its name's last part, the
// source by its alias or source.Name; t.col and s.col refer to one side,
// an unqualified col to the side that has it (an error when both do). In
// WHEN NOT MATCHED clauses only the source is visible, in WHEN NOT MATCHED
// BY SOURCE clauses only the target.
//
// Join: the ON condition needs at least one equality t.a = s.b between
// plain columns; those are the hash-join key and prune the candidate files
// by partition values and column statistics (ON conjuncts on the target
// alone prune too) before any key column is read. The rest of ON is
// evaluated on each joined pair. NULL keys never match.
//
// Clauses are tried in order and the first whose condition holds applies;
// a target row no clause applies to stays, a source row no NOT MATCHED
// clause applies to is not inserted. UPDATE and INSERT values are cast to
// the column types under Spark's store-assignment rules (a string is not
// assigned to a number without CAST); a NULL for a NOT NULL column fails
// with ErrNotNull. UPDATE SET * and INSERT * take every target column from
// the source column of the same name and fail, as in Spark, when one is
// missing. When a target row matches several source rows the merge fails
// with ErrCardinality (Spark's MERGE_CARDINALITY_VIOLATION) unless the
// statement has no WHEN MATCHED clause or only one, an unconditional
// DELETE. Statements that cannot run fail with ErrBadMerge.
//
// The source is held in memory (one copy of its rows plus a hash index);
// the target is streamed: the match pass reads only the join-key columns
// and the columns the conditions use, of candidate files, and the rewrite
// pass reads the files holding rows to delete or update. Changes are
// written per write.merge.mode (copy-on-write by default; merge-on-read
// writes position deletes on v2 and deletion vectors on v3, or always with
// WithDeleteMode(DeletePosition)). Data files, delete files and the
// options' commit properties are committed in one Iceberg commit through
// package commit, which retries on conflicts (recomputing only what the
// new table state requires) and stops with commit.ErrWatermarkMoved when
// the expected properties changed. Package commit owns the files written:
// they are removed when no commit can reference them. Options ChangeTypeColumn and
// SequenceColumn do not apply; DeleteEquality is refused.
//
// Merge may be called concurrently, also on one table.
func Merge(ctx context.Context, cat *catalog.Catalog, stmt *expr.Merge, source Source, opts ...Option) (*MergeResult, error) {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	name := catalog.FormatName(table.Identifier(stmt.Target))
	fail := func(err error) (*MergeResult, error) { return nil, fmt.Errorf("merge into %s: %w", name, err) }
	stmt, err := resolveNames(cat, stmt)
	if err != nil {
		return fail(err)
	}
	if o.DeleteMode == DeleteEquality {
		return fail(fmt.Errorf("%w: MERGE writes position deletes or deletion vectors, not equality deletes", ErrBadMerge))
	}
	if source.Schema == nil || source.Rows == nil {
		return fail(fmt.Errorf("%w: the source has no schema or rows", ErrBadMerge))
	}
	source, err = querySource(ctx, stmt, source)
	if err != nil {
		return fail(err)
	}
	ident := table.Identifier(stmt.Target)
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	// Bind once before reading the source, so that a bad statement fails
	// at once; every attempt binds again to the table it sees.
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return fail(err)
	}
	if _, err := bind(stmt, target, source.Schema, source.Name); err != nil {
		return fail(err)
	}
	src, err := loadSource(source)
	if err != nil {
		return fail(fmt.Errorf("read the source: %w", err))
	}
	defer src.Release()

	j := &joiner{src: src, files: map[string]*fileState{}}
	var ins insertWork
	var last counts
	mode, scanned := "", 0
	attempts := 0
	out, err := commit.Run(ctx, cat, ident, commit.Options{
		Branch:             o.Branch,
		SnapshotProperties: withOp(o.SnapshotProperties, "merge"),
		SetProperties:      o.CommitProperties,
		Expect:             o.ExpectProperties,
		CommitEmpty:        o.CommitEmpty,
	}, func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		attempts++
		res, c, err := j.prepare(ctx, tbl, stmt, source, &o, reuse, attempts, &ins)
		if err != nil {
			return nil, err
		}
		last, mode, scanned = c, res.Mode.String(), res.FilesScanned
		if testHookPrepared != nil {
			testHookPrepared(attempts, paths(ins.files))
		}
		return res, nil
	})
	if err != nil {
		return fail(err)
	}
	res := &MergeResult{
		NumUpdatedRows: last.updated, NumDeletedRows: last.deleted, NumInsertedRows: last.inserted,
		NumAffectedRows: last.updated + last.deleted + last.inserted,
		FilesScanned:    scanned, Mode: mode,
		SnapshotID: out.SnapshotID, Attempts: out.Attempts, Committed: out.Committed, Table: out.Table,
		CommitID: out.CommitID, AnswerLost: out.AnswerLost,
	}
	if out.Result != nil {
		res.RowsAdded, res.RowsRemoved = out.Result.RowsAdded, out.Result.RowsRemoved
	}
	return res, nil
}

// loadSource reads every source row into one record.
func loadSource(source Source) (arrow.RecordBatch, error) {
	var recs []arrow.RecordBatch
	defer func() { releaseAll(recs) }()
	for rec, err := range source.Rows {
		if err != nil {
			return nil, err
		}
		if !rec.Schema().Equal(source.Schema) {
			same := rec.Schema().NumFields() == source.Schema.NumFields()
			for i := 0; same && i < source.Schema.NumFields(); i++ {
				same = arrow.TypeEqual(rec.Schema().Field(i).Type, source.Schema.Field(i).Type)
			}
			if !same {
				rec.Release()
				return nil, fmt.Errorf("a batch has schema %s, the source's is %s", rec.Schema(), source.Schema)
			}
			r := array.NewRecordBatch(source.Schema, rec.Columns(), rec.NumRows())
			rec.Release()
			rec = r
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return emptyRecord(source.Schema), nil
	}
	return rows.Concat(source.Schema, recs)
}

func emptyRecord(s *arrow.Schema) arrow.RecordBatch {
	cols := make([]arrow.Array, s.NumFields())
	for i, f := range s.Fields() {
		cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, f.Type, 0)
	}
	defer releaseAll(cols)
	return array.NewRecordBatch(s, cols, 0)
}

// prepare computes one attempt of the merge on tbl.
func (j *joiner) prepare(ctx context.Context, tbl *table.Table, stmt *expr.Merge, source Source, o *Options, reuse *write.Reuse, no int, ins *insertWork) (*write.Result, counts, error) {
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, counts{}, err
	}
	p, err := bind(stmt, target, source.Schema, source.Name)
	if err != nil {
		return nil, counts{}, err
	}
	index, err := buildIndex(ctx, p, j.src)
	if err != nil {
		return nil, counts{}, err
	}
	mode, err := write.ModeFor(tbl.Properties(), write.OpMerge)
	if err != nil {
		return nil, counts{}, err
	}
	if o.DeleteMode == DeletePosition {
		mode = write.MergeOnRead
	}
	base, err := write.BranchHead(tbl, o.Branch)
	if err != nil {
		return nil, counts{}, err
	}
	a := &attempt{j: j, p: p, no: no, index: index, keyOf: map[string]string{}}
	var filter iceberg.BooleanExpression
	if len(p.bySource) == 0 {
		filter = a.pruneFilter(ctx, tbl)
	}
	// The candidate files, as write.Prepare plans them (same table, head
	// and filter), to key the per-file join results like write.Reuse keys
	// the per-file work.
	var tasks []scan.Task
	if base != nil && !o.ReplaceTarget {
		if tasks, err = scan.Plan(ctx, tbl, base, filter); err != nil {
			return nil, counts{}, err
		}
	}
	for _, t := range tasks {
		a.keyOf[t.File.FilePath()] = workKey(t)
	}
	matchCols := make([]string, len(p.matchCols))
	for i, c := range p.matchCols {
		matchCols[i] = target.Field(c).Name
	}
	req := write.Request{
		Table: tbl, Branch: o.Branch, Mode: mode, Reuse: reuse, Filter: filter,
		Visitor: &write.Visitor{MatchColumns: matchCols, Match: a.match, Rewrite: a.rewrite},
	}
	if o.ReplaceTarget {
		// The target counts as empty: no row matches, every source row is
		// NOT MATCHED, and the existing files go.
		req = write.Request{Table: tbl, Branch: o.Branch, RemoveAll: true}
	}
	res, err := write.Prepare(ctx, req)
	if err != nil {
		return nil, counts{}, err
	}
	// The files written so far belong to package commit (reuse), which
	// removes them when no commit can reference them.
	fail := func(err error) (*write.Result, counts, error) {
		reuse.Own(res.Written()...)
		return nil, counts{}, err
	}
	var c counts
	matched := roaring.New()
	j.mu.Lock()
	for _, t := range tasks {
		if st := j.files[workKey(t)]; st != nil {
			matched.Or(st.sources)
			c.updated += st.updated
			c.deleted += st.deleted
		}
	}
	j.mu.Unlock()
	var unmatched []int64
	if len(p.notMatched) > 0 {
		for i := 0; i < int(j.src.NumRows()); i++ {
			if !matched.Contains(uint32(i)) {
				unmatched = append(unmatched, int64(i))
			}
		}
	}
	reusable := ins.files != nil && slices.Equal(ins.unmatched, unmatched) &&
		ins.schemaID == tbl.Schema().ID && ins.specID == tbl.Metadata().DefaultPartitionSpec()
	if !reusable {
		// The inserts of an earlier attempt stay registered with reuse:
		// package commit removes them once no commit can reference them.
		*ins = insertWork{}
		if len(unmatched) > 0 {
			var n int64
			files, err := write.WriteRows(ctx, tbl, a.inserts(ctx, unmatched, &n))
			if err != nil {
				return fail(err)
			}
			reuse.Own(paths(files)...)
			*ins = insertWork{files: files, unmatched: unmatched, schemaID: tbl.Schema().ID, specID: tbl.Metadata().DefaultPartitionSpec(), n: n}
		}
	}
	res.AddData = append(res.AddData, ins.files...)
	res.RowsAdded += ins.n
	c.inserted = ins.n
	return res, c, nil
}

// pruneFilter is a conservative filter on the target's rows that can match
// a source row: the join keys' values (an IN list or a range per key
// column) and the ON conjuncts on target columns alone.
func (a *attempt) pruneFilter(ctx context.Context, tbl *table.Table) iceberg.BooleanExpression {
	if len(a.index) == 0 {
		return iceberg.AlwaysFalse{} // no source row has a non-NULL key
	}
	p := a.p
	var cols []arrow.Array
	var fields []arrow.Field
	var names []string
	for _, kp := range p.keys {
		tf := p.target.Field(kp.tCol)
		arr, err := castTo(ctx, a.j.src.Column(kp.sCol), tf.Type)
		if err != nil {
			continue // a source value the column cannot hold: no pruning on it
		}
		cols = append(cols, arr)
		fields = append(fields, arrow.Field{Name: tf.Name, Type: tf.Type, Nullable: true})
		names = append(names, tf.Name)
	}
	var filter iceberg.BooleanExpression = iceberg.AlwaysTrue{}
	if len(cols) > 0 {
		rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, a.j.src.NumRows())
		releaseAll(cols)
		all := seqInts(len(cols))
		filter = keyFilter(tbl.Schema(), []arrow.RecordBatch{rec}, all, names, func(yield func(b, i int) bool) {
			for i := 0; i < int(rec.NumRows()); i++ {
				if !nullIn(rec, all, i) && !yield(0, i) {
					return
				}
			}
		})
		rec.Release()
	}
	for _, e := range p.targetOnly {
		if ib, _, err := expr.ToIceberg(e, tbl.Schema()); err == nil {
			filter = iceberg.NewAnd(filter, ib)
		}
	}
	return filter
}
