package deltasync

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

// gen writes a small Delta table for a test through deltatest: rows are
// given as JSON-like maps of the logical columns; partitioned rows go to
// one file per partition value, without the partition column, as Delta
// writers lay them out.
type gen struct {
	t      testing.TB
	w      *deltatest.Writer
	schema *arrow.Schema // logical schema, every column
	part   string        // partition column, "" for none
	files  int
	clock  time.Time
}

// protocolDV is a protocol with deletion vectors and change data feed.
var protocolDV = delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
	ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "changeDataFeed"}}

// newGen commits version 0: protocol and metadata with Change Data Feed
// enabled, plus the given actions.
func newGen(t testing.TB, schema *arrow.Schema, part string, actions ...any) *gen {
	t.Helper()
	w, err := deltatest.NewWriter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := &gen{t: t, w: w, schema: schema, part: part, clock: time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)}
	var parts []string
	if part != "" {
		parts = []string{part}
	}
	md, err := deltatest.Metadata(schema, parts, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		t.Fatal(err)
	}
	g.commit("CREATE TABLE", append([]any{protocolDV, md}, actions...)...)
	return g
}

// setSchema commits a metaData action with a new schema.
func (g *gen) setSchema(schema *arrow.Schema, actions ...any) int64 {
	g.t.Helper()
	var parts []string
	if g.part != "" {
		parts = []string{g.part}
	}
	md, err := deltatest.Metadata(schema, parts, map[string]string{"delta.enableChangeDataFeed": "true"})
	if err != nil {
		g.t.Fatal(err)
	}
	g.schema = schema
	return g.commit("ADD COLUMNS", append([]any{md}, actions...)...)
}

// commit writes the next version with a commitInfo first.
func (g *gen) commit(op string, actions ...any) int64 {
	g.t.Helper()
	g.clock = g.clock.Add(time.Minute)
	v, err := g.w.Commit(append([]any{deltatest.CommitInfo{Timestamp: g.clock, Operation: op}}, actions...)...)
	if err != nil {
		g.t.Fatal(err)
	}
	return v
}

func (g *gen) open() *delta.Table {
	g.t.Helper()
	src, err := delta.Open(context.Background(), g.w.Dir)
	if err != nil {
		g.t.Fatal(err)
	}
	return src
}

type row = map[string]any

// data writes rows as data files (one per partition value) and returns
// their add actions.
func (g *gen) data(rows ...row) []delta.AddFile {
	g.t.Helper()
	var out []delta.AddFile
	for pv, group := range g.byPartition(rows) {
		rec := g.record(g.dataSchema(false), group)
		g.files++
		a, err := g.w.WriteData(g.path(pv, "part"), rec)
		rec.Release()
		if err != nil {
			g.t.Fatal(err)
		}
		g.setPartition(&a.PartitionValues, pv)
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// cdc writes change rows (each with a "_change_type") as change data files
// and returns their cdc actions.
func (g *gen) cdc(rows ...row) []delta.AddCDCFile {
	g.t.Helper()
	var out []delta.AddCDCFile
	for pv, group := range g.byPartition(rows) {
		rec := g.record(g.dataSchema(true), group)
		g.files++
		a, err := g.w.WriteChangeData("_change_data/"+g.path(pv, "cdc"), rec)
		rec.Release()
		if err != nil {
			g.t.Fatal(err)
		}
		g.setPartition(&a.PartitionValues, pv)
		out = append(out, a)
	}
	return out
}

// withDV returns the add and remove actions that replace a's deletion
// vector by one deleting rows (positions in the file).
func (g *gen) withDV(a delta.AddFile, rows ...uint64) (delta.AddFile, delta.RemoveFile) {
	g.t.Helper()
	dv, err := g.w.WriteDeletionVector(rows)
	if err != nil {
		g.t.Fatal(err)
	}
	rm := remove(a)
	a.DeletionVector = dv
	return a, rm
}

func remove(a delta.AddFile) delta.RemoveFile {
	ts := a.ModificationTime
	return delta.RemoveFile{Path: a.Path, DeletionTimestamp: &ts, DataChange: true, ExtendedFileMetadata: true,
		PartitionValues: a.PartitionValues, Size: &a.Size, DeletionVector: a.DeletionVector}
}

// actions flattens slices of actions for commit.
func actions(parts ...any) []any {
	var out []any
	for _, p := range parts {
		switch x := p.(type) {
		case []delta.AddFile:
			for _, a := range x {
				out = append(out, a)
			}
		case []delta.AddCDCFile:
			for _, a := range x {
				out = append(out, a)
			}
		case []delta.RemoveFile:
			for _, a := range x {
				out = append(out, a)
			}
		default:
			out = append(out, p)
		}
	}
	return out
}

func (g *gen) path(pv *string, kind string) string {
	name := fmt.Sprintf("%s-%05d.snappy.parquet", kind, g.files)
	if pv == nil {
		if g.part == "" {
			return name
		}
		return g.part + "=__HIVE_DEFAULT_PARTITION__/" + name
	}
	return g.part + "=" + *pv + "/" + name
}

func (g *gen) setPartition(m *map[string]*string, pv *string) {
	if g.part == "" {
		return
	}
	*m = map[string]*string{g.part: pv}
}

// byPartition groups rows by the text of their partition value.
func (g *gen) byPartition(rows []row) map[*string][]row {
	out := map[*string][]row{}
	keys := map[string]*string{}
	for _, r := range rows {
		var pv *string
		if g.part != "" && r[g.part] != nil {
			s := fmt.Sprint(r[g.part])
			if p, ok := keys[s]; ok {
				pv = p
			} else {
				pv = &s
				keys[s] = pv
			}
		}
		out[pv] = append(out[pv], r)
	}
	return out
}

// dataSchema is the schema of data files (no partition column), with a
// _change_type column for change data files.
func (g *gen) dataSchema(cdc bool) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range g.schema.Fields() {
		if f.Name != g.part {
			fields = append(fields, f)
		}
	}
	if cdc {
		fields = append(fields, arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String})
	}
	return arrow.NewSchema(fields, nil)
}

// record builds a batch of schema from rows through Arrow's JSON reader.
func (g *gen) record(schema *arrow.Schema, rows []row) arrow.RecordBatch {
	g.t.Helper()
	objs := make([]map[string]any, len(rows))
	for i, r := range rows {
		o := map[string]any{}
		for _, f := range schema.Fields() {
			if v, ok := r[f.Name]; ok {
				o[f.Name] = v
			}
		}
		objs[i] = o
	}
	b, err := json.Marshal(objs)
	if err != nil {
		g.t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(string(b)))
	if err != nil {
		g.t.Fatalf("build rows %s: %v", b, err)
	}
	return rec
}
