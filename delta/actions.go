package delta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Protocol is the protocol action: the reader and writer versions and, from
// reader version 3 and writer version 7, the table features in use.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`         // protocol version a reader needs
	MinWriterVersion int      `json:"minWriterVersion"`         // protocol version a writer needs
	ReaderFeatures   []string `json:"readerFeatures,omitempty"` // table features a reader needs (reader version 3)
	WriterFeatures   []string `json:"writerFeatures,omitempty"` // table features a writer needs (writer version 7)
}

// HasReaderFeature reports whether feature is listed in ReaderFeatures.
func (p *Protocol) HasReaderFeature(feature string) bool {
	for _, f := range p.ReaderFeatures {
		if f == feature {
			return true
		}
	}
	return false
}

// HasWriterFeature reports whether feature is listed in WriterFeatures.
func (p *Protocol) HasWriterFeature(feature string) bool {
	for _, f := range p.WriterFeatures {
		if f == feature {
			return true
		}
	}
	return false
}

// Format is the metaData.format field (provider is always "parquet").
type Format struct {
	Provider string            `json:"provider"`          // file format, "parquet"
	Options  map[string]string `json:"options,omitempty"` // format options, unused
}

// Metadata is the metaData action: table id, schema, partition columns and
// table properties.
type Metadata struct {
	ID               string            `json:"id"`                    // table id, a UUID
	Name             string            `json:"name,omitempty"`        // user-given name
	Description      string            `json:"description,omitempty"` // user-given description
	Format           Format            `json:"format"`                // data file format
	SchemaString     string            `json:"schemaString"`          // the schema as JSON; see ParseSchema
	PartitionColumns []string          `json:"partitionColumns"`      // logical names of partition columns
	Configuration    map[string]string `json:"configuration"`         // table properties (delta.*)
	CreatedTime      *int64            `json:"createdTime,omitempty"` // creation time, ms since the epoch
}

// Table properties read by this package.
const (
	propEnableCDF         = "delta.enableChangeDataFeed"
	propColumnMappingMode = "delta.columnMapping.mode"
	propEnableICT         = "delta.enableInCommitTimestamps"
)

// ChangeDataFeedEnabled reports whether delta.enableChangeDataFeed is "true"
// (case-insensitive), the test delta-spark applies (CDCReader.isCDCEnabledOnTable).
func (m *Metadata) ChangeDataFeedEnabled() bool {
	return strings.EqualFold(strings.TrimSpace(m.Configuration[propEnableCDF]), "true")
}

// ColumnMappingMode returns delta.columnMapping.mode, "none" when unset.
func (m *Metadata) ColumnMappingMode() ColumnMappingMode {
	switch ColumnMappingMode(strings.ToLower(strings.TrimSpace(m.Configuration[propColumnMappingMode]))) {
	case ColumnMappingName:
		return ColumnMappingName
	case ColumnMappingID:
		return ColumnMappingID
	}
	return ColumnMappingNone
}

// DeletionVector is a deletion vector descriptor (PROTOCOL.md "Deletion
// Vectors"): which rows of a data file are deleted.
type DeletionVector struct {
	// StorageType is "u" (file beside the table, named by a z85 UUID),
	// "p" (absolute path) or "i" (inline, z85 in PathOrInlineDV).
	StorageType    string `json:"storageType"`
	PathOrInlineDV string `json:"pathOrInlineDv"`
	// Offset is the position of the vector inside its file (absent for "i").
	Offset      *int32 `json:"offset,omitempty"`
	SizeInBytes int32  `json:"sizeInBytes"`           // size of the serialized bitmap
	Cardinality int64  `json:"cardinality"`           // number of deleted rows
	MaxRowIndex *int64 `json:"maxRowIndex,omitempty"` // highest deleted row, when written
}

// UniqueID returns the identifier the protocol uses to tell deletion vectors
// apart: storage type, path or inline data and, when present, "@offset".
func (d *DeletionVector) UniqueID() string {
	if d == nil {
		return ""
	}
	id := d.StorageType + d.PathOrInlineDV
	if d.Offset != nil {
		id += "@" + strconv.FormatInt(int64(*d.Offset), 10)
	}
	return id
}

// AddFile is the add action: a data file that is part of the table, with its
// partition values (keyed by physical column name, nil for NULL) and its
// deletion vector.
type AddFile struct {
	Path                    string             `json:"path"`                              // URI relative to the root (percent-encoded) or absolute
	PartitionValues         map[string]*string `json:"partitionValues"`                   // serialized values by physical column name
	Size                    int64              `json:"size"`                              // file size in bytes
	ModificationTime        int64              `json:"modificationTime"`                  // ms since the epoch
	DataChange              bool               `json:"dataChange"`                        // false for rewrites that change no data
	Stats                   string             `json:"stats,omitempty"`                   // JSON statistics (numRecords, min/max, ...)
	Tags                    map[string]string  `json:"tags,omitempty"`                    // writer tags
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`          // deleted rows, nil when none
	BaseRowID               *int64             `json:"baseRowId,omitempty"`               // row tracking
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"` // row tracking
	ClusteringProvider      string             `json:"clusteringProvider,omitempty"`      // liquid clustering
}

// RemoveFile is the remove action: a data file (or one deletion vector
// state of it) that is no longer part of the table.
type RemoveFile struct {
	Path                 string             `json:"path"`                           // as in AddFile
	DeletionTimestamp    *int64             `json:"deletionTimestamp,omitempty"`    // ms since the epoch
	DataChange           bool               `json:"dataChange"`                     // false for rewrites that change no data
	ExtendedFileMetadata bool               `json:"extendedFileMetadata,omitempty"` // whether partition values, size and tags are set
	PartitionValues      map[string]*string `json:"partitionValues,omitempty"`      // as in AddFile, when extended
	Size                 *int64             `json:"size,omitempty"`                 // file size, when extended
	Tags                 map[string]string  `json:"tags,omitempty"`                 // writer tags
	DeletionVector       *DeletionVector    `json:"deletionVector,omitempty"`       // the vector of the state removed
}

// AddCDCFile is the cdc action: a change data file written by the commit.
type AddCDCFile struct {
	Path            string             `json:"path"`            // as in AddFile, usually under _change_data/
	PartitionValues map[string]*string `json:"partitionValues"` // as in AddFile
	Size            int64              `json:"size"`            // file size in bytes
	DataChange      bool               `json:"dataChange"`      // always false
	Tags            map[string]string  `json:"tags,omitempty"`  // writer tags
}

// Txn is the txn (set transaction) action: an application's progress marker.
type Txn struct {
	AppID       string `json:"appId"`                 // application id
	Version     int64  `json:"version"`               // the application's own version
	LastUpdated *int64 `json:"lastUpdated,omitempty"` // ms since the epoch
}

// sidecar is the sidecar action of a v2 checkpoint.
type sidecar struct {
	Path             string `json:"path"`
	SizeInBytes      int64  `json:"sizeInBytes"`
	ModificationTime int64  `json:"modificationTime"`
}

// rawCommitInfo is the commitInfo action as far as this package reads it.
type rawCommitInfo struct {
	Timestamp           *int64                     `json:"timestamp"`
	InCommitTimestamp   *int64                     `json:"inCommitTimestamp"`
	Operation           string                     `json:"operation"`
	OperationParameters map[string]json.RawMessage `json:"operationParameters"`
	OperationMetrics    map[string]json.RawMessage `json:"operationMetrics"`
	EngineInfo          string                     `json:"engineInfo"`
	IsBlindAppend       *bool                      `json:"isBlindAppend"`
	ReadVersion         *int64                     `json:"readVersion"`
}

// action is one line of a commit file or one row of a checkpoint. Exactly
// one field is set for a valid action.
type action struct {
	Add                *AddFile        `json:"add"`
	Remove             *RemoveFile     `json:"remove"`
	CDC                *AddCDCFile     `json:"cdc"`
	MetaData           *Metadata       `json:"metaData"`
	Protocol           *Protocol       `json:"protocol"`
	CommitInfo         *rawCommitInfo  `json:"commitInfo"`
	Txn                *Txn            `json:"txn"`
	Sidecar            *sidecar        `json:"sidecar"`
	CheckpointMetadata json.RawMessage `json:"checkpointMetadata"`
	DomainMetadata     json.RawMessage `json:"domainMetadata"`
}

// validate checks the fields a reader depends on.
func (a *action) validate() error {
	switch {
	case a.Add != nil:
		if a.Add.Path == "" {
			return fmt.Errorf("add action without path")
		}
		return validateDV(a.Add.DeletionVector)
	case a.Remove != nil:
		if a.Remove.Path == "" {
			return fmt.Errorf("remove action without path")
		}
		return validateDV(a.Remove.DeletionVector)
	case a.CDC != nil:
		if a.CDC.Path == "" {
			return fmt.Errorf("cdc action without path")
		}
	case a.MetaData != nil:
		if a.MetaData.SchemaString == "" {
			return fmt.Errorf("metaData action without schemaString")
		}
	case a.Protocol != nil:
		if a.Protocol.MinReaderVersion < 1 {
			return fmt.Errorf("protocol action with minReaderVersion %d", a.Protocol.MinReaderVersion)
		}
	case a.Sidecar != nil:
		if a.Sidecar.Path == "" {
			return fmt.Errorf("sidecar action without path")
		}
	}
	return nil
}

func validateDV(dv *DeletionVector) error {
	if dv == nil {
		return nil
	}
	switch dv.StorageType {
	case "u", "p":
		if dv.Offset == nil {
			return fmt.Errorf("deletion vector %q of storage type %q has no offset", dv.PathOrInlineDV, dv.StorageType)
		}
	case "i":
	default:
		return fmt.Errorf("deletion vector with unknown storage type %q", dv.StorageType)
	}
	if dv.SizeInBytes < 0 || dv.Cardinality < 0 {
		return fmt.Errorf("deletion vector %q with negative size or cardinality", dv.PathOrInlineDV)
	}
	return nil
}

// TimestampSource says where a commit timestamp comes from.
type TimestampSource string

// The sources of a commit timestamp, in order of precedence.
const (
	// TimestampInCommit is commitInfo.inCommitTimestamp, written when the
	// table enables In-Commit Timestamps (delta.enableInCommitTimestamps).
	TimestampInCommit TimestampSource = "inCommitTimestamp"
	// TimestampCommitInfo is commitInfo.timestamp, the writer's clock.
	TimestampCommitInfo TimestampSource = "commitInfo.timestamp"
	// TimestampFileModification is the commit file's modification time, the
	// last resort when the commit has no commitInfo.
	TimestampFileModification TimestampSource = "fileModificationTime"
)

// CommitInfo describes one commit (version) of the table.
type CommitInfo struct {
	// Version is the commit's version.
	Version int64
	// Timestamp is the commit timestamp this package uses for
	// _commit_timestamp and for timestamp bounds: commitInfo.inCommitTimestamp
	// when present, else commitInfo.timestamp, else the modification time of
	// the commit file. (Spark and kernel-rs use the file modification time
	// where delta-rs and this package use commitInfo.timestamp: file times do
	// not survive copies, git checkouts or object store migrations.)
	Timestamp time.Time
	// TimestampSource says which of the three Timestamp comes from.
	TimestampSource TimestampSource
	// Operation is commitInfo.operation ("WRITE", "MERGE", "DELETE", ...),
	// empty when the commit has no commitInfo.
	Operation string
	// OperationParameters and OperationMetrics are the commitInfo maps with
	// each value rendered as text (JSON strings unquoted).
	OperationParameters map[string]string
	OperationMetrics    map[string]string
	EngineInfo          string // the writer, e.g. "Apache-Spark/3.5.0 Delta-Lake/3.1.0"
	IsBlindAppend       *bool  // whether the commit only appended
	ReadVersion         *int64 // the version the writer read
}

func newCommitInfo(version int64, raw *rawCommitInfo, mtime time.Time) CommitInfo {
	// File times are truncated to milliseconds, the precision of the other
	// sources.
	ci := CommitInfo{Version: version, Timestamp: mtime.UTC().Truncate(time.Millisecond), TimestampSource: TimestampFileModification}
	if raw == nil {
		return ci
	}
	switch {
	case raw.InCommitTimestamp != nil:
		ci.Timestamp = time.UnixMilli(*raw.InCommitTimestamp).UTC()
		ci.TimestampSource = TimestampInCommit
	case raw.Timestamp != nil:
		ci.Timestamp = time.UnixMilli(*raw.Timestamp).UTC()
		ci.TimestampSource = TimestampCommitInfo
	}
	ci.Operation = raw.Operation
	ci.OperationParameters = rawMapToText(raw.OperationParameters)
	ci.OperationMetrics = rawMapToText(raw.OperationMetrics)
	ci.EngineInfo = raw.EngineInfo
	ci.IsBlindAppend = raw.IsBlindAppend
	ci.ReadVersion = raw.ReadVersion
	return ci
}

func rawMapToText(m map[string]json.RawMessage) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if err := json.Unmarshal(v, &s); err == nil {
			out[k] = s
			continue
		}
		out[k] = string(v)
	}
	return out
}
