// Package deltatest writes small Delta tables for tests: data files through
// pqarrow, commits as JSON lines, deletion vectors (files and inline) and
// checkpoints of the three layouts (classic, multi-part, v2 with sidecars).
// It writes exactly the actions it is given, so tests can build valid
// tables, unusual ones and broken ones alike. It also renders Arrow batches
// as rows of text for comparing results. It is not safe for concurrent use.
package deltatest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/delta"
)

// Writer writes a Delta table under Dir, one commit at a time. It tracks the
// table state (protocol, metadata, live files) it has committed so it can
// write checkpoints.
type Writer struct {
	// Dir is the table root.
	Dir string
	// Mem allocates the Arrow memory of checkpoints.
	Mem memory.Allocator
	// Int96Timestamps writes timestamp columns of data files as the
	// deprecated Parquet INT96 type, as old Spark writers do.
	Int96Timestamps bool

	next     int64
	seq      int
	protocol *delta.Protocol
	metadata *delta.Metadata
	live     map[string]delta.AddFile
	order    []string
}

// NewWriter returns a writer for a new table at dir (created if needed).
func NewWriter(dir string) (*Writer, error) {
	if err := os.MkdirAll(filepath.Join(dir, "_delta_log"), 0o755); err != nil {
		return nil, err
	}
	return &Writer{Dir: dir, Mem: memory.DefaultAllocator, live: map[string]delta.AddFile{}}, nil
}

// Version returns the last committed version, -1 before the first commit.
func (w *Writer) Version() int64 { return w.next - 1 }

// CommitInfo is the commitInfo action of a commit.
type CommitInfo struct {
	// Timestamp is written as commitInfo.timestamp (ms).
	Timestamp time.Time
	// InCommitTimestamp, when set, is written as commitInfo.inCommitTimestamp.
	InCommitTimestamp *time.Time
	Operation         string            // commitInfo.operation
	OperationMetrics  map[string]string // commitInfo.operationMetrics
}

// Raw is a commit line written verbatim (no newline), for broken logs.
type Raw string

// Commit writes the next version with the given actions, one JSON line
// each: delta.Protocol, delta.Metadata, delta.AddFile, delta.RemoveFile,
// delta.AddCDCFile, delta.Txn, CommitInfo or Raw (values or pointers). It
// returns the version written.
func (w *Writer) Commit(actions ...any) (int64, error) {
	var buf bytes.Buffer
	for _, a := range actions {
		line, err := w.encode(a)
		if err != nil {
			return 0, err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	v := w.next
	name := filepath.Join(w.Dir, "_delta_log", fmt.Sprintf("%020d.json", v))
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		return 0, err
	}
	w.next++
	return v, nil
}

func (w *Writer) encode(a any) ([]byte, error) {
	key := ""
	var val any
	switch x := a.(type) {
	case Raw:
		return []byte(x), nil
	case delta.Protocol:
		return w.encode(&x)
	case *delta.Protocol:
		key, val = "protocol", x
		w.protocol = x
	case delta.Metadata:
		return w.encode(&x)
	case *delta.Metadata:
		key, val = "metaData", x
		w.metadata = x
	case delta.AddFile:
		return w.encode(&x)
	case *delta.AddFile:
		key, val = "add", x
		k := x.Path + "\x00" + x.DeletionVector.UniqueID()
		if _, ok := w.live[k]; !ok {
			w.order = append(w.order, k)
		}
		w.live[k] = *x
	case delta.RemoveFile:
		return w.encode(&x)
	case *delta.RemoveFile:
		key, val = "remove", x
		delete(w.live, x.Path+"\x00"+x.DeletionVector.UniqueID())
	case delta.AddCDCFile:
		return w.encode(&x)
	case *delta.AddCDCFile:
		key, val = "cdc", x
	case delta.Txn:
		key, val = "txn", x
	case CommitInfo:
		return w.encode(&x)
	case *CommitInfo:
		ci := map[string]any{"timestamp": x.Timestamp.UnixMilli(), "operation": x.Operation}
		if x.InCommitTimestamp != nil {
			ci["inCommitTimestamp"] = x.InCommitTimestamp.UnixMilli()
		}
		if x.OperationMetrics != nil {
			ci["operationMetrics"] = x.OperationMetrics
		}
		key, val = "commitInfo", ci
	default:
		return nil, fmt.Errorf("deltatest: cannot commit a %T", a)
	}
	return json.Marshal(map[string]any{key: val})
}

// WriteData writes rec as the Parquet file rel (a slash-separated path
// relative to the root; directories are created) and returns an add action
// for it: path URI-encoded, dataChange true, stats with numRecords. Set
// PartitionValues and DeletionVector on the result as needed.
func (w *Writer) WriteData(rel string, rec arrow.RecordBatch) (delta.AddFile, error) {
	size, err := w.writeParquet(rel, rec)
	if err != nil {
		return delta.AddFile{}, err
	}
	stats, _ := json.Marshal(map[string]any{"numRecords": rec.NumRows()})
	return delta.AddFile{
		Path:             EncodePath(rel),
		PartitionValues:  map[string]*string{},
		Size:             size,
		ModificationTime: time.Now().UnixMilli(),
		DataChange:       true,
		Stats:            string(stats),
	}, nil
}

// WriteChangeData writes rec (which must have a _change_type column) as
// change data file rel and returns its cdc action.
func (w *Writer) WriteChangeData(rel string, rec arrow.RecordBatch) (delta.AddCDCFile, error) {
	size, err := w.writeParquet(rel, rec)
	if err != nil {
		return delta.AddCDCFile{}, err
	}
	return delta.AddCDCFile{Path: EncodePath(rel), PartitionValues: map[string]*string{}, Size: size}, nil
}

// RowGroupRows is the maximum number of rows per Parquet row group the
// writer produces.
var RowGroupRows int64 = 128 * 1024

func (w *Writer) writeParquet(rel string, rec arrow.RecordBatch) (int64, error) {
	path := filepath.Join(w.Dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(RowGroupRows))
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.NewArrowWriterProperties(
		pqarrow.WithAllocator(w.Mem), pqarrow.WithDeprecatedInt96Timestamps(w.Int96Timestamps)))
	if err != nil {
		f.Close()
		return 0, err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return 0, err
	}
	if err := fw.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// EncodePath URI-encodes a relative path the way Delta writers do (each
// segment escaped, '/' kept).
func EncodePath(rel string) string {
	parts := strings.Split(rel, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

// WriteDeletionVector writes rows as a deletion vector file (storage type
// "u": deletion_vector_<uuid>.bin at the root, version byte, big-endian
// size, bitmap, big-endian CRC-32) and returns its descriptor.
func (w *Writer) WriteDeletionVector(rows []uint64) (*delta.DeletionVector, error) {
	data, err := delta.EncodeDeletionVector(rows)
	if err != nil {
		return nil, err
	}
	w.seq++
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], uint64(time.Now().UnixNano()))
	binary.BigEndian.PutUint64(id[8:], uint64(w.seq))
	name := fmt.Sprintf("deletion_vector_%x-%x-%x-%x-%x.bin", id[0:4], id[4:6], id[6:8], id[8:10], id[10:16])
	var buf bytes.Buffer
	buf.WriteByte(1)
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	buf.Write(n[:])
	buf.Write(data)
	binary.BigEndian.PutUint32(n[:], crc32.ChecksumIEEE(data))
	buf.Write(n[:])
	if err := os.WriteFile(filepath.Join(w.Dir, name), buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	off := int32(1)
	return &delta.DeletionVector{
		StorageType:    "u",
		PathOrInlineDV: delta.EncodeZ85(id[:]),
		Offset:         &off,
		SizeInBytes:    int32(len(data)),
		Cardinality:    int64(len(dedup(rows))),
	}, nil
}

// InlineDeletionVector returns an inline ("i") deletion vector of rows,
// Z85-encoded the Delta-Java way.
func InlineDeletionVector(rows []uint64) (*delta.DeletionVector, error) {
	data, err := delta.EncodeDeletionVector(rows)
	if err != nil {
		return nil, err
	}
	return &delta.DeletionVector{
		StorageType:    "i",
		PathOrInlineDV: delta.EncodeZ85(data),
		SizeInBytes:    int32(len(data)),
		Cardinality:    int64(len(dedup(rows))),
	}, nil
}

func dedup(rows []uint64) map[uint64]bool {
	m := map[uint64]bool{}
	for _, r := range rows {
		m[r] = true
	}
	return m
}

// Str returns a pointer to s, for partition values.
func Str(s string) *string { return &s }
