// Package scan reads Iceberg tables at the level floe needs: which files a
// snapshot holds and which delete files apply to each (plan, metadata
// only), and the rows of single data files with their positions, with a
// chosen set of deletes applied and identity-partition columns filled from
// the manifests (read). Changelogs, copy-on-write rewrites and merges build
// on these primitives; plain table scans use them too so that every path
// applies deletes the same way.
package scan

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Entry is a live file of a snapshot: a data file or a delete file, with
// the sequence numbers and snapshot that Iceberg's manifests record for it.
type Entry struct {
	File       iceberg.DataFile
	DataSeq    int64 // data sequence number
	SnapshotID int64 // the snapshot that added the file
}

// Path is the file's location.
func (e *Entry) Path() string { return e.File.FilePath() }

// Deletes is the set of delete files that apply to one data file.
type Deletes struct {
	Pos []iceberg.DataFile // position delete files (may cover other data files too)
	DV  iceberg.DataFile   // the deletion vector, or nil
	Eq  []iceberg.DataFile // equality delete files
}

// Empty reports whether no delete file applies.
func (d Deletes) Empty() bool { return len(d.Pos) == 0 && d.DV == nil && len(d.Eq) == 0 }

// Key identifies the set of delete files, for comparing two states.
func (d Deletes) Key() string {
	var parts []string
	for _, f := range d.Pos {
		parts = append(parts, "p:"+f.FilePath())
	}
	if d.DV != nil {
		parts = append(parts, fmt.Sprintf("d:%s@%d", d.DV.FilePath(), offsetOf(d.DV)))
	}
	for _, f := range d.Eq {
		parts = append(parts, "e:"+f.FilePath())
	}
	sort.Strings(parts)
	return strings.Join(parts, "|")
}

func offsetOf(f iceberg.DataFile) int64 {
	if o := f.ContentOffset(); o != nil {
		return *o
	}
	return -1
}

// State is the set of live files of one snapshot, indexed so that the
// delete files applying to a data file are found quickly.
type State struct {
	Snapshot *table.Snapshot
	Data     []*Entry
	byPath   map[string]*Entry
	posByP   map[string][]*Entry // position deletes by spec+partition
	eqByP    map[string][]*Entry // equality deletes by spec+partition
	eqGlobal []*Entry            // equality deletes of unpartitioned specs
	dvs      map[string][]*Entry // deletion vectors by referenced data file
	specs    map[int]iceberg.PartitionSpec
	Deletes  []*Entry // every live delete file
}

// LoadState reads the manifests of snap and indexes its live files. A nil
// snapshot gives an empty state.
func LoadState(ctx context.Context, fs iceio.IO, meta table.Metadata, snap *table.Snapshot) (*State, error) {
	return loadState(ctx, fs, meta, snap, nil)
}

func newState(meta table.Metadata, snap *table.Snapshot) *State {
	st := &State{
		Snapshot: snap,
		byPath:   map[string]*Entry{},
		posByP:   map[string][]*Entry{},
		eqByP:    map[string][]*Entry{},
		dvs:      map[string][]*Entry{},
		specs:    map[int]iceberg.PartitionSpec{},
	}
	for _, s := range meta.PartitionSpecs() {
		st.specs[s.ID()] = s
	}
	return st
}

func (st *State) add(e *Entry) {
	df := e.File
	switch df.ContentType() {
	case iceberg.EntryContentData:
		st.Data = append(st.Data, e)
		st.byPath[df.FilePath()] = e
	case iceberg.EntryContentPosDeletes:
		st.Deletes = append(st.Deletes, e)
		if table.IsDeletionVector(df) {
			if ref := df.ReferencedDataFile(); ref != nil {
				st.dvs[*ref] = append(st.dvs[*ref], e)
			}
			return
		}
		k := partKey(df)
		st.posByP[k] = append(st.posByP[k], e)
	case iceberg.EntryContentEqDeletes:
		st.Deletes = append(st.Deletes, e)
		if spec, ok := st.specs[int(df.SpecID())]; ok && spec.IsUnpartitioned() {
			st.eqGlobal = append(st.eqGlobal, e)
			return
		}
		k := partKey(df)
		st.eqByP[k] = append(st.eqByP[k], e)
	}
}

// DataFile returns the live data file with the given path.
func (st *State) DataFile(path string) (*Entry, bool) {
	e, ok := st.byPath[path]
	return e, ok
}

// partKey identifies a (spec, partition tuple) pair.
func partKey(df iceberg.DataFile) string {
	p := df.Partition()
	ids := make([]int, 0, len(p))
	for id := range p {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", df.SpecID())
	for _, id := range ids {
		fmt.Fprintf(&b, "|%d=%#v", id, p[id])
	}
	return b.String()
}

// DeletesFor returns the delete files of this state that apply to data
// file e, following the spec's rules: a position delete file or deletion
// vector applies when its data sequence number is at least the data file's
// and it is in the same partition (a deletion vector or a position file with
// a referenced data file only to that file); an equality delete file applies
// when its data sequence number is strictly greater and it is in the same
// partition or in an unpartitioned spec.
func (st *State) DeletesFor(e *Entry) Deletes {
	var d Deletes
	path := e.Path()
	for _, p := range st.posByP[partKey(e.File)] {
		if p.DataSeq < e.DataSeq {
			continue
		}
		if ref := p.File.ReferencedDataFile(); ref != nil && *ref != path {
			continue
		}
		if !pathInBounds(p.File, path) {
			continue
		}
		d.Pos = append(d.Pos, p.File)
	}
	var best *Entry
	for _, dv := range st.dvs[path] {
		if dv.DataSeq < e.DataSeq {
			continue
		}
		if best == nil || dv.DataSeq > best.DataSeq {
			best = dv
		}
	}
	if best != nil {
		d.DV = best.File
	}
	for _, q := range st.eqByP[partKey(e.File)] {
		if q.DataSeq > e.DataSeq {
			d.Eq = append(d.Eq, q.File)
		}
	}
	for _, q := range st.eqGlobal {
		if q.DataSeq > e.DataSeq {
			d.Eq = append(d.Eq, q.File)
		}
	}
	return d
}

// filePathFieldID is the field ID of file_path in position delete files.
const filePathFieldID = 2147483546

// pathInBounds uses a position delete file's file_path bounds, when
// recorded, to rule it out for a data file.
func pathInBounds(pos iceberg.DataFile, path string) bool {
	lo, hasLo := pos.LowerBoundValues()[filePathFieldID]
	hi, hasHi := pos.UpperBoundValues()[filePathFieldID]
	if hasLo && path < string(lo) {
		return false
	}
	// Upper bounds of strings may be truncated and then incremented, so a
	// path above the bound is only ruled out when the bound is exact-length
	// or longer; comparing prefixes keeps this conservative.
	if hasHi {
		h := string(hi)
		p := path
		if len(p) > len(h) {
			p = p[:len(h)]
		}
		if p > h {
			return false
		}
	}
	return true
}

// SamePartitionOrGlobal reports whether equality delete file d can apply
// to data file e by partition: the same spec and partition, or d in an
// unpartitioned spec.
func SamePartitionOrGlobal(st *State, e, d *Entry) bool {
	if spec, ok := st.specs[int(d.File.SpecID())]; ok && spec.IsUnpartitioned() {
		return true
	}
	return partKey(e.File) == partKey(d.File)
}
