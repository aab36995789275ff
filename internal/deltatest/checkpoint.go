package deltatest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/floedata/floe/delta"
)

// CheckpointKind selects a checkpoint layout.
type CheckpointKind int

// The checkpoint layouts of PROTOCOL.md.
const (
	// Classic is n.checkpoint.parquet.
	Classic CheckpointKind = iota
	// MultiPart is n.checkpoint.p.parts.parquet, Parts files.
	MultiPart
	// V2JSON is n.checkpoint.<uuid>.json with the add actions in a
	// Parquet sidecar under _delta_log/_sidecars.
	V2JSON
	// V2Parquet is n.checkpoint.<uuid>.parquet with a sidecar.
	V2Parquet
)

// Checkpoint writes a checkpoint of the last committed version from the
// state the writer tracked, and returns the files it wrote (relative to
// _delta_log). parts is the number of parts of a MultiPart checkpoint.
func (w *Writer) Checkpoint(kind CheckpointKind, parts int) ([]string, error) {
	v := w.Version()
	if v < 0 || w.protocol == nil || w.metadata == nil {
		return nil, fmt.Errorf("deltatest: nothing to checkpoint")
	}
	head := []map[string]any{{"protocol": protocolJSON(w.protocol)}, {"metaData": metadataJSON(w.metadata)}}
	var adds []map[string]any
	for _, k := range w.order {
		if a, ok := w.live[k]; ok {
			adds = append(adds, map[string]any{"add": addJSON(&a)})
		}
	}
	logDir := filepath.Join(w.Dir, "_delta_log")
	uuid := fmt.Sprintf("00000000-0000-0000-0000-%012d", v)
	switch kind {
	case Classic:
		name := fmt.Sprintf("%020d.checkpoint.parquet", v)
		return []string{name}, w.writeCheckpointParquet(filepath.Join(logDir, name), append(head, adds...))
	case MultiPart:
		if parts < 1 {
			parts = 1
		}
		rows := append(head, adds...)
		var names []string
		per := (len(rows) + parts - 1) / parts
		for p := 0; p < parts; p++ {
			lo, hi := min(p*per, len(rows)), min((p+1)*per, len(rows))
			name := fmt.Sprintf("%020d.checkpoint.%010d.%010d.parquet", v, p+1, parts)
			if err := w.writeCheckpointParquet(filepath.Join(logDir, name), rows[lo:hi]); err != nil {
				return nil, err
			}
			names = append(names, name)
		}
		return names, nil
	case V2JSON, V2Parquet:
		if err := os.MkdirAll(filepath.Join(logDir, "_sidecars"), 0o755); err != nil {
			return nil, err
		}
		sideName := fmt.Sprintf("00000000-0000-0000-0001-%012d.parquet", v)
		sidePath := filepath.Join(logDir, "_sidecars", sideName)
		if err := w.writeCheckpointParquet(sidePath, adds); err != nil {
			return nil, err
		}
		st, err := os.Stat(sidePath)
		if err != nil {
			return nil, err
		}
		rows := append([]map[string]any{{"checkpointMetadata": map[string]any{"version": v}}}, head...)
		rows = append(rows, map[string]any{"sidecar": map[string]any{"path": sideName, "sizeInBytes": st.Size(), "modificationTime": st.ModTime().UnixMilli()}})
		if kind == V2JSON {
			name := fmt.Sprintf("%020d.checkpoint.%s.json", v, uuid)
			// JSON checkpoints hold actions as commits do: maps as objects.
			rows := []map[string]any{rows[0], {"protocol": w.protocol}, {"metaData": w.metadata}, rows[len(rows)-1]}
			var buf bytes.Buffer
			for _, r := range rows {
				b, err := json.Marshal(r)
				if err != nil {
					return nil, err
				}
				buf.Write(b)
				buf.WriteByte('\n')
			}
			return []string{name, "_sidecars/" + sideName}, os.WriteFile(filepath.Join(logDir, name), buf.Bytes(), 0o644)
		}
		name := fmt.Sprintf("%020d.checkpoint.%s.parquet", v, uuid)
		return []string{name, "_sidecars/" + sideName}, w.writeCheckpointParquet(filepath.Join(logDir, name), rows)
	}
	return nil, fmt.Errorf("deltatest: unknown checkpoint kind %d", kind)
}

var (
	strMap   = arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	strList  = arrow.ListOf(arrow.BinaryTypes.String)
	dvStruct = arrow.StructOf(
		arrow.Field{Name: "storageType", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "pathOrInlineDv", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "offset", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "sizeInBytes", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "cardinality", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	)
	checkpointSchema = arrow.NewSchema([]arrow.Field{
		{Name: "checkpointMetadata", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "version", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
		{Name: "protocol", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "minReaderVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "minWriterVersion", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "readerFeatures", Type: strList, Nullable: true},
			arrow.Field{Name: "writerFeatures", Type: strList, Nullable: true})},
		{Name: "metaData", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "format", Nullable: true, Type: arrow.StructOf(
				arrow.Field{Name: "provider", Type: arrow.BinaryTypes.String, Nullable: true},
				arrow.Field{Name: "options", Type: strMap, Nullable: true})},
			arrow.Field{Name: "schemaString", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "partitionColumns", Type: strList, Nullable: true},
			arrow.Field{Name: "configuration", Type: strMap, Nullable: true},
			arrow.Field{Name: "createdTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
		{Name: "add", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "partitionValues", Type: strMap, Nullable: true},
			arrow.Field{Name: "size", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "modificationTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "dataChange", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
			arrow.Field{Name: "stats", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "deletionVector", Type: dvStruct, Nullable: true})},
		{Name: "sidecar", Nullable: true, Type: arrow.StructOf(
			arrow.Field{Name: "path", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "sizeInBytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			arrow.Field{Name: "modificationTime", Type: arrow.PrimitiveTypes.Int64, Nullable: true})},
	}, nil)
)

// writeCheckpointParquet writes action rows with the checkpoint schema,
// through Arrow's JSON reader (maps as key/value lists).
func (w *Writer) writeCheckpointParquet(path string, rows []map[string]any) error {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			buf.WriteByte(',')
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	rec, _, err := array.RecordFromJSON(w.Mem, checkpointSchema, strings.NewReader(buf.String()))
	if err != nil {
		return fmt.Errorf("deltatest: checkpoint rows: %w", err)
	}
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	fw, err := pqarrow.NewFileWriter(checkpointSchema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		f.Close()
		return err
	}
	if err := fw.Write(rec); err != nil {
		fw.Close()
		return err
	}
	return fw.Close()
}

func kv(m map[string]string) []map[string]any {
	out := []map[string]any{}
	for k, v := range m {
		out = append(out, map[string]any{"key": k, "value": v})
	}
	return out
}

func protocolJSON(p *delta.Protocol) map[string]any {
	return map[string]any{"minReaderVersion": p.MinReaderVersion, "minWriterVersion": p.MinWriterVersion,
		"readerFeatures": p.ReaderFeatures, "writerFeatures": p.WriterFeatures}
}

func metadataJSON(m *delta.Metadata) map[string]any {
	return map[string]any{"id": m.ID, "format": map[string]any{"provider": m.Format.Provider, "options": kv(m.Format.Options)},
		"schemaString": m.SchemaString, "partitionColumns": m.PartitionColumns, "configuration": kv(m.Configuration),
		"createdTime": m.CreatedTime}
}

func addJSON(a *delta.AddFile) map[string]any {
	pv := []map[string]any{}
	for k, v := range a.PartitionValues {
		pv = append(pv, map[string]any{"key": k, "value": v})
	}
	out := map[string]any{"path": a.Path, "partitionValues": pv, "size": a.Size, "modificationTime": a.ModificationTime,
		"dataChange": false, "stats": a.Stats}
	if dv := a.DeletionVector; dv != nil {
		out["deletionVector"] = map[string]any{"storageType": dv.StorageType, "pathOrInlineDv": dv.PathOrInlineDV,
			"offset": dv.Offset, "sizeInBytes": dv.SizeInBytes, "cardinality": dv.Cardinality}
	}
	return out
}
