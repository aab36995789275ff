package merge_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
)

func arg(d *datadriven.TestData, key string) (string, bool) {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

// changesSchema parses "id long, data string, _change_type string" into an
// Arrow schema for change rows.
func changesSchema(t *testing.T, s string) *arrow.Schema {
	var fields []arrow.Field
	for _, part := range strings.Split(s, ",") {
		f := strings.Fields(strings.TrimSpace(part))
		var dt arrow.DataType
		switch f[1] {
		case "int":
			dt = arrow.PrimitiveTypes.Int32
		case "long":
			dt = arrow.PrimitiveTypes.Int64
		case "string":
			dt = arrow.BinaryTypes.String
		case "double":
			dt = arrow.PrimitiveTypes.Float64
		case "bool":
			dt = arrow.FixedWidthTypes.Boolean
		default:
			t.Fatalf("type %s", f[1])
		}
		fields = append(fields, arrow.Field{Name: f[0], Type: dt, Nullable: true})
	}
	return arrow.NewSchema(fields, nil)
}

func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := tabletest.New(t)
		ms := &mergeScripts{e: e, sources: map[string]arrow.RecordBatch{}}
		defer ms.release()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if out, ok := ms.run(t, d); ok {
				return out
			}
			name := "t"
			if v, ok := arg(d, "table"); ok {
				name = v
			}
			switch d.Cmd {
			case "create":
				schema, _ := arg(d, "schema")
				part, _ := arg(d, "partition")
				props := iceberg.Properties{}
				if v, ok := arg(d, "props"); ok {
					for _, kv := range strings.Split(v, ";") {
						k, val, _ := strings.Cut(kv, ":")
						props[k] = val
					}
				}
				var ids []string
				if v, ok := arg(d, "identifier"); ok {
					ids = strings.Split(v, ",")
				}
				if _, err := e.Create(name, schema, part, ids, props); err != nil {
					return "error: " + err.Error() + "\n"
				}
				return ""
			case "apply":
				cols, _ := arg(d, "changes")
				sch := changesSchema(t, cols)
				data, err := tabletest.ParseTuples(d.Input)
				if err != nil {
					t.Fatal(err)
				}
				rec, err := tabletest.Record(sch, data)
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				defer rec.Release()
				keys, _ := arg(d, "keys")
				var opts []merge.Option
				if v, ok := arg(d, "seq"); ok {
					opts = append(opts, merge.WithSequenceColumn(v))
				}
				if _, ok := arg(d, "strict"); ok {
					opts = append(opts, merge.WithInsertsMustBeNew())
				}
				spilled := ""
				if v, ok := arg(d, "budget"); ok {
					// A budget the changes do not fit: they spill (said
					// after the result, when they did).
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					opts = append(opts, merge.WithMemoryBudget(n), merge.WithTempDir(t.TempDir()))
					defer merge.SetSpillHook(func(s, _ int64, _ int) {
						if s > 0 {
							spilled = "spilled\n"
						}
					})()
				}
				if v, ok := arg(d, "delete-mode"); ok {
					m, err := merge.ParseDeleteMode(v)
					if err != nil {
						t.Fatal(err)
					}
					opts = append(opts, merge.WithDeleteMode(m))
				}
				if v, ok := arg(d, "set"); ok {
					k, val, _ := strings.Cut(v, ":")
					opts = append(opts, merge.WithCommitProperties(map[string]string{k: val}))
				}
				if v, ok := arg(d, "expect"); ok {
					k, val, _ := strings.Cut(v, ":")
					opts = append(opts, merge.WithExpectedProperties(map[string]string{k: val}))
				}
				seq := func(yield func(arrow.RecordBatch, error) bool) { rec.Retain(); yield(rec, nil) }
				res, err := merge.Apply(e.Ctx, e.Cat, e.Target(name, "").Ident, sch, seq, strings.Split(keys, ","), opts...)
				if err != nil {
					return "error: " + dataFilePath.ReplaceAllString(err.Error(), "<file>") + "\n" + spilled
				}
				return fmt.Sprintf("upserts=%d deletes=%d matched=%d committed=%t\n", res.Upserts, res.Deletes, res.Matched, res.Committed) + spilled
			case "rows":
				got, err := e.Rows(e.Load(name), scan.At{})
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return strings.Join(got, "\n") + "\n"
			case "snapshots":
				tbl := e.Load(name)
				var b strings.Builder
				for _, s := range tbl.Metadata().Snapshots() {
					fmt.Fprintf(&b, "%s deletes=%s\n", s.Summary.Operation, s.Summary.Properties["total-delete-files"])
				}
				return b.String()
			case "property":
				k, _ := arg(d, "key")
				return fmt.Sprintf("%s=%q\n", k, e.Load(name).Properties().Get(k, ""))
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

// TestWatermarkIsAtomic: the watermark lands in the commit of the changes,
// and a moved watermark stops the apply without committing.
func TestWatermarkIsAtomic(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null, v string", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	sch := changesSchema(t, "id long, v string, _change_type string")
	apply := func(id int64, wm, expect string) error {
		rec, _ := tabletest.Record(sch, [][]any{{id, "x", "INSERT"}})
		defer rec.Release()
		opts := []merge.Option{merge.WithCommitProperties(map[string]string{"watermark.source-snapshot-id": wm})}
		if expect != "-" {
			opts = append(opts, merge.WithExpectedProperties(map[string]string{"watermark.source-snapshot-id": expect}))
		}
		_, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch,
			func(yield func(arrow.RecordBatch, error) bool) { rec.Retain(); yield(rec, nil) }, []string{"id"}, opts...)
		return err
	}
	if err := apply(1, "10", ""); err != nil {
		t.Fatal(err)
	}
	tbl := e.Load("t")
	if got := tbl.Properties()["watermark.source-snapshot-id"]; got != "10" {
		t.Fatalf("watermark %q", got)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("one snapshot expected, got %d", n)
	}
	metaBefore := tbl.MetadataLocation()
	err := apply(2, "20", "5")
	if !errors.Is(err, commit.ErrWatermarkMoved) {
		t.Fatalf("want ErrWatermarkMoved, got %v", err)
	}
	if e.Load("t").MetadataLocation() != metaBefore {
		t.Fatal("a moved watermark must commit nothing")
	}
	if err := apply(2, "20", "10"); err != nil {
		t.Fatal(err)
	}
	rows, _ := e.Rows(e.Load("t"), scan.At{})
	if strings.Join(rows, " ") != "(1,'x') (2,'x')" {
		t.Fatalf("rows %v", rows)
	}
}
