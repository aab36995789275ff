package merge_test

import (
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// mergeScripts holds the named sources of one datadriven file.
type mergeScripts struct {
	e       *tabletest.Env
	sources map[string]arrow.RecordBatch
}

var dataFilePath = regexp.MustCompile(`file://\S+?\.(parquet|puffin)`)

// run handles the MERGE commands of the scripts:
//
//	source name=S schema=(id long, ...)   the input's tuples become source S
//	merge [branch=B] [set=k:v] [expect=k:v] [delete-mode=position]
//	                                        runs the input MERGE statement; a
//	                                        one-part USING name is a source,
//	                                        a dotted one a catalog table. After
//	                                        an error it checks that the target
//	                                        is unchanged and no file was left.
//	files [table=T]                         data and delete files of the head
//	delete [table=T] col=C value=V         deletes rows where C = V
func (ms *mergeScripts) run(t *testing.T, d *datadriven.TestData) (string, bool) {
	e := ms.e
	name := "t"
	if v, ok := arg(d, "table"); ok {
		name = v
	}
	switch d.Cmd {
	case "source":
		src, _ := arg(d, "name")
		schema, _ := arg(d, "schema")
		sch := changesSchema(t, schema)
		data, err := tabletest.ParseTuples(d.Input)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := tabletest.Record(sch, data)
		if err != nil {
			t.Fatal(err)
		}
		if old := ms.sources[src]; old != nil {
			old.Release()
		}
		ms.sources[src] = rec
		return "", true
	case "merge":
		return ms.merge(t, d), true
	case "files":
		s := e.Load(name).CurrentSnapshot()
		if s == nil {
			return "no snapshot\n", true
		}
		p := s.Summary.Properties
		return fmt.Sprintf("data=%s deletes=%s\n", p["total-data-files"], p["total-delete-files"]), true
	case "delete":
		col, _ := arg(d, "col")
		val, _ := arg(d, "value")
		o, err := tableops.Delete(e.Ctx, e.Target(name, ""), tabletest.ColEq(col, false, val))
		if err != nil {
			return "error: " + err.Error() + "\n", true
		}
		return fmt.Sprintf("removed=%d\n", o.RowsRemoved), true
	}
	return "", false
}

func (ms *mergeScripts) merge(t *testing.T, d *datadriven.TestData) string {
	e := ms.e
	stmt, err := expr.ParseMerge(d.Input)
	if err != nil {
		return "error: " + expr.FormatError(d.Input, err) + "\n"
	}
	var opts []merge.Option
	if v, ok := arg(d, "branch"); ok {
		opts = append(opts, merge.WithBranch(v))
	}
	if v, ok := arg(d, "set"); ok {
		k, val, _ := strings.Cut(v, ":")
		opts = append(opts, merge.WithCommitProperties(map[string]string{k: val}))
	}
	if v, ok := arg(d, "expect"); ok {
		k, val, _ := strings.Cut(v, ":")
		opts = append(opts, merge.WithExpectedProperties(map[string]string{k: val}))
	}
	if v, ok := arg(d, "delete-mode"); ok {
		m, err := merge.ParseDeleteMode(v)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, merge.WithDeleteMode(m))
	}
	src := ms.source(t, stmt)
	tbl := e.Load(stmt.Target[len(stmt.Target)-1])
	before := tbl.MetadataLocation()
	filesBefore := listFiles(t, tbl.Location())
	res, err := merge.Merge(e.Ctx, e.Cat, stmt, src, opts...)
	if err != nil {
		out := "error: " + dataFilePath.ReplaceAllString(expr.FormatError(d.Input, err), "<file>") + "\n"
		after := e.Load(stmt.Target[len(stmt.Target)-1])
		if after.MetadataLocation() != before {
			t.Errorf("%s: the failed merge changed the table", d.Pos)
		}
		if got := listFiles(t, tbl.Location()); strings.Join(got, "\n") != strings.Join(filesBefore, "\n") {
			t.Errorf("%s: the failed merge left files behind:\nbefore %v\nafter  %v", d.Pos, filesBefore, got)
		}
		return out
	}
	return fmt.Sprintf("updated=%d deleted=%d inserted=%d affected=%d files=%d mode=%s committed=%t\n",
		res.NumUpdatedRows, res.NumDeletedRows, res.NumInsertedRows, res.NumAffectedRows, res.FilesScanned, res.Mode, res.Committed)
}

// source resolves the USING relation of stmt (for a subquery, the rows of
// its FROM table, which Merge filters and projects).
func (ms *mergeScripts) source(t *testing.T, stmt *expr.Merge) merge.Source {
	name := stmt.Source.Table
	if q := stmt.Source.Query; q != nil {
		name = q.From
	}
	if len(name) == 1 {
		rec, ok := ms.sources[name[0]]
		if !ok {
			t.Fatalf("no source %s", name[0])
		}
		return merge.Source{Schema: rec.Schema(), Rows: func(yield func(arrow.RecordBatch, error) bool) {
			rec.Retain()
			yield(rec, nil)
		}}
	}
	tbl, err := ms.e.Cat.Load(ms.e.Ctx, table.Identifier(name))
	if err != nil {
		t.Fatal(err)
	}
	schema, seq, err := scan.Rows(ms.e.Ctx, tbl, scan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return merge.Source{Schema: schema, Rows: seq}
}

// listFiles lists the files under a table location.
func listFiles(t *testing.T, location string) []string {
	root := strings.TrimPrefix(location, "file://")
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.Contains(p, "/metadata/") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func (ms *mergeScripts) release() {
	for _, r := range ms.sources {
		r.Release()
	}
}

// seqOf yields recs, each with a reference for the consumer.
func seqOf(recs ...arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}
