package delta

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// logState is the result of replaying a log segment.
type logState struct {
	version  int64
	protocol *Protocol
	metadata *Metadata
	// files are the live add actions keyed by location and deletion vector.
	files map[string]*liveFile
	txns  map[string]Txn
}

type liveFile struct {
	add      *AddFile
	location string
}

// replay rebuilds the table state of a segment: the newest protocol and
// metaData win, an add makes (path, deletion vector) live and a remove of the
// same pair ends it. With filesToo false only protocol, metadata and txn are
// rebuilt.
func (t *Table) replay(ctx context.Context, seg *logSegment, filesToo bool) (*logState, error) {
	st := &logState{version: seg.version, files: map[string]*liveFile{}, txns: map[string]Txn{}}
	apply := func(a *action, where string) error {
		switch {
		case a.Protocol != nil:
			st.protocol = a.Protocol
		case a.MetaData != nil:
			st.metadata = a.MetaData
		case a.Txn != nil:
			st.txns[a.Txn.AppID] = *a.Txn
		case a.Add != nil && filesToo:
			loc, err := t.root.resolve(a.Add.Path)
			if err != nil {
				return fmt.Errorf("%s: add %q: %w", where, a.Add.Path, err)
			}
			st.files[loc+"\x00"+a.Add.DeletionVector.UniqueID()] = &liveFile{add: a.Add, location: loc}
		case a.Remove != nil && filesToo:
			loc, err := t.root.resolve(a.Remove.Path)
			if err != nil {
				return fmt.Errorf("%s: remove %q: %w", where, a.Remove.Path, err)
			}
			delete(st.files, loc+"\x00"+a.Remove.DeletionVector.UniqueID())
		}
		return nil
	}
	if seg.checkpoint != nil {
		where := fmt.Sprintf("checkpoint %d of table %s", seg.checkpoint.version, t.root)
		if err := t.readCheckpoint(ctx, seg.checkpoint, filesToo, func(a *action) error { return apply(a, where) }); err != nil {
			return nil, err
		}
	}
	for i, fi := range seg.commits {
		where := fmt.Sprintf("table %s version %d", t.root, seg.versions[i])
		err := t.readJSONActions(ctx, fi, filesToo, func(line int, a *action) error {
			return apply(a, fmt.Sprintf("%s line %d", where, line))
		})
		if err != nil {
			return nil, err
		}
	}
	if st.protocol == nil {
		return nil, fmt.Errorf("%w: table %s has no protocol action up to version %d", ErrCorruptLog, t.root, seg.version)
	}
	if st.metadata == nil {
		return nil, fmt.Errorf("%w: table %s has no metaData action up to version %d", ErrCorruptLog, t.root, seg.version)
	}
	return st, nil
}

// Snapshot is the state of a table at one version: protocol, metadata,
// schema and live data files. It is immutable and safe for concurrent use.
type Snapshot struct {
	table    *Table
	version  int64
	protocol Protocol
	metadata Metadata
	schema   *StructType
	files    []liveFile
	txns     map[string]Txn
}

func (t *Table) newSnapshot(st *logState) (*Snapshot, error) {
	if err := t.checkProtocol(st.protocol, st.version); err != nil {
		return nil, err
	}
	schema, err := ParseSchema(st.metadata.SchemaString)
	if err != nil {
		return nil, fmt.Errorf("table %s version %d: %w", t.root, st.version, err)
	}
	s := &Snapshot{table: t, version: st.version, protocol: *st.protocol, metadata: *st.metadata, schema: schema, txns: st.txns}
	s.files = make([]liveFile, 0, len(st.files))
	for _, f := range st.files {
		s.files = append(s.files, *f)
	}
	sort.Slice(s.files, func(i, j int) bool {
		if s.files[i].location != s.files[j].location {
			return s.files[i].location < s.files[j].location
		}
		return s.files[i].add.DeletionVector.UniqueID() < s.files[j].add.DeletionVector.UniqueID()
	})
	return s, nil
}

// Version returns the snapshot's version.
func (s *Snapshot) Version() int64 { return s.version }

// Protocol returns the protocol in force at this version.
func (s *Snapshot) Protocol() Protocol { return s.protocol }

// Metadata returns the metaData in force at this version.
func (s *Snapshot) Metadata() Metadata { return s.metadata }

// Schema returns the table schema (logical names) at this version.
func (s *Snapshot) Schema() *StructType { return s.schema }

// PartitionColumns returns the logical names of the partition columns.
func (s *Snapshot) PartitionColumns() []string {
	return append([]string(nil), s.metadata.PartitionColumns...)
}

// ColumnMappingMode returns the column mapping mode at this version.
func (s *Snapshot) ColumnMappingMode() ColumnMappingMode { return s.metadata.ColumnMappingMode() }

// ChangeDataFeedEnabled reports whether delta.enableChangeDataFeed is true at
// this version.
func (s *Snapshot) ChangeDataFeedEnabled() bool { return s.metadata.ChangeDataFeedEnabled() }

// ArrowSchema returns the Arrow schema Scan produces when no columns are
// projected. It fails with ErrUnsupportedFeature for a column type this
// package cannot read.
func (s *Snapshot) ArrowSchema() (*arrow.Schema, error) { return ArrowSchema(s.schema) }

// Files returns copies of the live add actions, sorted by location. Paths
// are as written in the log; Table.FileLocation resolves them.
func (s *Snapshot) Files() []AddFile {
	out := make([]AddFile, len(s.files))
	for i, f := range s.files {
		out[i] = *f.add
	}
	return out
}

// NumFiles returns the number of live data files.
func (s *Snapshot) NumFiles() int { return len(s.files) }

// TransactionVersion returns the latest version recorded by a txn action of
// application appID, and whether there is one.
func (s *Snapshot) TransactionVersion(appID string) (int64, bool) {
	t, ok := s.txns[appID]
	return t.Version, ok
}
