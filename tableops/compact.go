package tableops

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// Compact rewrites every data file of the branch head with its delete
// files applied into new files, and drops the delete files, in one
// `replace` snapshot: the rows do not change, so changelogs and
// incremental reads report nothing for it. It commits through package
// commit (retries on conflicts, lost answers resolved, files owned).
func Compact(ctx context.Context, t Target) (*Outcome, error) {
	return CompactWith(ctx, t, CompactOptions{})
}

// CompactOptions choose what CompactWith rewrites.
type CompactOptions struct {
	// Auto rewrites only the data files the table's compaction thresholds
	// select (see CompactionPolicy); false rewrites every data file.
	Auto bool
	// Files, when set, limits the candidates to these data file paths (the
	// files a build touched or added; paths no longer live are ignored):
	// without Auto they are rewritten; with Auto those over the delete
	// thresholds are, and small files are bin-packed in the partitions
	// holding them.
	Files []string
	// Snapshot, when set, adds to Files the data files that snapshot (a
	// build's commit) added or added delete files for; when it is no
	// longer in the branch's head state nothing more is added.
	Snapshot int64
	// MergeOnReadOnly commits nothing unless one of the table's write
	// modes (write.delete.mode, write.update.mode, write.merge.mode) is
	// merge-on-read: the automatic compaction after a build.
	MergeOnReadOnly bool
	// SnapshotProperties go into the compaction snapshot's summary besides
	// floe's own (floe.operation, floe.commit-id): the automatic compaction
	// after a build repeats the build's provenance (transform, watermarks,
	// source commit times), so that the head of the output still says what
	// it was built from.
	SnapshotProperties iceberg.Properties
}

// mergeOnRead reports whether one of the table's write modes is
// merge-on-read, or auto (which writes delete files for small changes).
func mergeOnRead(props iceberg.Properties) bool {
	for _, op := range []write.Op{write.OpDelete, write.OpUpdate, write.OpMerge} {
		if m, err := write.ModeFor(props, op); err == nil && m != write.CopyOnWrite {
			return true
		}
	}
	return false
}

// touchedBy lists the data files of st that snapshot id added, or that a
// delete file it added applies to.
func touchedBy(st *scan.State, id int64) []string {
	var out []string
	added := map[string]bool{}
	for _, d := range st.Deletes {
		if d.SnapshotID == id {
			added[d.Path()] = true
		}
	}
	for _, e := range st.Data {
		if e.SnapshotID == id {
			out = append(out, e.Path())
			continue
		}
		if len(added) == 0 {
			continue
		}
		d := st.DeletesFor(e)
		hit := d.DV != nil && added[d.DV.FilePath()]
		for _, f := range append(append([]iceberg.DataFile(nil), d.Pos...), d.Eq...) {
			hit = hit || added[f.FilePath()]
		}
		if hit {
			out = append(out, e.Path())
		}
	}
	return out
}

// The table properties that bound read amplification (CompactionPolicy).
// Names follow Iceberg's rewrite_data_files options where it has one.
const (
	PropCompactionEnabled         = "floe.compaction.enabled"
	PropCompactionDeleteThreshold = "floe.compaction.delete-file-threshold"
	PropCompactionDeletedRatio    = "floe.compaction.deleted-ratio"
	PropCompactionMinFileSize     = "floe.compaction.min-file-size-bytes"
	PropCompactionMinInputFiles   = "floe.compaction.min-input-files"
	PropTargetFileSize            = "write.target-file-size-bytes"
)

// CompactionPolicy holds the thresholds of automatic (targeted)
// compaction, read from the table's properties:
//
//   - floe.compaction.enabled (default true): false turns automatic
//     compaction off (an explicit full Compact still runs).
//   - floe.compaction.delete-file-threshold (default 4): a data file with at
//     least this many delete files applying to it is rewritten (Iceberg's
//     delete-file-threshold); when it is large (not small, below) and
//     under the deleted ratio, its own position delete files are
//     rewritten into one instead (see choose).
//   - floe.compaction.deleted-ratio (default 0.2): a data file of which at
//     least this fraction of rows is deleted (by its deletion vector and
//     the position delete files naming it) is rewritten.
//   - floe.compaction.min-file-size-bytes (default 75% of
//     write.target-file-size-bytes, itself 512 MiB by default): data files
//     below it are small; when a partition has at least
//     floe.compaction.min-input-files (default 5) small files, they are
//     bin-packed into new files of the target size (Iceberg's
//     min-file-size-bytes and min-input-files).
type CompactionPolicy struct {
	Enabled             bool
	DeleteFileThreshold int
	DeletedRatio        float64
	MinFileSizeBytes    int64
	MinInputFiles       int
	TargetFileSizeBytes int64
}

// Default compaction thresholds.
const (
	DefaultCompactionDeleteThreshold = 4
	DefaultCompactionDeletedRatio    = 0.2
	DefaultCompactionMinInputFiles   = 5
	DefaultTargetFileSizeBytes       = 512 << 20
)

// PolicyFor reads the compaction thresholds from table properties; a
// malformed value is an error naming the property.
func PolicyFor(props iceberg.Properties) (CompactionPolicy, error) {
	p := CompactionPolicy{Enabled: true, DeleteFileThreshold: DefaultCompactionDeleteThreshold,
		DeletedRatio: DefaultCompactionDeletedRatio, MinInputFiles: DefaultCompactionMinInputFiles,
		TargetFileSizeBytes: DefaultTargetFileSizeBytes}
	bad := func(k, v, want string) error {
		return fmt.Errorf("table property %s=%q: want %s", k, v, want)
	}
	if v, ok := props[PropCompactionEnabled]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, bad(PropCompactionEnabled, v, "true or false")
		}
		p.Enabled = b
	}
	ints := []struct {
		key string
		dst *int64
	}{{PropTargetFileSize, &p.TargetFileSizeBytes}, {PropCompactionMinFileSize, &p.MinFileSizeBytes}}
	for _, x := range ints {
		if v, ok := props[x.key]; ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return p, bad(x.key, v, "a positive number of bytes")
			}
			*x.dst = n
		}
	}
	if _, ok := props[PropCompactionMinFileSize]; !ok {
		p.MinFileSizeBytes = p.TargetFileSizeBytes / 4 * 3
	}
	for _, x := range []struct {
		key string
		dst *int
	}{{PropCompactionDeleteThreshold, &p.DeleteFileThreshold}, {PropCompactionMinInputFiles, &p.MinInputFiles}} {
		if v, ok := props[x.key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return p, bad(x.key, v, "a whole number of at least 1")
			}
			*x.dst = n
		}
	}
	if v, ok := props[PropCompactionDeletedRatio]; ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			return p, bad(PropCompactionDeletedRatio, v, "a fraction in (0, 1]")
		}
		p.DeletedRatio = f
	}
	return p, nil
}

// deletedRows estimates the rows of e its deletes remove: the cardinality
// of its deletion vector plus the positions of the position delete files
// that name it alone (shared position delete files and equality deletes
// are counted by DeleteFileThreshold only).
func deletedRows(e *scan.Entry, d scan.Deletes) int64 {
	var n int64
	if d.DV != nil {
		n += d.DV.Count()
	}
	for _, f := range d.Pos {
		if namesOnly(f, e.Path()) {
			n += f.Count()
		}
	}
	return n
}

// namesOnly reports whether the position delete file f holds positions of
// the data file path only: by its referenced data file, or by its
// file_path bounds when the manifest kept no reference.
func namesOnly(f iceberg.DataFile, path string) bool {
	if ref := f.ReferencedDataFile(); ref != nil {
		return *ref == path
	}
	lo, hi := f.LowerBoundValues()[filePathFieldID], f.UpperBoundValues()[filePathFieldID]
	return lo != nil && string(lo) == path && string(hi) == path
}

// filePathFieldID is the field ID of file_path in position delete files.
const filePathFieldID = 2147483546

func partitionKey(e *scan.Entry) string {
	return fmt.Sprintf("%d/%v", e.File.SpecID(), e.File.Partition())
}

// fileDeletes is what the choice of a data file's compaction depends on
// (see CompactionPolicy.choose).
type fileDeletes struct {
	Rows    int64 // rows of the data file
	Deleted int64 // rows its deletion vector and own position delete files remove
	Size    int64 // file size in bytes
	Pos     int   // position delete files applying to it
	OwnPos  int   // of them, those holding positions of this file only
	DV      bool  // a deletion vector applies
	Eq      int   // equality delete files applying
	V3      bool  // the table is format version 3 or later
}

// fileChoice is what compaction does to one data file.
type fileChoice int

const (
	keepFile          fileChoice = iota // leave it (it may still be bin-packed as a small file)
	rewriteData                         // rewrite it with its deletes applied
	rewritePosDeletes                   // merge its own position delete files into one
)

func (c fileChoice) String() string {
	return [...]string{"keep", "rewrite-data", "rewrite-position-deletes"}[c]
}

// choose says what compaction does to a data file: a file at least
// DeletedRatio deleted is rewritten; a file with DeleteFileThreshold or
// more delete files is rewritten too, unless it is large (not a small-file
// candidate) and merging its own position delete files into one brings it
// under the threshold, as Iceberg's rewrite_position_delete_files does:
// that reads and writes only the deletes, not the mostly live rows. The
// merge is not done on v3 tables (their position deletes are one deletion
// vector per file already, and new v2 position delete files are not
// allowed there), nor when equality deletes or a deletion vector apply
// (an equality delete is applied only by reading the rows, so such a file
// is rewritten), nor when fewer than two own position delete files exist.
func (p CompactionPolicy) choose(f fileDeletes) fileChoice {
	nd := f.Pos + f.Eq
	if f.DV {
		nd++
	}
	if nd == 0 {
		return keepFile
	}
	if f.Rows > 0 && float64(f.Deleted)/float64(f.Rows) >= p.DeletedRatio {
		return rewriteData
	}
	if nd < p.DeleteFileThreshold {
		return keepFile
	}
	if !f.V3 && !f.DV && f.Eq == 0 && f.Size >= p.MinFileSizeBytes && f.OwnPos >= 2 && nd-f.OwnPos+1 < p.DeleteFileThreshold {
		return rewritePosDeletes
	}
	return rewriteData
}

// ownPositionDeletes lists the position delete files of d that hold
// positions of e only (the ones a merge replaces).
func ownPositionDeletes(e *scan.Entry, d scan.Deletes) []iceberg.DataFile {
	var out []iceberg.DataFile
	for _, f := range d.Pos {
		if namesOnly(f, e.Path()) {
			out = append(out, f)
		}
	}
	return out
}

// selectFiles picks the data files of st that p says to rewrite: of the
// files in only (all when nil), those over the delete thresholds; and the
// small files of every partition holding one of them, when there are
// enough to bin-pack. merge lists the files whose own position delete
// files are merged into one instead (see choose).
func (p CompactionPolicy) selectFiles(st *scan.State, only map[string]bool, v3 bool) (out, merge []*scan.Entry) {
	small := map[string][]*scan.Entry{}
	var order []string
	parts := map[string]bool{}
	for _, e := range st.Data {
		if only == nil || only[e.Path()] {
			parts[partitionKey(e)] = true
		}
	}
	for _, e := range st.Data {
		if !parts[partitionKey(e)] {
			continue
		}
		if only != nil && !only[e.Path()] {
			if e.File.FileSizeBytes() < p.MinFileSizeBytes {
				k := partitionKey(e)
				if _, ok := small[k]; !ok {
					order = append(order, k)
				}
				small[k] = append(small[k], e)
			}
			continue
		}
		d := st.DeletesFor(e)
		switch p.choose(fileDeletes{Rows: e.File.Count(), Deleted: deletedRows(e, d), Size: e.File.FileSizeBytes(),
			Pos: len(d.Pos), OwnPos: len(ownPositionDeletes(e, d)), DV: d.DV != nil, Eq: len(d.Eq), V3: v3}) {
		case rewriteData:
			out = append(out, e)
			continue
		case rewritePosDeletes:
			merge = append(merge, e)
			continue
		}
		if e.File.FileSizeBytes() < p.MinFileSizeBytes {
			k := partitionKey(e)
			if _, ok := small[k]; !ok {
				order = append(order, k)
			}
			small[k] = append(small[k], e)
		}
	}
	for _, k := range order {
		if files := tiered(small[k]); len(files) >= p.MinInputFiles {
			out = append(out, files...)
		}
	}
	return out, merge
}

// tiered drops from a partition's small files the largest while it is
// larger than twice all the others together: packing it would mostly
// rewrite its bytes again. Without this an output whose one file is below
// the small-file size (a 100 MB file under a 512 MB target) was rewritten
// whole every few builds for a handful of new rows. With it a byte is
// rewritten only when the files beside it add up to half its file's size,
// so that file grows by half at each rewrite: each byte is rewritten
// O(log n) times (as in size-tiered compaction) and the number of small
// files stays logarithmic in the partition's size.
func tiered(files []*scan.Entry) []*scan.Entry {
	bySize := slices.Clone(files)
	slices.SortStableFunc(bySize, func(a, b *scan.Entry) int {
		return cmp.Compare(b.File.FileSizeBytes(), a.File.FileSizeBytes())
	})
	var rest int64
	for _, e := range files {
		rest += e.File.FileSizeBytes()
	}
	drop := map[*scan.Entry]bool{}
	for _, e := range bySize[:len(bySize)-1] {
		big := e.File.FileSizeBytes()
		if rest -= big; big <= 2*rest {
			break
		}
		drop[e] = true
	}
	if len(drop) == 0 {
		return files
	}
	return slices.DeleteFunc(slices.Clone(files), func(e *scan.Entry) bool { return drop[e] })
}

// CompactWith is Compact limited as opts say: with opts.Auto it rewrites
// only the data files over the table's thresholds (CompactionPolicy),
// dropping their deletion vectors and the position delete files that name
// only them; nothing is committed when none is. Each attempt is computed
// from the head it read; when another writer commits first (a delete of
// rows in the files it rewrites, say), package commit retries it on the
// new head, so no concurrent change is lost.
func CompactWith(ctx context.Context, t Target, opts CompactOptions) (*Outcome, error) {
	op := "compact"
	if opts.Auto {
		op = "compact-auto"
	}
	return commitOpWith(ctx, t, op, opts.SnapshotProperties, func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		return compactOnce(ctx, tbl, t.Branch, reuse, opts)
	})
}

// compactHook, when set (by tests), runs after an attempt has read the
// rows it rewrites and before it commits.
var compactHook func()

func compactOnce(ctx context.Context, tbl *table.Table, branch string, reuse *write.Reuse, opts CompactOptions) (*write.Result, error) {
	base, err := write.BranchHead(tbl, branch)
	if err != nil {
		return nil, err
	}
	res := &write.Result{Table: tbl, Branch: branch, Base: base, Mode: write.CopyOnWrite}
	if base == nil {
		return res, nil
	}
	if opts.MergeOnReadOnly && !mergeOnRead(tbl.Properties()) {
		return res, nil
	}
	var pol CompactionPolicy
	if opts.Auto {
		if pol, err = PolicyFor(tbl.Properties()); err != nil {
			return nil, err
		}
		if !pol.Enabled {
			return res, nil
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	st, err := scan.LoadState(ctx, fs, tbl.Metadata(), base)
	if err != nil {
		return nil, err
	}
	files := st.Data
	dropDeletes := st.Deletes
	var merge []*scan.Entry
	if opts.Auto || opts.Files != nil || opts.Snapshot != 0 {
		var only map[string]bool
		if opts.Files != nil || opts.Snapshot != 0 {
			only = map[string]bool{}
			for _, f := range opts.Files {
				only[f] = true
			}
			if opts.Snapshot != 0 {
				for _, f := range touchedBy(st, opts.Snapshot) {
					only[f] = true
				}
			}
		}
		if opts.Auto {
			files, merge = pol.selectFiles(st, only, tbl.Metadata().Version() >= 3)
		} else {
			files = nil
			for _, e := range st.Data {
				if only[e.Path()] {
					files = append(files, e)
				}
			}
		}
		dropDeletes = droppable(st, files)
	}
	if len(files) == 0 && len(merge) == 0 {
		return res, nil
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return nil, err
	}
	schema, _, err := reader.ArrowSchema(nil)
	if err != nil {
		return nil, err
	}
	merged, err := mergePositionDeletes(ctx, tbl, st, reader, merge, reuse)
	if err != nil {
		return nil, err
	}
	var maxSeq int64
	stream := func(yield func(arrow.RecordBatch, error) bool) {
		for _, e := range files {
			maxSeq = max(maxSeq, e.DataSeq)
			_, seq, err := reader.Live(ctx, e.File, st.DeletesFor(e), nil)
			if err != nil {
				yield(nil, err)
				return
			}
			for b, err := range seq {
				if err != nil {
					yield(nil, err)
					return
				}
				if !yield(b.Rec, nil) {
					return
				}
			}
		}
	}
	var added []iceberg.DataFile
	if len(files) > 0 {
		added, err = write.WriteData(ctx, tbl, schema, stream)
		for _, df := range added {
			reuse.Own(df.FilePath())
		}
		if err != nil {
			return nil, err
		}
	}
	if compactHook != nil {
		compactHook()
	}
	for _, df := range added {
		res.AddData = append(res.AddData, df)
		res.RowsAdded += df.Count()
	}
	for _, e := range files {
		res.RemoveData = append(res.RemoveData, e.File)
		res.Touched = append(res.Touched, e.Path())
		res.RowsRemoved += e.File.Count()
	}
	for _, e := range dropDeletes {
		res.RemoveDeletes = append(res.RemoveDeletes, e.File)
	}
	var mergedFrom int
	for _, m := range merged {
		res.RemoveDeletes = append(res.RemoveDeletes, m.from...)
		mergedFrom += len(m.from)
		if m.to != nil {
			res.AddDeletes = append(res.AddDeletes, m.to)
		}
	}
	// The summary says what the compaction did, beside Iceberg's file
	// counts (which do not tell a merge of delete files from a rewrite).
	res.Summary = iceberg.Properties{
		"floe.compaction.rewritten-data-files":            strconv.Itoa(len(files)),
		"floe.compaction.removed-delete-files":            strconv.Itoa(len(dropDeletes)),
		"floe.compaction.delete-rewritten-data-files":     strconv.Itoa(len(merged)),
		"floe.compaction.rewritten-position-delete-files": strconv.Itoa(mergedFrom),
		"floe.compaction.added-position-delete-files":     strconv.Itoa(len(res.AddDeletes)),
	}
	res.Stager = func(ctx context.Context, tx *table.Transaction, snapshotProps iceberg.Properties) error {
		rw := tx.NewRewrite(snapshotProps)
		for _, e := range files {
			rw.DeleteFile(e.File)
		}
		if len(res.AddDeletes) == 0 {
			for _, e := range dropDeletes {
				rw.DeleteFile(e.File)
			}
		} else {
			// NB: iceberg-go counts every delete file removed through
			// DeleteFile as a source of the delete files added (their
			// sequence numbers, one content type), so the files dropped
			// because no kept data file needs them (equality deletes among
			// them) go as the automatic removals of a rewrite group.
			var g table.CompactionGroupResult
			for _, e := range dropDeletes {
				if table.IsDeletionVector(e.File) {
					g.SafeDeletionVectors = append(g.SafeDeletionVectors, e.File)
				} else {
					g.SafePosDeletes = append(g.SafePosDeletes, e.File)
				}
			}
			rw.ApplyResult(g)
		}
		for _, m := range merged {
			for _, f := range m.from {
				rw.DeleteFile(f)
			}
			if m.to != nil {
				// The merged file carries the newest sequence number of
				// the files it replaces: it still applies to its data file
				// (whose sequence number is at most theirs) and to no newer
				// one.
				rw.AddDeleteFileWithDataSequenceNumber(m.to, m.seq)
			}
		}
		for _, df := range res.AddData {
			rw.AddDataFile(df)
		}
		if len(res.AddData) > 0 {
			// The compacted rows keep the newest data sequence number of
			// the rows they came from, so that no equality delete
			// committed concurrently with an older sequence number could
			// apply to them by mistake.
			rw.DataSequenceNumber(maxSeq)
		}
		return rw.Commit(ctx)
	}
	return res, nil
}

// mergedDeletes is the merge of one data file's own position delete files
// (from) into one (to; nil when they hold no position of it), with the
// data sequence number to give it.
type mergedDeletes struct {
	data iceberg.DataFile
	from []iceberg.DataFile
	to   iceberg.DataFile
	seq  int64
}

// mergePositionDeletes writes, for each data file of merge, one position
// delete file with the union of the positions of its own position delete
// files (a position deleted twice is kept once; positions past the end of
// the file name no row and are dropped).
func mergePositionDeletes(ctx context.Context, tbl *table.Table, st *scan.State, reader *scan.Reader, merge []*scan.Entry, reuse *write.Reuse) ([]mergedDeletes, error) {
	if len(merge) == 0 {
		return nil, nil
	}
	seqOf := map[string]int64{}
	for _, d := range st.Deletes {
		seqOf[d.Path()] = d.DataSeq
	}
	var out []mergedDeletes
	for _, e := range merge {
		own := ownPositionDeletes(e, st.DeletesFor(e))
		m := mergedDeletes{data: e.File, from: own}
		for _, f := range own {
			m.seq = max(m.seq, seqOf[f.FilePath()])
		}
		ds, err := reader.LoadDeletes(ctx, e.File, scan.Deletes{Pos: own})
		if err != nil {
			return nil, err
		}
		var positions []int64
		if ds.Positions != nil {
			it := ds.Positions.Iterator()
			for it.HasNext() {
				if p := int64(it.Next()); p < e.File.Count() {
					positions = append(positions, p)
				}
			}
		}
		if len(positions) > 0 {
			f, err := write.WritePositionDeletes(ctx, tbl, e.File, positions)
			if err != nil {
				return nil, err
			}
			reuse.Own(f.FilePath())
			m.to = f
		}
		out = append(out, m)
	}
	return out, nil
}

// droppable lists the delete files that apply to no data file once files
// are rewritten (the rewritten rows have them applied already): when every
// data file is rewritten, all of them; else those that apply to no data
// file kept.
func droppable(st *scan.State, files []*scan.Entry) []*scan.Entry {
	if len(files) == len(st.Data) {
		return st.Deletes
	}
	gone := map[string]bool{}
	for _, e := range files {
		gone[e.Path()] = true
	}
	needed := map[string]bool{}
	for _, e := range st.Data {
		if gone[e.Path()] {
			continue
		}
		d := st.DeletesFor(e)
		for _, f := range d.Pos {
			needed[f.FilePath()] = true
		}
		for _, f := range d.Eq {
			needed[f.FilePath()] = true
		}
		if d.DV != nil {
			needed[d.DV.FilePath()] = true
		}
	}
	var out []*scan.Entry
	for _, d := range st.Deletes {
		if !needed[d.Path()] {
			out = append(out, d)
		}
	}
	return out
}
