package merge

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/commit"
	"github.com/floedata/floe/rowfile"
	"github.com/floedata/floe/rows"
	"github.com/floedata/floe/scan"
	"github.com/floedata/floe/write"
)

// Change types accepted in the change type column.
const (
	Insert       = "INSERT"
	Delete       = "DELETE"
	UpdateBefore = "UPDATE_BEFORE"
	UpdateAfter  = "UPDATE_AFTER"
)

// DeleteMode chooses how rows are removed.
type DeleteMode int

const (
	// DeleteAuto follows the table: write.merge.mode copy-on-write rewrites
	// files; merge-on-read writes position deletes (v2) or deletion vectors
	// (v3).
	DeleteAuto DeleteMode = iota
	// DeletePosition writes position deletes or deletion vectors, found by
	// reading the key columns of candidate files.
	DeletePosition
	// DeleteEquality writes equality deletes of the keys without reading
	// the table (the cheapest write, as Flink and Beam do); readers pay.
	DeleteEquality
)

// ParseDeleteMode parses "", "position" or "equality".
func ParseDeleteMode(s string) (DeleteMode, error) {
	switch strings.ToLower(s) {
	case "", "auto":
		return DeleteAuto, nil
	case "position", "positional":
		return DeletePosition, nil
	case "equality":
		return DeleteEquality, nil
	}
	return 0, fmt.Errorf("delete mode %q: want position or equality", s)
}

// Options configure Apply and Merge. ChangeTypeColumn and SequenceColumn
// apply to Apply only; Merge refuses DeleteEquality.
type Options struct {
	// ChangeTypeColumn holds INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE
	// (default "_change_type").
	ChangeTypeColumn string
	// SequenceColumn, when set, orders the changes of one key: they are
	// collapsed per key in sequence order, ties broken UPDATE_BEFORE <
	// DELETE < UPDATE_AFTER < INSERT, so raw CDC events apply correctly.
	SequenceColumn string
	DeleteMode     DeleteMode
	Branch         string
	// CommitProperties are table properties committed in the same commit
	// as the changes (watermarks).
	CommitProperties iceberg.Properties
	// ExpectProperties must hold on the table the changes are applied to;
	// otherwise nothing is committed (commit.ErrWatermarkMoved).
	ExpectProperties map[string]string
	// SnapshotProperties go into the snapshot summary.
	SnapshotProperties iceberg.Properties
	// CommitEmpty commits CommitProperties even when there is no change.
	CommitEmpty bool
	// ReplaceTarget (Merge only) runs the statement as if the target were
	// empty and replaces its rows with the result, in one commit: a full
	// rebuild through the same statement.
	ReplaceTarget bool
}

// Option sets an Option field.
type Option func(*Options)

// WithCommitProperties commits props (watermarks) with the changes, in one
// Iceberg commit.
func WithCommitProperties(props map[string]string) Option {
	return func(o *Options) {
		if o.CommitProperties == nil {
			o.CommitProperties = iceberg.Properties{}
		}
		for k, v := range props {
			o.CommitProperties[k] = v
		}
	}
}

// WithExpectedProperties makes the commit conditional on the table's
// properties having these values (compare-and-swap on a watermark).
func WithExpectedProperties(props map[string]string) Option {
	return func(o *Options) { o.ExpectProperties = props }
}

// WithSequenceColumn collapses the changes per key in the order of col.
func WithSequenceColumn(col string) Option { return func(o *Options) { o.SequenceColumn = col } }

// WithChangeTypeColumn names the change type column.
func WithChangeTypeColumn(col string) Option { return func(o *Options) { o.ChangeTypeColumn = col } }

// WithDeleteMode chooses how rows are removed.
func WithDeleteMode(m DeleteMode) Option { return func(o *Options) { o.DeleteMode = m } }

// WithBranch writes to a branch.
func WithBranch(b string) Option { return func(o *Options) { o.Branch = b } }

// WithSnapshotProperties adds properties to the snapshot summary.
func WithSnapshotProperties(p map[string]string) Option {
	return func(o *Options) {
		if o.SnapshotProperties == nil {
			o.SnapshotProperties = iceberg.Properties{}
		}
		for k, v := range p {
			o.SnapshotProperties[k] = v
		}
	}
}

// WithReplaceTarget makes Merge treat the target as empty and replace its
// rows with the statement's result.
func WithReplaceTarget() Option { return func(o *Options) { o.ReplaceTarget = true } }

// WithCommitEmpty commits the commit properties even without changes.
func WithCommitEmpty() Option { return func(o *Options) { o.CommitEmpty = true } }

// Result says what Apply did.
type Result struct {
	Upserts, Deletes int64 // actions applied (after collapsing)
	Matched          int64 // keys found in the table (position and copy-on-write modes)
	// FilesScanned is the number of data files whose key columns were
	// read to find the changed rows (position and copy-on-write modes): the
	// candidates left after pruning by partition values and column
	// statistics. Equality mode leaves it 0.
	FilesScanned int
	RowsAdded    int64
	RowsRemoved  int64
	Mode         string
	SnapshotID   int64
	Attempts     int
	Committed    bool
	// CommitID is the commit's id (commit.PropCommitID); AnswerLost
	// reports that the catalog's answer was lost and floe found the commit
	// on the table (see package commit).
	CommitID   string
	AnswerLost bool
	Table      *table.Table
}

// metadataColumns are changelog and CDF columns that may ride along with
// change rows; Apply ignores them.
var metadataColumns = []string{"_change_ordinal", "_commit_snapshot_id", "_commit_version", "_commit_timestamp"}

// ChangeColumns are the columns a file of changes may carry beyond the
// table's columns (target): the change type column, the sequence column
// when it is not a table column, and changelog and Change Data Feed
// metadata columns, which Apply ignores. Readers of change files pass them
// as extra columns.
func ChangeColumns(target *arrow.Schema, changeType, sequence string) []arrow.Field {
	if changeType == "" {
		changeType = "_change_type"
	}
	out := []arrow.Field{{Name: changeType, Type: arrow.BinaryTypes.String, Nullable: true}}
	if sequence != "" && len(target.FieldIndices(sequence)) == 0 {
		out = append(out, arrow.Field{Name: sequence, Type: arrow.PrimitiveTypes.Int64, Nullable: true})
	}
	for _, m := range []arrow.Field{
		{Name: "_change_ordinal", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		{Name: "_commit_snapshot_id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_commit_version", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_commit_timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	} {
		if m.Name != changeType && m.Name != sequence {
			out = append(out, m)
		}
	}
	return out
}

// action is the final action for one key.
type action struct {
	upsert bool
	none   bool // the key's changes do nothing (a lone before-image)
	b, i   int  // the row (INSERT/UPDATE_AFTER for upserts)
}

// Apply upserts and deletes rows of the table ident by key, from change
// rows (schema src): INSERT and UPDATE_AFTER upsert the row, DELETE
// removes the key, UPDATE_BEFORE is ignored (without a sequence column).
// Change columns match the table's by name; missing nullable columns are
// NULL; safe widenings are applied; anything else is an error naming the
// column, and nothing is committed. At most one action per key (Spark's
// MERGE cardinality rule) unless a sequence column collapses them. Data
// files, delete files and the commit properties land in one commit; on
// conflicts with other writers the commit is retried (see package commit).
func Apply(ctx context.Context, cat *catalog.Catalog, ident table.Identifier, src *arrow.Schema, changes iter.Seq2[arrow.RecordBatch, error], keys []string, opts ...Option) (*Result, error) {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	if o.ChangeTypeColumn == "" {
		o.ChangeTypeColumn = "_change_type"
	}
	name := catalog.FormatName(ident)
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, err
	}
	cs, err := collect(ctx, tbl, src, changes, keys, &o)
	if err != nil {
		return nil, fmt.Errorf("apply to %s: %w", name, err)
	}
	defer cs.release()
	acts, err := cs.actions(&o)
	if err != nil {
		return nil, fmt.Errorf("apply to %s: %w", name, err)
	}
	defer acts.release()
	res := &Result{}
	for a := range acts.all {
		if a.upsert {
			res.Upserts++
		} else {
			res.Deletes++
		}
	}
	mode, err := write.ModeFor(tbl.Properties(), write.OpMerge)
	if err != nil {
		return nil, err
	}
	if o.DeleteMode != DeleteAuto {
		mode = write.MergeOnRead
	}
	res.Mode = mode.String()
	if o.DeleteMode == DeleteEquality {
		res.Mode = "merge-on-read (equality deletes)"
	}
	// Inserts (and equality deletes) are written once, at the first
	// attempt, and reused by every later one; package commit owns them.
	var insertFiles, deleteFiles []iceberg.DataFile
	written := false
	out, err := commit.Run(ctx, cat, ident, commit.Options{
		Branch:             o.Branch,
		SnapshotProperties: withOp(o.SnapshotProperties, "apply"),
		SetProperties:      o.CommitProperties,
		Expect:             o.ExpectProperties,
		CommitEmpty:        o.CommitEmpty,
	}, func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		if !written {
			written = true
			var err error
			if res.Upserts > 0 {
				insertFiles, err = write.WriteRows(ctx, tbl, cs.upsertRows(ctx, acts))
				reuse.Own(paths(insertFiles)...)
				if err != nil {
					return nil, err
				}
			}
			if o.DeleteMode == DeleteEquality && acts.n > 0 {
				deleteFiles, err = cs.equalityDeletes(ctx, tbl, acts)
				reuse.Own(paths(deleteFiles)...)
				if err != nil {
					return nil, err
				}
			}
		}
		req := write.Request{Table: tbl, Branch: o.Branch, Mode: mode, InsertFiles: insertFiles, DeleteFiles: deleteFiles, Reuse: reuse}
		if o.DeleteMode != DeleteEquality && acts.n > 0 {
			req.Filter = cs.keyFilter(tbl, acts)
			// The batches hold the key columns in key order (MatchColumns).
			req.Visitor = &write.Visitor{MatchColumns: cs.keyNames, Match: func(_ context.Context, _ iceberg.DataFile, b scan.Batch) ([]bool, error) {
				slots, _ := acts.lookup(b.Rec, nil, nil)
				out := make([]bool, len(slots))
				for i, s := range slots {
					if s >= 0 {
						out[i] = true
						acts.matched[s].Store(true)
					}
				}
				return out, nil
			}}
		}
		return write.Prepare(ctx, req)
	})
	if err != nil {
		return nil, fmt.Errorf("apply to %s: %w", name, err)
	}
	res.Committed, res.SnapshotID, res.Attempts, res.Table = out.Committed, out.SnapshotID, out.Attempts, out.Table
	res.CommitID, res.AnswerLost = out.CommitID, out.AnswerLost
	res.Matched = acts.countMatched()
	if out.Result != nil {
		res.RowsAdded, res.RowsRemoved = out.Result.RowsAdded, out.Result.RowsRemoved
		res.FilesScanned = out.Result.FilesScanned
	}
	return res, nil
}

func withOp(p iceberg.Properties, op string) iceberg.Properties {
	out := iceberg.Properties{"floe.operation": op}
	for k, v := range p {
		out[k] = v
	}
	return out
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}

func seqInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// changeSet holds the change rows in the table's shape plus the change
// type and sequence columns.
type changeSet struct {
	recs     []arrow.RecordBatch
	schema   *arrow.Schema // table columns, then extras
	nTable   int
	tableSch *arrow.Schema
	keyCols  []int // in recs
	keyNames []string
	typeCol  int
	seqCol   int // -1 when none
}

func (cs *changeSet) release() {
	for _, r := range cs.recs {
		r.Release()
	}
}

func collect(ctx context.Context, tbl *table.Table, src *arrow.Schema, changes iter.Seq2[arrow.RecordBatch, error], keys []string, o *Options) (*changeSet, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key columns given", ErrBadChanges)
	}
	target, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, err
	}
	extra := []arrow.Field{{Name: o.ChangeTypeColumn, Type: arrow.BinaryTypes.String, Nullable: false}}
	seqInTable := false
	if o.SequenceColumn != "" {
		if len(target.FieldIndices(o.SequenceColumn)) > 0 {
			seqInTable = true
		} else {
			extra = append(extra, arrow.Field{Name: o.SequenceColumn, Type: arrow.PrimitiveTypes.Int64, Nullable: false})
		}
	}
	for _, m := range metadataColumns {
		if m != o.ChangeTypeColumn && m != o.SequenceColumn && len(src.FieldIndices(m)) > 0 {
			extra = append(extra, arrow.Field{Name: m, Type: src.Field(src.FieldIndices(m)[0]).Type, Nullable: true})
		}
	}
	if len(src.FieldIndices(o.ChangeTypeColumn)) == 0 {
		return nil, fmt.Errorf("%w: the changes have no %s column (INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE per row)", ErrBadChanges, o.ChangeTypeColumn)
	}
	r, err := rowfile.FromRecords(ctx, "changes", src, changes, rowfile.ReadOptions{Target: target, Extra: extra})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cs := &changeSet{schema: r.Schema(), nTable: target.NumFields(), tableSch: target, seqCol: -1}
	for rec, err := range r.All() {
		if err != nil {
			cs.release()
			return nil, err
		}
		cs.recs = append(cs.recs, rec)
	}
	for _, k := range keys {
		idx := target.FieldIndices(k)
		if len(idx) == 0 {
			for i, f := range target.Fields() {
				if strings.EqualFold(f.Name, k) {
					idx = []int{i}
				}
			}
		}
		if len(idx) == 0 {
			cs.release()
			return nil, fmt.Errorf("%w: key column %q is not a column of the table (columns: %s)", ErrBadChanges, k, fieldNames(target))
		}
		cs.keyCols = append(cs.keyCols, idx[0])
		cs.keyNames = append(cs.keyNames, target.Field(idx[0]).Name)
	}
	cs.typeCol = cs.schema.FieldIndices(o.ChangeTypeColumn)[0]
	if o.SequenceColumn != "" {
		if seqInTable {
			cs.seqCol = target.FieldIndices(o.SequenceColumn)[0]
		} else {
			cs.seqCol = cs.schema.FieldIndices(o.SequenceColumn)[0]
		}
	}
	return cs, nil
}

func fieldNames(s *arrow.Schema) string {
	n := make([]string, s.NumFields())
	for i, f := range s.Fields() {
		n[i] = f.Name
	}
	return strings.Join(n, ", ")
}

// Change types ranked in the order ties of one sequence value apply:
// UPDATE_BEFORE < DELETE < UPDATE_AFTER < INSERT.
const (
	kindUpdateBefore int8 = iota
	kindDelete
	kindUpdateAfter
	kindInsert
)

// kindNames are the change types by rank.
var kindNames = [...]string{kindUpdateBefore: UpdateBefore, kindDelete: Delete, kindUpdateAfter: UpdateAfter, kindInsert: Insert}

// parseKind returns the rank of a change type (case-insensitive), or -1.
func parseKind(s string) int8 {
	for r, k := range kindNames {
		if s == k {
			return int8(r)
		}
	}
	for r, k := range kindNames {
		if strings.EqualFold(s, k) {
			return int8(r)
		}
	}
	return -1
}

type event struct {
	seq  int64
	b, i int32
	ord  int32 // arrival order
	next int32 // the next event of the same key, -1 at the end
	kind int8  // rank in kindNames
}

// actions reduces the changes to one action per key. The caller releases
// the set.
func (cs *changeSet) actions(o *Options) (*actionSet, error) {
	total := 0
	for _, rec := range cs.recs {
		total += int(rec.NumRows())
	}
	idx := newKeyIndex(cs.recs, cs.keyCols, total)
	ok := false
	defer func() {
		if !ok {
			idx.release()
		}
	}()
	// Events chain per key slot, head to tail, by index.
	events := make([]event, 0, total)
	head := make([]int32, 0, total)
	tail := make([]int32, 0, total)
	var hashes []uint64
	n := 0
	for b, rec := range cs.recs {
		kinds := rec.Column(cs.typeCol).(*array.String)
		var seqCol arrow.Array
		if cs.seqCol >= 0 {
			seqCol = rec.Column(cs.seqCol)
		}
		hashes = rows.HashKeys(rec, cs.keyCols, hashes)
		for i := 0; i < int(rec.NumRows()); i++ {
			kind := parseKind(kinds.Value(i))
			if kind < 0 {
				return nil, fmt.Errorf("%w: row %d: %s %q is not INSERT, UPDATE_BEFORE, UPDATE_AFTER or DELETE", ErrBadChanges, n, o.ChangeTypeColumn, kinds.Value(i))
			}
			for _, k := range cs.keyCols {
				if rec.Column(k).IsNull(i) {
					return nil, fmt.Errorf("%w: row %d (%s): key column %s is NULL", ErrBadChanges, n, kindNames[kind], rec.Schema().Field(k).Name)
				}
			}
			ev := event{b: int32(b), i: int32(i), kind: kind, ord: int32(n), next: -1}
			if seqCol != nil {
				if seqCol.IsNull(i) {
					return nil, fmt.Errorf("%w: row %d: sequence column %s is NULL", ErrBadChanges, n, o.SequenceColumn)
				}
				ev.seq = seqValue(seqCol, i)
			}
			e := int32(len(events))
			events = append(events, ev)
			if slot, added := idx.insert(hashes[i], b, i); added {
				head = append(head, e)
				tail = append(tail, e)
			} else {
				events[tail[slot]].next = e
				tail[slot] = e
			}
			n++
		}
	}
	set := &actionSet{idx: idx, act: make([]action, len(head)), matched: make([]atomic.Bool, len(head))}
	var evs []event
	for slot, h := range head {
		a, err := cs.reduce(events, h, tail[slot], &evs)
		if err != nil {
			return nil, err
		}
		set.act[slot] = a
		if !a.none {
			set.n++
		}
	}
	ok = true
	return set, nil
}

// reduce returns the action of the key whose events chain from h to t.
func (cs *changeSet) reduce(events []event, h, t int32, scratch *[]event) (action, error) {
	if h == t {
		// One change for the key, the common case: as below, without the
		// sorting and copying.
		e := events[h]
		switch {
		case cs.seqCol >= 0:
			return action{upsert: e.kind >= kindUpdateAfter, b: int(e.b), i: int(e.i)}, nil
		case e.kind == kindUpdateBefore: // a lone before-image does nothing
			return action{none: true}, nil
		}
		return action{upsert: e.kind != kindDelete, b: int(e.b), i: int(e.i)}, nil
	}
	evs := (*scratch)[:0]
	for e := h; e >= 0; e = events[e].next {
		evs = append(evs, events[e])
	}
	*scratch = evs
	if cs.seqCol >= 0 {
		sort.SliceStable(evs, func(a, b int) bool {
			if evs[a].seq != evs[b].seq {
				return evs[a].seq < evs[b].seq
			}
			return evs[a].kind < evs[b].kind
		})
		last := evs[len(evs)-1]
		return action{upsert: last.kind >= kindUpdateAfter, b: int(last.b), i: int(last.i)}, nil
	}
	var main []event
	for _, e := range evs {
		if e.kind != kindUpdateBefore {
			main = append(main, e)
		}
	}
	if len(main) > 1 {
		rec := cs.recs[main[0].b]
		return action{}, fmt.Errorf("%w: %d changes for the key (%s) (rows %d and %d: %s and %s); apply takes at most one action per key: collapse them first (--sequence-column orders them)",
			ErrCardinality, len(main), rows.FormatKey(rec, cs.keyCols, int(main[0].i)), main[0].ord, main[1].ord, kindNames[main[0].kind], kindNames[main[1].kind])
	}
	if len(main) == 0 {
		return action{none: true}, nil // only before-images: nothing to do
	}
	e := main[0]
	return action{upsert: e.kind != kindDelete, b: int(e.b), i: int(e.i)}, nil
}

func seqValue(a arrow.Array, i int) int64 {
	switch c := a.(type) {
	case *array.Int64:
		return c.Value(i)
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Timestamp:
		return int64(c.Value(i))
	case *array.Date32:
		return int64(c.Value(i))
	}
	return 0
}

// upsertRows yields the rows of upsert actions in the table's schema.
func (cs *changeSet) upsertRows(ctx context.Context, acts *actionSet) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		idx := make([][]int64, len(cs.recs))
		for a := range acts.all {
			if a.upsert {
				idx[a.b] = append(idx[a.b], int64(a.i))
			}
		}
		cols := seqInts(cs.nTable)
		for b, rec := range cs.recs {
			ids := idx[b]
			if len(ids) == 0 {
				continue
			}
			slices.Sort(ids)
			t, err := rows.Take(ctx, rec, ids)
			if err != nil {
				yield(nil, err)
				return
			}
			p := rows.Project(t, cs.tableSch, cols)
			t.Release()
			if !yield(p, nil) {
				return
			}
		}
	}
}

// keyFilter is a conservative Iceberg filter on the keys, for pruning
// candidate files by partition values and column statistics.
func (cs *changeSet) keyFilter(tbl *table.Table, acts *actionSet) iceberg.BooleanExpression {
	return keyFilter(tbl.Schema(), cs.recs, cs.keyCols, cs.keyNames, func(yield func(b, i int) bool) {
		for a := range acts.all {
			if !yield(a.b, a.i) {
				return
			}
		}
	})
}
