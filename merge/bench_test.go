package merge_test

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
)

// benchRecord builds n rows (id, v, n) with ids from..from+n-1.
func benchRecord(from, n int64, tag string, withType bool) arrow.RecordBatch {
	fields := []arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}
	if withType {
		fields = append(fields, arrow.Field{Name: "_change_type", Type: arrow.BinaryTypes.String})
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema(fields, nil))
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", tag, i))
		b.Field(2).(*array.Int64Builder).Append(i * 7)
		if withType {
			b.Field(3).(*array.StringBuilder).Append("INSERT")
		}
	}
	return b.NewRecordBatch()
}

// BenchmarkMerge merges 10,000 source rows into a table of 200,000 rows
// written as 4 files; the keys lie in the id range of one file, so the
// others are pruned. Every iteration updates the same 10,000 rows (two
// conditional UPDATE clauses and an INSERT that finds nothing to insert),
// so the table keeps its size; merge-on-read accumulates delete files and
// data files over the iterations, as it would in production until a
// compaction.
func BenchmarkMerge(b *testing.B) {
	for _, c := range []struct {
		name  string
		props iceberg.Properties
	}{
		{"copy-on-write", iceberg.Properties{"format-version": "2"}},
		{"merge-on-read-v2", iceberg.Properties{"format-version": "2", "write.merge.mode": "merge-on-read"}},
		{"merge-on-read-v3", iceberg.Properties{"format-version": "3", "write.merge.mode": "merge-on-read"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := tabletest.New(b)
			if _, err := e.Create("t", "id long not null, v string, n long", "", nil, c.props); err != nil {
				b.Fatal(err)
			}
			const files, perFile, srcRows = 4, 50_000, 10_000
			for f := int64(0); f < files; f++ {
				rec := benchRecord(f*perFile, perFile, "init", true)
				if _, err := merge.Apply(e.Ctx, e.Cat, e.Target("t", "").Ident, rec.Schema(), seqOf(rec), []string{"id"}); err != nil {
					b.Fatal(err)
				}
				rec.Release()
			}
			stmt, err := expr.ParseMerge(`MERGE INTO ns.t USING src AS s ON t.id = s.id
				WHEN MATCHED AND s.n % 2 = 0 THEN UPDATE SET v = s.v, n = t.n + 1
				WHEN MATCHED THEN UPDATE SET *
				WHEN NOT MATCHED THEN INSERT *`)
			if err != nil {
				b.Fatal(err)
			}
			src := benchRecord(perFile+1000, srcRows, "upd", false)
			defer src.Release()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := merge.Merge(e.Ctx, e.Cat, stmt, merge.Source{Schema: src.Schema(), Rows: seqOf(src)})
				if err != nil {
					b.Fatal(err)
				}
				if res.NumUpdatedRows != srcRows || res.NumInsertedRows != 0 {
					b.Fatalf("updated %d and inserted %d rows, want %d and 0", res.NumUpdatedRows, res.NumInsertedRows, srcRows)
				}
			}
			b.ReportMetric(float64(srcRows)*float64(b.N)/b.Elapsed().Seconds(), "source-rows/s")
		})
	}
}
