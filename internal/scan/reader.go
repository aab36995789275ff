package scan

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
)

// ErrInvalidDeleteFile is wrapped by errors about delete files that cannot
// be read or do not follow the spec (a malformed deletion vector, a
// position delete file without its columns). floe never reads such a
// table as if nothing were deleted.
var ErrInvalidDeleteFile = errors.New("invalid delete file")

// Batch is a record batch read from one data file, with the position in
// the file of each of its rows.
type Batch struct {
	Rec arrow.RecordBatch
	Pos []int64
}

// Release releases the batch's record.
func (b Batch) Release() {
	if b.Rec != nil {
		b.Rec.Release()
	}
}

// Reader reads data files of one table against one schema. It caches
// the position delete files and equality delete files it has loaded, so a
// delete file that covers many data files is read once. A Reader is safe
// for concurrent use.
type Reader struct {
	tbl        *table.Table
	fs         iceio.IO
	checked    *footerIO    // fs, checking the footers of the files read
	view       *table.Table // tbl reading through checked
	schema     *iceberg.Schema
	snapshotID *int64
	batchSize  int

	mu  sync.Mutex
	pos map[string]*posFile   // position delete file path -> its positions by data file
	eq  map[string]*eqDeletes // equality delete file path -> its keys
}

type posFile struct {
	once sync.Once
	err  error
	by   map[string]*roaring64.Bitmap
}

type eqDeletes struct {
	once     sync.Once
	err      error
	fieldIDs []int
	keys     map[string]struct{}
}

// NewReader returns a reader for tbl. Rows are read against the schema of
// snapshotID (the table's current schema when nil), as Iceberg readers
// project old files onto a newer schema by field ID.
func NewReader(ctx context.Context, tbl *table.Table, snapshotID *int64) (*Reader, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	sc := tbl.Schema()
	if snapshotID != nil {
		snap := tbl.Metadata().SnapshotByID(*snapshotID)
		if snap == nil {
			return nil, fmt.Errorf("snapshot %d is not in table %s", *snapshotID, FormatIdent(tbl.Identifier()))
		}
		if snap.SchemaID != nil {
			for _, s := range tbl.Metadata().Schemas() {
				if s.ID == *snap.SchemaID {
					sc = s
				}
			}
		}
	}
	checked := &footerIO{IO: fs, table: FormatIdent(tbl.Identifier())}
	view := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (iceio.IO, error) { return checked, nil }, nil)
	return &Reader{tbl: tbl, fs: fs, checked: checked, view: view, schema: sc, snapshotID: snapshotID, batchSize: 64 * 1024,
		pos: map[string]*posFile{}, eq: map[string]*eqDeletes{}}, nil
}

// Schema is the schema rows are read against.
func (r *Reader) Schema() *iceberg.Schema { return r.schema }

// FS is the table's file IO.
func (r *Reader) FS() iceio.IO { return r.fs }

// FormatIdent renders a table identifier.
func FormatIdent(id table.Identifier) string {
	s := ""
	for i, p := range id {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}

// ArrowSchema returns the Arrow schema of rows projected to cols (all
// columns when cols is nil).
func (r *Reader) ArrowSchema(cols []string) (*arrow.Schema, *iceberg.Schema, error) {
	sc, err := r.project(cols)
	if err != nil {
		return nil, nil, err
	}
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, nil, err
	}
	return as, sc, nil
}

func (r *Reader) project(cols []string) (*iceberg.Schema, error) {
	if cols == nil {
		return r.schema, nil
	}
	return SelectColumns(r.schema, cols)
}

// ErrUnknownColumn is wrapped when a column name is not in the schema.
var ErrUnknownColumn = errors.New("unknown column")

// SelectColumns returns the top-level columns cols of sc, in the order
// given. Names match exactly, else case-insensitively when that is unique.
// An unknown name is an error that lists the table's columns.
func SelectColumns(sc *iceberg.Schema, cols []string) (*iceberg.Schema, error) {
	fields := make([]iceberg.NestedField, 0, len(cols))
	seen := map[int]bool{}
	for _, c := range cols {
		f, ok := findTop(sc, c)
		if !ok {
			return nil, fmt.Errorf("%w %q (columns: %s)", ErrUnknownColumn, c, columnList(sc))
		}
		if seen[f.ID] {
			return nil, fmt.Errorf("column %q selected twice", c)
		}
		seen[f.ID] = true
		fields = append(fields, f)
	}
	return iceberg.NewSchema(sc.ID, fields...), nil
}

func findTop(sc *iceberg.Schema, name string) (iceberg.NestedField, bool) {
	for _, f := range sc.Fields() {
		if f.Name == name {
			return f, true
		}
	}
	var found iceberg.NestedField
	n := 0
	for _, f := range sc.Fields() {
		if strings.EqualFold(f.Name, name) {
			found = f
			n++
		}
	}
	return found, n == 1
}

func columnList(sc *iceberg.Schema) string {
	names := make([]string, len(sc.Fields()))
	for i, f := range sc.Fields() {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// DeleteSet is what a set of delete files removes from one data file:
// positions (position deletes and deletion vectors) and equality keys.
type DeleteSet struct {
	Positions *roaring64.Bitmap
	eq        []*eqDeletes
}

// Empty reports whether the set removes nothing.
func (d *DeleteSet) Empty() bool {
	return d == nil || ((d.Positions == nil || d.Positions.IsEmpty()) && len(d.eq) == 0)
}

// EqualityFieldIDs returns the field IDs that equality deletes of this set
// compare; rows must be read with these columns to evaluate Deleted.
func (d *DeleteSet) EqualityFieldIDs() []int {
	if d == nil {
		return nil
	}
	seen := map[int]bool{}
	var out []int
	for _, e := range d.eq {
		for _, id := range e.fieldIDs {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// LoadDeletes loads the delete files d that apply to data file df.
func (r *Reader) LoadDeletes(ctx context.Context, df iceberg.DataFile, d Deletes) (*DeleteSet, error) {
	ds := &DeleteSet{}
	path := df.FilePath()
	if len(d.Pos) > 0 || d.DV != nil {
		ds.Positions = roaring64.New()
	}
	for _, pf := range d.Pos {
		p, err := r.posDeletes(ctx, pf)
		if err != nil {
			return nil, err
		}
		if bm := p.by[path]; bm != nil {
			ds.Positions.Or(bm)
		}
	}
	if d.DV != nil {
		bm, err := readDV(r.fs, d.DV)
		if err != nil {
			return nil, fmt.Errorf("%w: table %s: deletion vector %s for data file %s: %w", ErrInvalidDeleteFile, r.checked.table, d.DV.FilePath(), path, err)
		}
		for p := range bm.Positions() {
			ds.Positions.Add(p)
		}
	}
	for _, ef := range d.Eq {
		e, err := r.eqDeletes(ctx, ef)
		if err != nil {
			return nil, err
		}
		ds.eq = append(ds.eq, e)
	}
	return ds, nil
}

func (r *Reader) posDeletes(ctx context.Context, pf iceberg.DataFile) (*posFile, error) {
	r.mu.Lock()
	p, ok := r.pos[pf.FilePath()]
	if !ok {
		p = &posFile{}
		r.pos[pf.FilePath()] = p
	}
	r.mu.Unlock()
	p.once.Do(func() {
		r.checked.expect(pf)
		p.by, p.err = readPositionDeletes(ctx, r.checked, pf)
	})
	return p, p.err
}

func readPositionDeletes(ctx context.Context, fs iceio.IO, pf iceberg.DataFile) (_ map[string]*roaring64.Bitmap, err error) {
	if pf.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("%w: position delete file %s has format %s; floe reads Parquet position deletes", ErrInvalidDeleteFile, pf.FilePath(), pf.FileFormat())
	}
	defer func() {
		// NB: the footer is checked (footerIO); a damaged page can still
		// make the decoder panic, here in the caller's goroutine.
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: position delete file %s: the decoder failed: %v", ErrInvalidDeleteFile, pf.FilePath(), p)
		}
	}()
	f, err := fs.Open(pf.FilePath())
	if err != nil {
		return nil, fmt.Errorf("open position delete file %s: %w", pf.FilePath(), err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		if ce := corruptFile(err); ce != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidDeleteFile, ce)
		}
		return nil, fmt.Errorf("%w: position delete file %s: %w", ErrInvalidDeleteFile, pf.FilePath(), err)
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%w: position delete file %s: %w", ErrInvalidDeleteFile, pf.FilePath(), err)
	}
	sc := pr.MetaData().Schema
	pathCol, posCol := sc.ColumnIndexByName("file_path"), sc.ColumnIndexByName("pos")
	if pathCol < 0 || posCol < 0 {
		return nil, fmt.Errorf("%w: position delete file %s lacks file_path/pos columns", ErrInvalidDeleteFile, pf.FilePath())
	}
	rr, err := fr.GetRecordReader(ctx, []int{pathCol, posCol}, nil)
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", pf.FilePath(), err)
	}
	defer rr.Release()
	out := map[string]*roaring64.Bitmap{}
	for rr.Next() {
		rec := rr.RecordBatch()
		paths, ok1 := rec.Column(0).(*array.String)
		poss, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: position delete file %s: file_path must be string and pos long", ErrInvalidDeleteFile, pf.FilePath())
		}
		var last string
		var bm *roaring64.Bitmap
		for i := 0; i < int(rec.NumRows()); i++ {
			p := paths.Value(i)
			if bm == nil || p != last {
				bm = out[p]
				if bm == nil {
					bm = roaring64.New()
					out[p] = bm
				}
				last = p
			}
			bm.Add(uint64(poss.Value(i)))
		}
	}
	if err := rr.Err(); err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", pf.FilePath(), err)
	}
	return out, nil
}

func (r *Reader) eqDeletes(ctx context.Context, ef iceberg.DataFile) (*eqDeletes, error) {
	r.mu.Lock()
	e, ok := r.eq[ef.FilePath()]
	if !ok {
		e = &eqDeletes{fieldIDs: ef.EqualityFieldIDs()}
		r.eq[ef.FilePath()] = e
	}
	r.mu.Unlock()
	e.once.Do(func() { e.err = r.loadEq(ctx, ef, e) })
	return e, e.err
}

func (r *Reader) loadEq(ctx context.Context, ef iceberg.DataFile, e *eqDeletes) error {
	if len(e.fieldIDs) == 0 {
		return fmt.Errorf("%w: equality delete file %s has no equality field ids", ErrInvalidDeleteFile, ef.FilePath())
	}
	names := make([]string, len(e.fieldIDs))
	for i, id := range e.fieldIDs {
		n, ok := r.schema.FindColumnName(id)
		if !ok {
			// A dropped column: Iceberg readers cannot apply this delete.
			return fmt.Errorf("%w: equality delete file %s uses field id %d, which is not in the schema", ErrInvalidDeleteFile, ef.FilePath(), id)
		}
		names[i] = n
	}
	e.keys = map[string]struct{}{}
	var buf []byte
	for b, err := range r.raw(ctx, ef, names, nil, nil) {
		if ce := corruptFile(err); ce != nil {
			return fmt.Errorf("%w: %w", ErrInvalidDeleteFile, ce) // it names the file
		}
		if err != nil {
			return fmt.Errorf("read equality delete file %s: %w", ef.FilePath(), err)
		}
		// The reader returns columns in schema order; key them in
		// equality-field order, as Deleted does for data rows.
		cols := make([]int, len(names))
		for i, n := range names {
			idx := b.Rec.Schema().FieldIndices(n)
			if len(idx) != 1 {
				b.Release()
				return fmt.Errorf("%w: equality delete file %s: column %s not found", ErrInvalidDeleteFile, ef.FilePath(), n)
			}
			cols[i] = idx[0]
		}
		for i := 0; i < int(b.Rec.NumRows()); i++ {
			buf = rows.AppendKey(buf[:0], b.Rec, cols, i)
			e.keys[string(buf)] = struct{}{}
		}
		b.Release()
	}
	return nil
}

// Deleted reports, for row i of rec at file position pos, whether the set
// removes it. rec must hold the columns named by cols for the set's
// equality field IDs (see EqualityFieldIDs): colOf maps a field ID to its
// column index in rec.
func (d *DeleteSet) Deleted(rec arrow.RecordBatch, colOf map[int]int, i int, pos int64, buf []byte) (bool, []byte) {
	if d == nil {
		return false, buf
	}
	if d.Positions != nil && d.Positions.Contains(uint64(pos)) {
		return true, buf
	}
	for _, e := range d.eq {
		buf = buf[:0]
		for _, id := range e.fieldIDs {
			buf = rows.AppendValue(buf, rec.Column(colOf[id]), i)
		}
		if _, ok := e.keys[string(buf)]; ok {
			return true, buf
		}
	}
	return false, buf
}

// raw reads a file (data or equality delete) projected onto names, in file
// order, with no deletes applied. A data file whose columns are stored as
// the schema has them is read directly (see direct: through small buffers
// rather than whole column chunks). Otherwise it relies on iceberg-go's
// reader for the projection by field ID, type promotion and name mapping,
// giving it one task with no delete files and no filter so that rows keep
// their order.
//
// With lin, the _row_id and _last_updated_sequence_number columns names
// may ask for are filled from the file's row-lineage constants where the
// file does not store them (or stores NULL): by direct, or by iceberg-go
// from the task's constants.
func (r *Reader) raw(ctx context.Context, df iceberg.DataFile, names []string, lin *Lineage, where iceberg.BooleanExpression) iter.Seq2[Batch, error] {
	return func(yield func(Batch, error) bool) {
		if seq, ok := r.direct(ctx, df, names, lin, where); ok {
			seq(yield)
			return
		}
		// iceberg-go v0.7 cannot read a file projected onto no column it
		// stores ("no leaf column readers matched"), as the lineage columns
		// alone of a file that does not store them are: one more column is
		// read with them, the cheapest, and left out of the output below.
		selected := names
		if lin != nil && onlyLineage(names) {
			selected = append(slices.Clone(names), cheapColumn(r.schema))
		}
		opts := []table.ScanOption{table.WithSelectedFields(selected...), table.WithArrowBatchSize(r.batchSize), table.WithMaxConcurrency(1)}
		if r.snapshotID != nil {
			opts = append(opts, table.WithSnapshotID(*r.snapshotID))
		}
		r.checked.expect(df)
		sc := r.view.Scan(opts...)
		task := table.FileScanTask{File: df, Start: 0, Length: df.FileSizeBytes()}
		if lin != nil {
			first, seq := lin.FirstRowID, lin.DataSeq
			task.FirstRowID, task.DataSequenceNumber = &first, &seq
		}
		_, it, err := sc.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			yield(Batch{}, r.readError(df, err))
			return
		}
		var next int64
		var order []int
		for rec, err := range it {
			if err != nil {
				yield(Batch{}, r.readError(df, err))
				return
			}
			// The reader returns columns in schema order; give them in the
			// order asked for.
			if order == nil {
				order = make([]int, len(names))
				inOrder := int(rec.NumCols()) == len(names)
				for i, n := range names {
					idx := rec.Schema().FieldIndices(n)
					if len(idx) != 1 {
						rec.Release()
						yield(Batch{}, fmt.Errorf("read %s: column %s missing from the reader's output", df.FilePath(), n))
						return
					}
					order[i] = idx[0]
					inOrder = inOrder && idx[0] == i
				}
				if inOrder {
					order = order[:0]
				}
			}
			if len(order) > 0 {
				fields := make([]arrow.Field, len(order))
				for i, c := range order {
					fields[i] = rec.Schema().Field(c)
				}
				re := rows.Project(rec, arrow.NewSchema(fields, nil), order)
				rec.Release()
				rec = re
			}
			pos := positions(next, rec.NumRows())
			next += rec.NumRows()
			if !yield(Batch{Rec: rec, Pos: pos}, nil) {
				return
			}
		}
	}
}

// PositionDeletePaths lists the data files a position delete file refers
// to (loading and caching it).
func (r *Reader) PositionDeletePaths(ctx context.Context, pf iceberg.DataFile) ([]string, error) {
	p, err := r.posDeletes(ctx, pf)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(p.by))
	for path := range p.by {
		out = append(out, path)
	}
	return out, nil
}

// positions are the file positions of a batch of n rows starting at next.
func positions(next, n int64) []int64 {
	pos := make([]int64, n)
	for i := range pos {
		pos[i] = next + int64(i)
	}
	return pos
}

// onlyLineage reports whether names are only lineage columns.
func onlyLineage(names []string) bool {
	for _, n := range names {
		if n != iceberg.RowID().Name && n != iceberg.LastUpdatedSequenceNumber().Name {
			return false
		}
	}
	return true
}

// cheapColumn names the top-level column of sc that is cheapest to decode
// and most likely stored in every file: of the primitive fixed-width
// columns (else of all), the one with the lowest field id, the oldest.
func cheapColumn(sc *iceberg.Schema) string {
	var best iceberg.NestedField
	bestFixed := false
	for i, f := range sc.Fields() {
		fixed := false
		switch f.Type.(type) {
		case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
			iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType:
			fixed = true
		}
		if i == 0 || (fixed && !bestFixed) || (fixed == bestFixed && f.ID < best.ID) {
			best, bestFixed = f, fixed
		}
	}
	return best.Name
}
