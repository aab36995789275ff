package tableops_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/pqdamage"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/testdir"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// damages are the ways a Parquet data file is damaged in
// TestDamagedDataFile, with what the error must say.
func damages(t *testing.T, schema *arrow.Schema) []struct {
	name   string
	damage func(b []byte) ([]byte, error)
	want   string
} {
	// A file of the same schema with far more rows: its footer puts the
	// column chunks beyond the end of a small file.
	var big bytes.Buffer
	w, err := pqarrow.NewFileWriter(schema, &big, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := range 200000 {
		data = append(data, []any{int64(i), strconv.Itoa(i * 7919)})
	}
	rec, err := tabletest.Record(schema, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bigFooter, err := pqdamage.Footer(big.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// The footer of a checkpoint with a column chunk of negative length
	// (found by delta's FuzzCheckpoint).
	raw, err := os.ReadFile(filepath.Join(testdir.ModuleRoot(), "delta", "testdata", "fuzz", "FuzzCheckpoint", "regression-parquet-chunk-length-out-of-range"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	text, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatal(err)
	}
	negFooter, err := pqdamage.Footer([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return []struct {
		name   string
		damage func(b []byte) ([]byte, error)
		want   string
	}{
		{"truncated", pqdamage.Truncate, "truncated or replaced?), and it does not end with the Parquet magic bytes"},
		{"wrong magic", pqdamage.WrongMagic, "does not end with the Parquet magic bytes"},
		{"footer length past the file", pqdamage.FooterPastFile, "does not fit in the file"},
		{"footer length short", pqdamage.FooterShort, "footer metadata does not parse"},
		{"garbage metadata", pqdamage.GarbageFooter, "footer metadata does not parse"},
		{"column chunk outside the file", func(b []byte) ([]byte, error) { return pqdamage.Transplant(b, bigFooter) }, "outside the file"},
		{"negative column chunk length", pqdamage.NegativeChunk, "outside the file"},
		{"negative column chunk length, another file's footer", func(b []byte) ([]byte, error) { return pqdamage.Transplant(b, negFooter) }, "outside the file"},
	}
}

// op is a reader path of floe on table ns.t of env.
type op struct {
	name string
	run  func(e *tabletest.Env) error
}

// ops are the paths that read the data and delete files of a table: scans,
// changelogs, applies (copy-on-write rewrites and position deletes, which
// read the key columns) and compactions.
var ops = []op{
	{"scan", func(e *tabletest.Env) error {
		_, seq, err := scan.Rows(e.Ctx, e.Load("t"), scan.Options{})
		if err != nil {
			return err
		}
		for rec, err := range seq {
			if err != nil {
				return err
			}
			rec.Release()
		}
		return nil
	}},
	{"changelog", func(e *tabletest.Env) error {
		_, seq, err := changelog.Scan(e.Ctx, e.Load("t"), changelog.Options{})
		if err != nil {
			return err
		}
		for rec, err := range seq {
			if err != nil {
				return err
			}
			rec.Release()
		}
		return nil
	}},
	{"apply copy-on-write", func(e *tabletest.Env) error { return apply(e) }},
	{"apply with position deletes", func(e *tabletest.Env) error { return apply(e, merge.WithDeleteMode(merge.DeletePosition)) }},
	{"compact", func(e *tabletest.Env) error {
		_, err := tableops.Compact(e.Ctx, e.Target("t", ""))
		return err
	}},
}

// TestDamagedDataFile: a damaged Parquet data file of an Iceberg table
// (truncated, wrong magic bytes, a footer length that is wrong, garbage
// footer metadata, column chunks outside the file or of negative length)
// makes every reader path (ops) fail with scan.ErrCorruptFile naming the table, the file and what is wrong, with
// nothing committed. Before, the footers with bad column chunks made
// arrow-go's decoder panic in goroutines of iceberg-go's scan, which
// crashed the process.
func TestDamagedDataFile(t *testing.T) {
	fieldID := func(id string) arrow.Metadata { return arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{id}) }
	kinds := damages(t, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fieldID("1")},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fieldID("2")}}, nil))
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for _, d := range kinds {
				t.Run(d.name, func(t *testing.T) {
					e := tabletest.New(t)
					path := damagedTable(t, e)
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					damaged, err := d.damage(b)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, damaged, 0o644); err != nil {
						t.Fatal(err)
					}
					before := e.Load("t").MetadataLocation()
					err = op.run(e)
					if !errors.Is(err, scan.ErrCorruptFile) {
						t.Fatalf("got %v, want %v", err, scan.ErrCorruptFile)
					}
					for _, s := range []string{"corrupt data file: table ns.t: file://" + path + ": ", d.want} {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("the error does not say %q: %v", s, err)
						}
					}
					t.Log(err)
					if e.Load("t").MetadataLocation() != before {
						t.Error("a failed command committed")
					}
				})
			}
		})
	}
}

// damagedTable creates ns.t (merge-on-read deletes, copy-on-write merges)
// with one data file of 6,000 rows and a position delete of one of them,
// and returns the data file's local path.
func damagedTable(t *testing.T, e *tabletest.Env) string {
	t.Helper()
	props := iceberg.Properties{"format-version": "2", "write.delete.mode": "merge-on-read"}
	if _, err := e.Create("t", "id long not null, v string", "", []string{"id"}, props); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := int64(1); i <= 6000; i++ {
		data = append(data, []any{i, fmt.Sprint("value ", i*104729)})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data)); err != nil {
		t.Fatal(err)
	}
	p := &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		ids := rec.Column(0).(*array.Int64)
		out := make([]bool, rec.NumRows())
		for i := range out {
			out[i] = ids.Value(i) == 3
		}
		return out, nil
	}}
	if _, err := tableops.Delete(e.Ctx, e.Target("t", ""), p); err != nil {
		t.Fatal(err)
	}
	tbl := e.Load("t")
	tasks, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 || len(tasks[0].Deletes.Pos) != 1 {
		t.Fatalf("want one data file with one position delete file, got %d tasks", len(tasks))
	}
	return strings.TrimPrefix(tasks[0].File.FilePath(), "file://")
}

// TestDamagedDeleteFile: a damaged position or equality delete file is
// scan.ErrCorruptFile too, from every reader path (ops), naming the table
// and the delete file, with nothing committed: no path reads the table as
// if nothing were deleted.
func TestDamagedDeleteFile(t *testing.T) {
	kinds := []struct {
		name   string
		damage func(b []byte) ([]byte, error)
		want   string
	}{
		{"truncated", pqdamage.Truncate, "does not end with the Parquet magic bytes"},
		{"footer length past the file", pqdamage.FooterPastFile, "does not fit in the file"},
		{"garbage metadata", pqdamage.GarbageFooter, "footer metadata does not parse"},
		{"negative column chunk length", pqdamage.NegativeChunk, "outside the file"},
	}
	for _, kind := range []string{"position", "equality"} {
		for _, op := range ops {
			for _, d := range kinds {
				t.Run(kind+"/"+op.name+"/"+d.name, func(t *testing.T) {
					e := tabletest.New(t)
					damagedTable(t, e)
					if kind == "equality" {
						sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "_change_type", Type: arrow.BinaryTypes.String}}, nil)
						rec, err := tabletest.Record(sch, [][]any{{int64(9), "DELETE"}})
						if err != nil {
							t.Fatal(err)
						}
						defer rec.Release()
						if _, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, sch, func(yield func(arrow.RecordBatch, error) bool) {
							rec.Retain()
							yield(rec, nil)
						}, []string{"id"}, merge.WithDeleteMode(merge.DeleteEquality)); err != nil {
							t.Fatal(err)
						}
					}
					tbl := e.Load("t")
					tasks, err := scan.Plan(e.Ctx, tbl, tbl.CurrentSnapshot(), nil)
					if err != nil {
						t.Fatal(err)
					}
					df := tasks[0].Deletes.Pos[0]
					if kind == "equality" {
						df = tasks[0].Deletes.Eq[0]
					}
					path := strings.TrimPrefix(df.FilePath(), "file://")
					b, err := os.ReadFile(path)
					if err != nil {
						t.Fatal(err)
					}
					damaged, err := d.damage(b)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, damaged, 0o644); err != nil {
						t.Fatal(err)
					}
					before := tbl.MetadataLocation()
					err = op.run(e)
					if !errors.Is(err, scan.ErrCorruptFile) {
						t.Fatalf("got %v, want %v", err, scan.ErrCorruptFile)
					}
					for _, s := range []string{"corrupt " + kind + " delete file: table ns.t: " + df.FilePath() + ": ", d.want} {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("the error does not say %q: %v", s, err)
						}
					}
					t.Log(err)
					if e.Load("t").MetadataLocation() != before {
						t.Error("a failed command committed")
					}
				})
			}
		}
	}
}

// TestDamagedPages: bytes damaged in the pages of a data file (its footer
// intact) make every reader path fail with the decoder's error, naming the
// table and the file, and no panic, with nothing committed.
func TestDamagedPages(t *testing.T) {
	for seed := range 4 {
		for _, op := range ops {
			t.Run(fmt.Sprintf("%s/seed %d", op.name, seed), func(t *testing.T) {
				e := tabletest.New(t)
				path := damagedTable(t, e)
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				footer, err := pqdamage.Footer(b)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				for range 16 {
					b[4+rng.IntN(len(b)-len(footer)-4)] = byte(rng.Uint32())
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				before := e.Load("t").MetadataLocation()
				err = op.run(e)
				if err == nil || !strings.Contains(err.Error(), "table ns.t: read file://"+path+": ") {
					t.Fatalf("got %v, want an error naming table ns.t and file %s", err, path)
				}
				if e.Load("t").MetadataLocation() != before {
					t.Error("a failed command committed")
				}
			})
		}
	}
}
