package delta_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
	"github.com/floedata/floe/internal/testdir"
)

// TestDataDriven runs the scripts in testdata/: change data and snapshot
// semantics on tables written by deltatest (testdata/semantics_*,
// testdata/checkpoints) and the expectations of upstream tests transcribed
// for the shared fixtures (testdata/upstream_*, each cited in the file).
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.Contains(filepath.ToSlash(path), "/fuzz/") {
			return // fuzz corpora (fuzz_test.go)
		}
		if strings.HasPrefix(filepath.Base(path), "upstream") {
			testdir.Shared(t, "delta") // skips when the fixtures are absent
		}
		e := &ddEnv{dir: t.TempDir(), tables: map[string]*ddTable{}}
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			out, err := e.run(t, td)
			if err != nil {
				if td.HasArg("msg") {
					// The message, with the temporary table root elided.
					msg := strings.ReplaceAll(err.Error(), e.dir, "<dir>")
					return "error: " + errKind(err) + "\n" + msg + "\n"
				}
				return "error: " + errKind(err) + "\n"
			}
			return out
		})
	})
}

// errKind names the sentinel an error wraps, for script output.
func errKind(err error) string {
	for _, k := range []struct {
		name string
		err  error
	}{
		{"ErrNotATable", delta.ErrNotATable},
		{"ErrVersionNotFound", delta.ErrVersionNotFound},
		{"ErrInvalidRange", delta.ErrInvalidRange},
		{"ErrTimestampOutOfRange", delta.ErrTimestampOutOfRange},
		{"ErrChangeDataNotRecorded", delta.ErrChangeDataNotRecorded},
		{"ErrIncompatibleSchemaChange", delta.ErrIncompatibleSchemaChange},
		{"ErrUnsupportedFeature", delta.ErrUnsupportedFeature},
		{"ErrCorruptLog", delta.ErrCorruptLog},
		{"ErrCorruptDeletionVector", delta.ErrCorruptDeletionVector},
		{"ErrCorruptDataFile", delta.ErrCorruptDataFile},
		{"ErrFileNotFound", delta.ErrFileNotFound},
		{"ErrPathEscapesRoot", delta.ErrPathEscapesRoot},
		{"ErrColumnNotFound", delta.ErrColumnNotFound},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "unclassified: " + err.Error()
}

type ddEnv struct {
	dir    string
	tables map[string]*ddTable
}

// ddTable is a table written by a script.
type ddTable struct {
	w         *deltatest.Writer
	schema    *arrow.Schema // data columns (no partition column)
	partition string        // partition column name, "" when none
	partType  arrow.DataType
	meta      delta.Metadata
	files     map[string]*ddFile
}

// ddFile is the live state of a data file.
type ddFile struct {
	add   delta.AddFile
	rows  map[uint64]bool // deleted row indexes
	lines []string        // the CSV rows written
}

func (e *ddEnv) run(t *testing.T, td *datadriven.TestData) (string, error) {
	ctx := context.Background()
	switch td.Cmd {
	case "create":
		return e.create(t, td)
	case "write", "delete", "restore", "remove", "cdc", "merge-noop", "set", "rewrite":
		tbl := e.table(t, td)
		return tbl.commit(t, td)
	case "checkpoint":
		tbl := e.table(t, td)
		kinds := map[string]deltatest.CheckpointKind{"classic": deltatest.Classic, "multipart": deltatest.MultiPart, "v2json": deltatest.V2JSON, "v2parquet": deltatest.V2Parquet}
		var kind string
		td.ScanArgs(t, "kind", &kind)
		parts := 1
		td.MaybeScanArgs(t, "parts", &parts)
		files, err := tbl.w.Checkpoint(kinds[kind], parts)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(files, "\n") + "\n", nil
	case "cleanup":
		// Deletes commit files before a version, as log cleanup does.
		tbl := e.table(t, td)
		var before int64
		td.ScanArgs(t, "before", &before)
		for v := int64(0); v < before; v++ {
			os.Remove(filepath.Join(tbl.w.Dir, "_delta_log", fmt.Sprintf("%020d.json", v)))
		}
		return "ok\n", nil
	case "put-log-file":
		tbl := e.table(t, td)
		var name string
		td.ScanArgs(t, "file", &name)
		if err := os.WriteFile(filepath.Join(tbl.w.Dir, "_delta_log", name), []byte(td.Input), 0o644); err != nil {
			t.Fatal(err)
		}
		return "ok\n", nil
	case "drop-log-file":
		tbl := e.table(t, td)
		var name string
		td.ScanArgs(t, "file", &name)
		if err := os.Remove(filepath.Join(tbl.w.Dir, "_delta_log", name)); err != nil {
			t.Fatal(err)
		}
		return "ok\n", nil
	case "changes":
		tbl, err := e.open(t, td)
		if err != nil {
			return "", err
		}
		opts := ddRange(t, td)
		var cols []string
		if a, ok := td.Arg("columns"); ok {
			cols = a.Vals
		}
		opts.Columns = cols
		if td.HasArg("resolve") {
			r, err := tbl.ResolveRange(ctx, opts)
			if err != nil {
				return "", err
			}
			if r.Empty {
				return "empty\n", nil
			}
			return fmt.Sprintf("versions %d to %d\n", r.Start, r.End), nil
		}
		schema, seq, err := tbl.Changes(ctx, opts)
		if err != nil {
			return "", err
		}
		rows, err := deltatest.Rows(schema, seq, nil)
		if err != nil {
			return "", err
		}
		return formatRows(schema, rows, td.HasArg("sorted")), nil
	case "snapshot":
		tbl, err := e.open(t, td)
		if err != nil {
			return "", err
		}
		var s *delta.Snapshot
		if td.HasArg("version") {
			var v int64
			td.ScanArgs(t, "version", &v)
			s, err = tbl.Snapshot(ctx, v)
		} else {
			s, err = tbl.LatestSnapshot(ctx)
		}
		if err != nil {
			return "", err
		}
		opts := delta.ScanOptions{}
		if a, ok := td.Arg("columns"); ok {
			opts.Columns = a.Vals
		}
		schema, seq, err := s.Scan(ctx, opts)
		if err != nil {
			return "", err
		}
		rows, err := deltatest.Rows(schema, seq, nil)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("version %d, %d files\n", s.Version(), s.NumFiles()) + formatRows(schema, rows, true), nil
	case "commits":
		tbl, err := e.open(t, td)
		if err != nil {
			return "", err
		}
		var start, end int64
		td.ScanArgs(t, "start", &start)
		td.ScanArgs(t, "end", &end)
		cis, err := tbl.Commits(ctx, start, end)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		for _, ci := range cis {
			when := deltatest.CanonicalTime(ci.Timestamp)
			if ci.TimestampSource == delta.TimestampFileModification {
				when = "<file time>" // differs on every run
			}
			fmt.Fprintf(&b, "%d %s %s (%s)\n", ci.Version, ci.Operation, when, ci.TimestampSource)
		}
		return b.String(), nil
	case "version-at":
		tbl, err := e.open(t, td)
		if err != nil {
			return "", err
		}
		var ts string
		td.ScanArgs(t, "ts", &ts)
		when, err := deltatest.ParseTime(ts)
		if err != nil {
			t.Fatal(err)
		}
		after, errA := tbl.VersionAtOrAfter(ctx, when)
		before, errB := tbl.VersionAtOrBefore(ctx, when)
		show := func(v int64, err error) string {
			if err != nil {
				return "error: " + errKind(err)
			}
			return strconv.FormatInt(v, 10)
		}
		return fmt.Sprintf("at or after: %s\nat or before: %s\n", show(after, errA), show(before, errB)), nil
	}
	t.Fatalf("unknown command %q", td.Cmd)
	return "", nil
}

// open opens table=<name>: a script table or, for upstream scripts, a shared
// fixture.
func (e *ddEnv) open(t *testing.T, td *datadriven.TestData) (*delta.Table, error) {
	var name string
	td.ScanArgs(t, "table", &name)
	loc := filepath.Join(testdir.Shared(t, "delta"), name)
	if tbl, ok := e.tables[name]; ok {
		loc = tbl.w.Dir
	}
	return delta.Open(context.Background(), loc, delta.WithBatchSize(3))
}

func (e *ddEnv) table(t *testing.T, td *datadriven.TestData) *ddTable {
	var name string
	td.ScanArgs(t, "table", &name)
	tbl, ok := e.tables[name]
	if !ok {
		t.Fatalf("no table %q", name)
	}
	return tbl
}

func ddRange(t *testing.T, td *datadriven.TestData) delta.ChangesOptions {
	var o delta.ChangesOptions
	bound := func(key string) (delta.Bound, bool) {
		if a, ok := td.Arg(key); ok {
			v, err := strconv.ParseInt(a.SingleVal(t), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return delta.AtVersion(v), true
		}
		if a, ok := td.Arg(key + "-ts"); ok {
			ts, err := deltatest.ParseTime(a.SingleVal(t))
			if err != nil {
				t.Fatal(err)
			}
			return delta.AtTimestamp(ts), true
		}
		return delta.Bound{}, false
	}
	o.Start, _ = bound("start")
	o.End, _ = bound("end")
	o.AllowOutOfRange = td.HasArg("allow-out-of-range")
	return o
}

func formatRows(schema *arrow.Schema, rows [][]string, sorted bool) string {
	var b strings.Builder
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	b.WriteString(strings.Join(names, ",") + "\n")
	if sorted {
		deltatest.SortRows(rows)
	}
	for _, r := range rows {
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	return b.String()
}

// create table=t schema=(id:long,name:string) [partition=p:string] [cdf=false] [config=(k=v,...)] [ict]
func (e *ddEnv) create(t *testing.T, td *datadriven.TestData) (string, error) {
	var name string
	td.ScanArgs(t, "table", &name)
	w, err := deltatest.NewWriter(filepath.Join(e.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	tbl := &ddTable{w: w, files: map[string]*ddFile{}}
	a, _ := td.Arg("schema")
	var fields []arrow.Field
	for _, v := range a.Vals {
		n, typ, _ := strings.Cut(v, ":")
		fields = append(fields, arrow.Field{Name: n, Type: ddType(t, typ), Nullable: true})
	}
	tbl.schema = arrow.NewSchema(fields, nil)
	all := fields
	var parts []string
	if a, ok := td.Arg("partition"); ok {
		n, typ, _ := strings.Cut(a.SingleVal(t), ":")
		tbl.partition, tbl.partType = n, ddType(t, typ)
		all = append(append([]arrow.Field(nil), fields...), arrow.Field{Name: n, Type: tbl.partType, Nullable: true})
		parts = []string{n}
	}
	conf := map[string]string{"delta.enableChangeDataFeed": "true"}
	if td.HasArg("cdf") {
		var cdf string
		td.ScanArgs(t, "cdf", &cdf)
		conf["delta.enableChangeDataFeed"] = cdf
	}
	if a, ok := td.Arg("config"); ok {
		for _, kv := range a.Vals {
			k, v, _ := strings.Cut(kv, "=")
			conf[k] = v
		}
	}
	meta, err := deltatest.Metadata(arrow.NewSchema(all, nil), parts, conf)
	if err != nil {
		t.Fatal(err)
	}
	tbl.meta = meta
	proto := delta.Protocol{MinReaderVersion: 3, MinWriterVersion: 7, ReaderFeatures: []string{"deletionVectors"}, WriterFeatures: []string{"deletionVectors", "changeDataFeed"}}
	if a, ok := td.Arg("reader-features"); ok {
		proto.ReaderFeatures = a.Vals
	}
	e.tables[name] = tbl
	actions := []any{ddCommitInfo(t, td, 0, "CREATE TABLE"), proto, meta}
	if strings.TrimSpace(td.Input) != "" {
		var file string
		td.ScanArgs(t, "file", &file)
		actions = append(actions, tbl.writeFile(t, td, file, td.Input, false))
	}
	v, err := w.Commit(actions...)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("version %d\n", v), nil
}

func ddType(t *testing.T, s string) arrow.DataType {
	switch s {
	case "long":
		return arrow.PrimitiveTypes.Int64
	case "int":
		return arrow.PrimitiveTypes.Int32
	case "string":
		return arrow.BinaryTypes.String
	case "double":
		return arrow.PrimitiveTypes.Float64
	case "bool":
		return arrow.FixedWidthTypes.Boolean
	case "date":
		return arrow.FixedWidthTypes.Date32
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	t.Fatalf("unknown type %q", s)
	return nil
}

// ddCommitInfo is the commitInfo of version v: ts=<RFC 3339> or, by
// default, 2024-01-01 plus v minutes; ict=<RFC 3339> adds an in-commit
// timestamp; no-commit-info leaves it out.
func ddCommitInfo(t *testing.T, td *datadriven.TestData, v int64, op string) any {
	if td.HasArg("no-commit-info") {
		return deltatest.Raw(`{"txn":{"appId":"script","version":0}}`)
	}
	ts := time.Date(2024, 1, 1, 0, int(v), 0, 0, time.UTC)
	if a, ok := td.Arg("ts"); ok {
		p, err := deltatest.ParseTime(a.SingleVal(t))
		if err != nil {
			t.Fatal(err)
		}
		ts = p
	}
	ci := deltatest.CommitInfo{Timestamp: ts, Operation: op}
	if a, ok := td.Arg("ict"); ok {
		p, err := deltatest.ParseTime(a.SingleVal(t))
		if err != nil {
			t.Fatal(err)
		}
		ci.InCommitTimestamp = &p
	}
	if a, ok := td.Arg("metrics"); ok {
		ci.OperationMetrics = map[string]string{}
		for _, kv := range a.Vals {
			k, v, _ := strings.Cut(kv, "=")
			ci.OperationMetrics[k] = v
		}
	}
	return ci
}

// commit runs the commands that write one version.
//
//	write table=t file=f [part=v]          rows (CSV) in the input: add f ("~" in v is a space)
//	delete table=t file=f rows=(0,2) [inline]  deletion vector += rows
//	restore table=t file=f rows=(0)        deletion vector -= rows
//	remove table=t file=f [datachange=false] [no-partition-values]
//	rewrite table=t file=f to=g            remove f, add g with f's live rows (dataChange=false)
//	cdc table=t file=f [part=v] [remove=g] [write=h]  input: rows with _change_type last
//	merge-noop table=t file=f              MERGE with zero metrics rewriting f
//	set table=t config=(k=v)               metaData with changed configuration
func (tbl *ddTable) commit(t *testing.T, td *datadriven.TestData) (string, error) {
	v := tbl.w.Version() + 1
	op := map[string]string{"write": "WRITE", "delete": "DELETE", "restore": "RESTORE", "remove": "DELETE",
		"cdc": "UPDATE", "merge-noop": "MERGE", "set": "SET TBLPROPERTIES", "rewrite": "OPTIMIZE"}[td.Cmd]
	if a, ok := td.Arg("op"); ok {
		op = a.SingleVal(t)
	}
	actions := []any{ddCommitInfo(t, td, v, op)}
	var file string
	td.MaybeScanArgs(t, "file", &file)
	switch td.Cmd {
	case "write":
		add := tbl.writeFile(t, td, file, td.Input, false)
		actions = append(actions, add)
	case "delete", "restore":
		f := tbl.files[file]
		if f == nil {
			t.Fatalf("no live file %q", file)
		}
		a, _ := td.Arg("rows")
		old := f.add
		for _, s := range a.Vals {
			r, _ := strconv.ParseUint(s, 10, 64)
			if td.Cmd == "delete" {
				f.rows[r] = true
			} else {
				delete(f.rows, r)
			}
		}
		rm := delta.RemoveFile{Path: old.Path, DataChange: true, PartitionValues: old.PartitionValues, DeletionVector: old.DeletionVector}
		add := old
		add.DeletionVector = nil
		if len(f.rows) > 0 {
			var rows []uint64
			for r := range f.rows {
				rows = append(rows, r)
			}
			var dv *delta.DeletionVector
			var err error
			if td.HasArg("inline") {
				dv, err = deltatest.InlineDeletionVector(rows)
			} else {
				dv, err = tbl.w.WriteDeletionVector(rows)
			}
			if err != nil {
				t.Fatal(err)
			}
			add.DeletionVector = dv
		}
		f.add = add
		actions = append(actions, rm, add)
	case "remove":
		f := tbl.files[file]
		if f == nil {
			t.Fatalf("no live file %q", file)
		}
		dc := true
		td.MaybeScanArgs(t, "datachange", &dc)
		rm := delta.RemoveFile{Path: f.add.Path, DataChange: dc, PartitionValues: f.add.PartitionValues, DeletionVector: f.add.DeletionVector}
		if td.HasArg("no-partition-values") {
			rm.PartitionValues = nil // as written by old writers (extendedFileMetadata=false)
		}
		actions = append(actions, rm)
		delete(tbl.files, file)
	case "rewrite", "merge-noop":
		f := tbl.files[file]
		if f == nil {
			t.Fatalf("no live file %q", file)
		}
		to := file + "-rewritten"
		td.MaybeScanArgs(t, "to", &to)
		// Copy the live rows of f into a new file.
		rows := tbl.liveRows(t, f)
		dc := td.Cmd == "merge-noop"
		actions = append(actions, delta.RemoveFile{Path: f.add.Path, DataChange: dc, PartitionValues: f.add.PartitionValues, DeletionVector: f.add.DeletionVector})
		delete(tbl.files, file)
		add := tbl.writeFile(t, td, to, rows, false).(delta.AddFile)
		add.DataChange = dc
		tbl.files[to].add = add
		actions = append(actions, add)
	case "cdc":
		var body, changes []string
		for _, l := range strings.Split(strings.TrimSpace(td.Input), "\n") {
			if l == "--" {
				body, changes = changes, nil
				continue
			}
			changes = append(changes, l)
		}
		if a, ok := td.Arg("remove"); ok {
			for _, g := range a.Vals {
				f := tbl.files[g]
				actions = append(actions, delta.RemoveFile{Path: f.add.Path, DataChange: true, PartitionValues: f.add.PartitionValues, DeletionVector: f.add.DeletionVector})
				delete(tbl.files, g)
			}
		}
		if a, ok := td.Arg("write"); ok {
			actions = append(actions, tbl.writeFile(t, td, a.SingleVal(t), strings.Join(body, "\n"), false))
		}
		cdcAction := tbl.writeFile(t, td, "_change_data/"+file, strings.Join(changes, "\n"), true)
		actions = append(actions, cdcAction)
	case "set":
		meta := tbl.meta
		meta.Configuration = map[string]string{}
		for k, v := range tbl.meta.Configuration {
			meta.Configuration[k] = v
		}
		if a, ok := td.Arg("config"); ok {
			for _, kv := range a.Vals {
				k, v, _ := strings.Cut(kv, "=")
				meta.Configuration[k] = v
			}
		}
		if a, ok := td.Arg("add-column"); ok {
			n, typ, _ := strings.Cut(a.SingleVal(t), ":")
			f := arrow.Field{Name: n, Type: ddType(t, typ), Nullable: true}
			tbl.schema = arrow.NewSchema(append(append([]arrow.Field(nil), tbl.schema.Fields()...), f), nil)
			ps, _ := delta.ParseSchema(meta.SchemaString)
			as, err := delta.ArrowSchema(ps)
			if err != nil {
				t.Fatal(err)
			}
			ss, err := deltatest.SchemaString(arrow.NewSchema(append(append([]arrow.Field(nil), as.Fields()...), f), nil))
			if err != nil {
				t.Fatal(err)
			}
			meta.SchemaString = ss
		}
		if a, ok := td.Arg("nullable"); ok {
			// Tighten or loosen the nullability of a column.
			n, val, _ := strings.Cut(a.SingleVal(t), "=")
			s, _ := delta.ParseSchema(meta.SchemaString)
			f, _ := s.Field(n)
			f.Nullable = val == "true"
			meta.SchemaString = schemaJSON(t, s)
		}
		tbl.meta = meta
		actions = append(actions, meta)
	}
	if _, err := tbl.w.Commit(actions...); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("version %d\n", v), nil
}

// schemaJSON re-renders a parsed schema through deltatest.
func schemaJSON(t *testing.T, s *delta.StructType) string {
	sc, err := delta.ArrowSchema(s)
	if err != nil {
		t.Fatal(err)
	}
	out, err := deltatest.SchemaString(sc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeFile writes CSV rows (data columns, plus _change_type last for cdc)
// as file name and records it; it returns the add or cdc action.
func (tbl *ddTable) writeFile(t *testing.T, td *datadriven.TestData, name, input string, cdc bool) any {
	schema := tbl.schema
	if cdc {
		schema = arrow.NewSchema(append(append([]arrow.Field(nil), schema.Fields()...),
			arrow.Field{Name: delta.ChangeTypeColumn, Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	}
	rec := buildRecord(t, schema, input)
	defer rec.Release()
	pv := map[string]*string{}
	rel := name + ".parquet"
	if tbl.partition != "" {
		var part string
		td.ScanArgs(t, "part", &part)
		part = strings.ReplaceAll(part, "~", " ") // arguments cannot hold spaces
		if part == "null" {
			pv[tbl.partition] = nil
			rel = tbl.partition + "=__HIVE_DEFAULT_PARTITION__/" + rel
		} else {
			pv[tbl.partition] = &part
			rel = tbl.partition + "=" + part + "/" + rel
		}
	}
	if cdc {
		act, err := tbl.w.WriteChangeData(rel, rec)
		if err != nil {
			t.Fatal(err)
		}
		act.PartitionValues = pv
		return act
	}
	add, err := tbl.w.WriteData(rel, rec)
	if err != nil {
		t.Fatal(err)
	}
	add.PartitionValues = pv
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(input), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	tbl.files[name] = &ddFile{add: add, rows: map[uint64]bool{}, lines: lines}
	return add
}

// liveRows returns the CSV rows of a data file its deletion vector keeps.
func (tbl *ddTable) liveRows(t *testing.T, f *ddFile) string {
	var keep []string
	for i, l := range f.lines {
		if !f.rows[uint64(i)] {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// buildRecord parses CSV lines (null for NULL) into a record of schema.
func buildRecord(t *testing.T, schema *arrow.Schema, input string) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		cells := strings.Split(line, ",")
		if len(cells) != schema.NumFields() {
			t.Fatalf("row %q has %d cells, schema %s has %d columns", line, len(cells), schema, schema.NumFields())
		}
		for i, c := range cells {
			c = strings.TrimSpace(c)
			fb := b.Field(i)
			if c == "null" {
				fb.AppendNull()
				continue
			}
			if err := fb.AppendValueFromString(c); err != nil {
				t.Fatalf("cell %q of column %s: %v", c, schema.Field(i).Name, err)
			}
		}
	}
	return b.NewRecordBatch()
}
