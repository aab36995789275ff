package merge_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/tableops"
)

// updateRecord builds UPDATE_AFTER change rows (id, v, n) for ids.
func updateRecord(ids []int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "n", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "_change_type", Type: arrow.BinaryTypes.String},
	}, nil))
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("upd-%d", id))
		b.Field(2).(*array.Int64Builder).Append(-id)
		b.Field(3).(*array.StringBuilder).Append("UPDATE_AFTER")
	}
	return b.NewRecordBatch()
}

// BenchmarkWriteMode compares write mode auto with copy-on-write and
// merge-on-read (position deletes on v2, deletion vectors on v3) on a
// table of 400,000 rows in 8 files of 50,000: each iteration applies one
// change (write-ms) and then scans the whole table (scan-ms), and is
// rolled back (untimed) so that every iteration starts from the same
// table; file-scan-ms is a scan of the id range of file 3 alone (the
// file the one-file changes touch), which shows the read amplification of
// that file's deletes. The changes update 0.1% of the rows scattered over every file,
// or a fraction (2%, 10%, 25%, 50%) of one file. Auto runs on v3 with its
// default threshold (write.DefaultRewriteRatio).
//
//	go test ./merge -run '^$' -bench BenchmarkWriteMode -benchtime 3x
func BenchmarkWriteMode(b *testing.B) {
	const files, perFile = 8, 50_000
	changes := []struct {
		name string
		ids  func() []int64
	}{
		{"scattered-0.1pct", func() []int64 {
			var ids []int64
			for id := int64(0); id < files*perFile; id += 1000 {
				ids = append(ids, id+7)
			}
			return ids
		}},
	}
	for _, pct := range []int64{2, 10, 25, 50} {
		changes = append(changes, struct {
			name string
			ids  func() []int64
		}{fmt.Sprintf("one-file-%dpct", pct), func() []int64 {
			var ids []int64
			// Every (100/pct)th row of file 3, spread over the file.
			step := 100 / pct
			for i := int64(0); i < perFile; i += step {
				ids = append(ids, 3*perFile+i)
			}
			return ids
		}})
	}
	modes := []struct {
		name  string
		props iceberg.Properties
	}{
		{"cow", iceberg.Properties{"format-version": "2"}},
		{"mor-v2", iceberg.Properties{"format-version": "2", "write.merge.mode": "merge-on-read"}},
		{"mor-v3", iceberg.Properties{"format-version": "3", "write.merge.mode": "merge-on-read"}},
		{"auto-v3", iceberg.Properties{"format-version": "3", "floe.write.mode": "auto"}},
	}
	for _, c := range changes {
		for _, m := range modes {
			b.Run(c.name+"/"+m.name, func(b *testing.B) {
				e := tabletest.New(b)
				if _, err := e.Create("t", "id long not null, v string, n long", "", nil, m.props); err != nil {
					b.Fatal(err)
				}
				ident := e.Target("t", "").Ident
				for f := int64(0); f < files; f++ {
					rec := benchRecord(f*perFile, perFile, "init", true)
					if _, err := merge.Apply(e.Ctx, e.Cat, ident, rec.Schema(), seqOf(rec), []string{"id"}); err != nil {
						b.Fatal(err)
					}
					rec.Release()
				}
				base := e.Load("t").CurrentSnapshot().SnapshotID
				ids := c.ids()
				rec := updateRecord(ids)
				defer rec.Release()
				var write, read, readFile time.Duration
				fileRange := iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(3*perFile)),
					iceberg.LessThan(iceberg.Reference("id"), int64(4*perFile)))
				chose := ""
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					res, err := merge.Apply(e.Ctx, e.Cat, ident, rec.Schema(), seqOf(rec), []string{"id"})
					if err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if res.Matched != int64(len(ids)) {
						b.Fatalf("matched %d keys, want %d", res.Matched, len(ids))
					}
					chose = res.Mode
					_, seq, err := scan.Rows(e.Ctx, e.Load("t"), scan.Options{})
					if err != nil {
						b.Fatal(err)
					}
					var n int64
					for batch, err := range seq {
						if err != nil {
							b.Fatal(err)
						}
						n += batch.NumRows()
						batch.Release()
					}
					t2 := time.Now()
					if n != files*perFile {
						b.Fatalf("scanned %d rows, want %d", n, files*perFile)
					}
					// The touched file's id range alone: the files it
					// prunes to (the rewritten file, or the file with its
					// deletes and the updated rows' file).
					_, seq, err = scan.Rows(e.Ctx, e.Load("t"), scan.Options{Filter: fileRange})
					if err != nil {
						b.Fatal(err)
					}
					n = 0
					for batch, err := range seq {
						if err != nil {
							b.Fatal(err)
						}
						n += batch.NumRows()
						batch.Release()
					}
					t3 := time.Now()
					if n < perFile {
						b.Fatalf("scanned %d rows of file 3, want at least %d", n, perFile)
					}
					write += t1.Sub(t0)
					read += t2.Sub(t1)
					readFile += t3.Sub(t2)
					b.StopTimer()
					if _, err := tableops.Rollback(e.Ctx, e.Cat, ident, "", base); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(write.Milliseconds())/float64(b.N), "write-ms/op")
				b.ReportMetric(float64(read.Milliseconds())/float64(b.N), "scan-ms/op")
				b.ReportMetric(float64(readFile.Milliseconds())/float64(b.N), "file-scan-ms/op")
				if testing.Verbose() {
					b.Logf("%s: %s", b.Name(), chose)
				}
			})
		}
	}
}
