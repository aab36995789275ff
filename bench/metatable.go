package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// MetaColumns is the schema of the metadata-scale tables: an identity
// partition column and a key unique within the table. Their key is
// (part, id), as in a table keyed by tenant and order.
const MetaColumns = "part long not null, id long not null, name string, x double"

// MetaLayout describes a table whose cost is in its metadata: many small
// data files in identity partitions, many snapshots and manifests.
//
// File g (0 <= g < Files()) is file g%FilesPerPartition of partition
// g/FilesPerPartition and holds the RowsPerFile ids
// g*RowsPerFile..(g+1)*RowsPerFile-1, so a file's key range is narrow and
// disjoint from every other file's. Snapshot k (0 <= k < Snapshots)
// appends files k*Files()/Snapshots... in order, so a snapshot and a
// manifest cover a contiguous range of partitions, as appends partitioned
// by time do. Manifests are merged as Iceberg's manifest merging does:
// each block of Snapshots/Manifests snapshots writes one small manifest per
// snapshot, and the last snapshot of the block merges them into one
// manifest (its own files ADDED, the others EXISTING); the table's current
// snapshot lists Manifests manifests. Every snapshot has its own manifest
// list, as a real table's history has.
type MetaLayout struct {
	Partitions        int
	FilesPerPartition int
	RowsPerFile       int
	Snapshots         int
	Manifests         int
	FormatVersion     int // 2 (default) or 3
}

// Files is the number of data files.
func (l MetaLayout) Files() int { return l.Partitions * l.FilesPerPartition }

// Rows is the number of rows.
func (l MetaLayout) Rows() int64 { return int64(l.Files()) * int64(l.RowsPerFile) }

// Name is a table name for the layout, such as m_p1000_f100_s5000_m500.
func (l MetaLayout) Name() string {
	return fmt.Sprintf("m_p%d_f%d_r%d_s%d_m%d_v%d", l.Partitions, l.FilesPerPartition, l.RowsPerFile, l.Snapshots, l.Manifests, l.version())
}

func (l MetaLayout) version() int {
	if l.FormatVersion == 0 {
		return 2
	}
	return l.FormatVersion
}

// Validate checks that the blocks divide evenly.
func (l MetaLayout) Validate() error {
	switch {
	case l.Partitions <= 0 || l.FilesPerPartition <= 0 || l.RowsPerFile <= 0 || l.Snapshots <= 0 || l.Manifests <= 0:
		return fmt.Errorf("bench: layout %+v: every count must be positive", l)
	case l.Files()%l.Snapshots != 0:
		return fmt.Errorf("bench: layout %+v: %d files do not divide into %d snapshots", l, l.Files(), l.Snapshots)
	case l.Snapshots%l.Manifests != 0:
		return fmt.Errorf("bench: layout %+v: %d snapshots do not divide into %d manifests", l, l.Snapshots, l.Manifests)
	case l.version() != 2 && l.version() != 3:
		return fmt.Errorf("bench: layout %+v: format version must be 2 or 3", l)
	}
	return nil
}

// FileOf returns the file (partition, index within the partition) holding
// id, or false when id is not a row of the generated table.
func (l MetaLayout) FileOf(id int64) (part, file int, ok bool) {
	if id < 0 || id >= l.Rows() {
		return 0, 0, false
	}
	g := int(id / int64(l.RowsPerFile))
	return g / l.FilesPerPartition, g % l.FilesPerPartition, true
}

// metaSeed fixes the generated values of the metadata-scale tables.
const metaSeed = 14

// MetaRows returns the rows of file g of the layout in schema
// (MetaColumns, as ArrowSchema gives it): the values bench.Batch generates
// for the file's ids, with part set to the file's partition. The same
// call gives the same rows, so an expected table can be computed without
// reading the generated one.
func (l MetaLayout) MetaRows(schema *arrow.Schema, g int) (arrow.RecordBatch, error) {
	start := int64(g) * int64(l.RowsPerFile)
	inner := arrow.NewSchema([]arrow.Field{schema.Field(1), schema.Field(2), schema.Field(3)}, nil)
	rec, err := Batch(inner, start, int64(l.RowsPerFile), metaSeed)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	pb := array.NewInt64Builder(memory.DefaultAllocator)
	defer pb.Release()
	part := int64(g / l.FilesPerPartition)
	for range l.RowsPerFile {
		pb.Append(part)
	}
	parts := pb.NewArray()
	defer parts.Release()
	return array.NewRecordBatch(schema, []arrow.Array{parts, rec.Column(0), rec.Column(1), rec.Column(2)}, rec.NumRows()), nil
}

// GenerateMeta creates table name of the layout: it writes the data files
// through iceberg-go's writer (real Parquet files with column statistics),
// then the manifests, one manifest list per snapshot, and commits every
// snapshot in one catalog commit. log, when not nil, reports progress.
func (e *Env) GenerateMeta(name string, l MetaLayout, props iceberg.Properties, log func(format string, args ...any)) (*table.Table, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = func(string, ...any) {}
	}
	all := iceberg.Properties{"format-version": strconv.Itoa(l.version())}
	for k, v := range props {
		all[k] = v
	}
	tbl, err := e.Create(name, MetaColumns, "part", all)
	if err != nil {
		return nil, err
	}
	schema, err := ArrowSchema(e.Ctx, tbl)
	if err != nil {
		return nil, err
	}
	files := make([]iceberg.DataFile, l.Files())
	start := time.Now()
	// One round writes file f of every partition: WriteRecords fans a batch
	// out to one file per partition.
	for f := range l.FilesPerPartition {
		round := func(yield func(arrow.RecordBatch, error) bool) {
			for p := range l.Partitions {
				rec, err := l.MetaRows(schema, p*l.FilesPerPartition+f)
				if !yield(rec, err) || err != nil {
					return
				}
			}
		}
		n := 0
		for df, err := range table.WriteRecords(e.Ctx, tbl, schema, round) {
			if err != nil {
				return nil, fmt.Errorf("bench: write data files of %s: %w", name, err)
			}
			p, ok := df.Partition()[1000].(int64)
			if !ok || p < 0 || int(p) >= l.Partitions {
				return nil, fmt.Errorf("bench: data file %s has partition %v", df.FilePath(), df.Partition())
			}
			g := int(p)*l.FilesPerPartition + f
			if files[g] != nil {
				return nil, fmt.Errorf("bench: partition %d got two files in round %d (%s, %s)", p, f, files[g].FilePath(), df.FilePath())
			}
			if df.Count() != int64(l.RowsPerFile) {
				return nil, fmt.Errorf("bench: data file %s has %d rows, want %d", df.FilePath(), df.Count(), l.RowsPerFile)
			}
			files[g] = df
			n++
		}
		if n != l.Partitions {
			return nil, fmt.Errorf("bench: round %d wrote %d files, want %d", f, n, l.Partitions)
		}
		if (f+1)%10 == 0 || f+1 == l.FilesPerPartition {
			log("%s: data files %d/%d (%s)", name, (f+1)*l.Partitions, l.Files(), time.Since(start).Round(time.Millisecond))
		}
	}
	updates, err := l.writeHistory(e.Ctx, tbl, files, log)
	if err != nil {
		return nil, err
	}
	reqs := []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID(table.MainBranch, nil)}
	if _, _, err := e.Cat.Iceberg().CommitTable(e.Ctx, tbl.Identifier(), reqs, updates); err != nil {
		return nil, fmt.Errorf("bench: commit the history of %s: %w", name, err)
	}
	log("%s: committed %d snapshots (%s)", name, l.Snapshots, time.Since(start).Round(time.Millisecond))
	return e.Load(name)
}

// MetaSnapshotID is the id of snapshot k of a generated table.
func MetaSnapshotID(k int) int64 { return 1_000_000 + int64(k) }

// writeHistory writes the manifests and manifest lists of every snapshot
// and returns the catalog updates adding them.
func (l MetaLayout) writeHistory(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, log func(string, ...any)) ([]table.Update, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("bench: table %s is read-only", tbl.Identifier())
	}
	lp, err := tbl.LocationProvider()
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	spec := meta.PartitionSpec()
	sc := meta.CurrentSchema()
	v := l.version()
	perSnap := l.Files() / l.Snapshots
	block := l.Snapshots / l.Manifests
	// Snapshot times follow the table's creation, a millisecond apart.
	base := tbl.Metadata().LastUpdatedMillis() + 1
	var merged, small []iceberg.ManifestFile
	var updates []table.Update
	var totalRows int64
	var firstRowID int64
	start := time.Now()
	for k := range l.Snapshots {
		id, seq := MetaSnapshotID(k), int64(k+1)
		var entries []iceberg.ManifestEntry
		var addedRows int64
		for _, df := range files[k*perSnap : (k+1)*perSnap] {
			entries = append(entries, iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, &seq, &seq, df))
			addedRows += df.Count()
		}
		last := (k+1)%block == 0
		if last {
			// Merge the block's small manifests: their files stay as
			// EXISTING entries with the snapshot and sequence numbers they
			// were added with.
			blockStart := k + 1 - block
			for j := blockStart; j < k; j++ {
				sid, sseq := MetaSnapshotID(j), int64(j+1)
				for _, df := range files[j*perSnap : (j+1)*perSnap] {
					entries = append(entries, iceberg.NewManifestEntry(iceberg.EntryStatusEXISTING, &sid, &sseq, &sseq, df))
				}
			}
		}
		mf, err := writeManifest(wfs, lp.NewMetadataLocation(fmt.Sprintf("gen-m%d.avro", k)), v, spec, sc, id, seq, entries)
		if err != nil {
			return nil, err
		}
		var list []iceberg.ManifestFile
		if last {
			merged = append(merged, mf)
			small = small[:0]
			list = append(list, merged...)
		} else {
			small = append(small, mf)
			list = append(append(list, merged...), small...)
		}
		listPath := lp.NewMetadataLocation(fmt.Sprintf("snap-%d-gen.avro", id))
		out, err := wfs.Create(listPath)
		if err != nil {
			return nil, err
		}
		var parent *int64
		if k > 0 {
			p := MetaSnapshotID(k - 1)
			parent = &p
		}
		if err := iceberg.WriteManifestList(v, out, id, parent, &seq, firstRowID, list); err != nil {
			out.Close()
			return nil, fmt.Errorf("bench: write manifest list %s: %w", listPath, err)
		}
		if err := out.Close(); err != nil {
			return nil, err
		}
		totalRows += addedRows
		snap := &table.Snapshot{
			SnapshotID:       id,
			ParentSnapshotID: parent,
			SequenceNumber:   seq,
			TimestampMs:      base + int64(k),
			ManifestList:     listPath,
			Summary: &table.Summary{Operation: table.OpAppend, Properties: iceberg.Properties{
				"added-data-files":       strconv.Itoa(perSnap),
				"added-records":          strconv.FormatInt(addedRows, 10),
				"added-files-size":       "0",
				"total-data-files":       strconv.Itoa((k + 1) * perSnap),
				"total-records":          strconv.FormatInt(totalRows, 10),
				"total-delete-files":     "0",
				"total-position-deletes": "0",
				"total-equality-deletes": "0",
				"total-files-size":       "0",
			}},
		}
		sid := sc.ID
		snap.SchemaID = &sid
		if v >= 3 {
			fr, ar := firstRowID, addedRows
			snap.FirstRowID, snap.AddedRows = &fr, &ar
			firstRowID += addedRows
		}
		updates = append(updates, table.NewAddSnapshotUpdate(snap))
		if (k+1)%500 == 0 {
			log("%s: snapshots %d/%d (%s)", tbl.Identifier(), k+1, l.Snapshots, time.Since(start).Round(time.Millisecond))
		}
	}
	updates = append(updates, table.NewSetSnapshotRefUpdate(table.MainBranch, MetaSnapshotID(l.Snapshots-1), table.BranchRef, -1, -1, -1))
	return updates, nil
}

func writeManifest(wfs iceio.WriteFileIO, path string, version int, spec iceberg.PartitionSpec, sc *iceberg.Schema, id, seq int64, entries []iceberg.ManifestEntry) (iceberg.ManifestFile, error) {
	out, err := wfs.Create(path)
	if err != nil {
		return nil, err
	}
	mf, err := iceberg.WriteManifest(path, out, version, spec, sc, id, entries)
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("bench: write manifest %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	// The manifest list records the sequence number the manifest was added
	// with; later lists keep it.
	minSeq := seq
	for _, e := range entries {
		minSeq = min(minSeq, e.SequenceNum())
	}
	return iceberg.NewManifestFile(version, path, mf.Length(), mf.PartitionSpecID(), id).
		SequenceNum(seq, minSeq).
		AddedFiles(mf.AddedDataFiles()).ExistingFiles(mf.ExistingDataFiles()).
		AddedRows(mf.AddedRows()).ExistingRows(mf.ExistingRows()).
		Partitions(mf.Partitions()).Build(), nil
}
