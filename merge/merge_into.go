package merge

import (
	"context"
	"fmt"
	"iter"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// Source is the USING side of a MERGE: a stream of rows with its schema.
// Merge reads it once, into memory or, past a quarter of the memory
// budget (WithMemoryBudget), into runs on disk, and releases every batch
// it yields.
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
	// Spilled is the number of bytes of source rows (and of the source
	// rows of matched target rows) written to temporary files (0: the
	// source stayed in memory; see WithMemoryBudget).
	Spilled int64
	Table   *table.Table // the table after the merge
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
	files    []iceberg.DataFile
	matched  *roaring.Bitmap // the source rows matched: the others were inserted
	schemaID int
	specID   int
	n        int64
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
// The source is held in memory (one copy of its rows plus a hash index)
// while it fits a quarter of the memory budget (WithMemoryBudget); past it, it
// goes to runs on disk, each joined with the candidate files in turn
// (their match columns read once per run), the source rows of the target
// rows a WHEN MATCHED clause touches written aside for the rewrite. The
// target is streamed: the match pass reads only the join-key columns and
// the columns the conditions use, of candidate files, and the rewrite
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
	p0, err := bind(stmt, target, source.Schema, source.Name)
	if err != nil {
		return fail(err)
	}
	stats := newSourceStats(p0)
	src, err := readSource(source, o.budget(), o.TempDir, func(rec arrow.RecordBatch) { stats.add(ctx, rec) })
	if err != nil {
		return fail(fmt.Errorf("read the source: %w", err))
	}
	defer src.release()
	mem := src.mem
	if mem == nil {
		mem = emptyRecord(source.Schema)
		defer mem.Release()
	}
	j := &joiner{src: src, mem: mem, files: map[string]*fileState{}, stats: stats, dir: o.TempDir}
	defer j.release()
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
	spilled := src.spilledBytes()
	for _, f := range j.pairFiles {
		spilled += f.Bytes()
	}
	if testHookSpill != nil {
		testHookSpill(spilled, 0, max(len(src.runs), 1))
	}
	if err != nil {
		return fail(err)
	}
	res := &MergeResult{Spilled: spilled,
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
	index, err := buildJoinIndex(ctx, p, j.mem)
	if err != nil {
		return nil, counts{}, err
	}
	defer index.release()
	mode, err := writeMode(tbl.Properties(), o.DeleteMode)
	if err != nil {
		return nil, counts{}, err
	}
	base, err := write.BranchHead(tbl, o.Branch)
	if err != nil {
		return nil, counts{}, err
	}
	a := &attempt{j: j, p: p, no: no, index: index, keyOf: map[string]string{}}
	var filter iceberg.BooleanExpression
	if len(p.bySource) == 0 {
		if filter, err = a.pruneFilter(ctx, tbl); err != nil {
			return nil, counts{}, err
		}
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
	if err := a.prepass(ctx, tbl, tasks); err != nil {
		return nil, counts{}, err
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
	unmatched := len(p.notMatched) > 0 && int64(matched.GetCardinality()) < j.src.n
	reusable := ins.files != nil && ins.matched.Equals(matched) &&
		ins.schemaID == tbl.Schema().ID && ins.specID == tbl.Metadata().DefaultPartitionSpec()
	if !reusable {
		// The inserts of an earlier attempt stay registered with reuse:
		// package commit removes them once no commit can reference them.
		*ins = insertWork{}
		if unmatched {
			var n int64
			files, err := write.WriteRows(ctx, tbl, a.inserts(ctx, matched, &n))
			if err != nil {
				return fail(err)
			}
			reuse.Own(paths(files)...)
			*ins = insertWork{files: files, matched: matched, schemaID: tbl.Schema().ID, specID: tbl.Metadata().DefaultPartitionSpec(), n: n}
		}
	}
	res.AddData = append(res.AddData, ins.files...)
	res.RowsAdded += ins.n
	c.inserted = ins.n
	return res, c, nil
}

// pruneFilter is a conservative filter on the target's rows that can match
// a source row: the join keys' values (an IN list or ranges per key
// column) and the ON conjuncts on target columns alone.
func (a *attempt) pruneFilter(ctx context.Context, tbl *table.Table) (iceberg.BooleanExpression, error) {
	p := a.p
	st := a.j.stats
	if !st.fits(p) {
		// The table's schema changed since the source was read.
		st = newSourceStats(p)
		for g, err := range a.j.src.groups(ctx) {
			if err != nil {
				return nil, err
			}
			st.add(ctx, g.rec)
			g.rec.Release()
		}
		a.j.stats = st
	}
	filter := st.filter(tbl.Schema())
	if _, ok := filter.(iceberg.AlwaysFalse); ok {
		return filter, nil // no source row has a non-NULL key
	}
	for _, e := range p.targetOnly {
		if ib, _, err := expr.ToIceberg(e, tbl.Schema()); err == nil {
			filter = iceberg.NewAnd(filter, ib)
		}
	}
	return filter, nil
}
