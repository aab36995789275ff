package tableops

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/write"
)

// Compact rewrites every data file of the branch head with its delete
// files applied into new files, and drops the delete files, in one
// `replace` snapshot: the rows do not change, so changelogs and
// incremental reads report nothing for it. It commits through package
// commit (retries on conflicts, lost answers resolved, files owned).
func Compact(ctx context.Context, t Target) (*Outcome, error) {
	return commitOp(ctx, t, "compact", func(tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		return compactOnce(ctx, tbl, t.Branch, reuse)
	})
}

func compactOnce(ctx context.Context, tbl *table.Table, branch string, reuse *write.Reuse) (*write.Result, error) {
	base, err := write.BranchHead(tbl, branch)
	if err != nil {
		return nil, err
	}
	res := &write.Result{Table: tbl, Branch: branch, Base: base, Mode: write.CopyOnWrite}
	if base == nil {
		return res, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	st, err := scan.LoadState(ctx, fs, tbl.Metadata(), base)
	if err != nil {
		return nil, err
	}
	if len(st.Data) == 0 {
		return res, nil
	}
	reader, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return nil, err
	}
	schema, _, err := reader.ArrowSchema(nil)
	if err != nil {
		return nil, err
	}
	var maxSeq int64
	stream := func(yield func(arrow.RecordBatch, error) bool) {
		for _, e := range st.Data {
			maxSeq = max(maxSeq, e.DataSeq)
			_, seq, err := reader.Live(ctx, e.File, st.DeletesFor(e), nil)
			if err != nil {
				yield(nil, err)
				return
			}
			for b, err := range seq {
				if err != nil {
					yield(nil, err)
					return
				}
				if !yield(b.Rec, nil) {
					return
				}
			}
		}
	}
	added, err := write.WriteData(ctx, tbl, schema, stream)
	for _, df := range added {
		reuse.Own(df.FilePath())
	}
	if err != nil {
		return nil, err
	}
	for _, df := range added {
		res.AddData = append(res.AddData, df)
		res.RowsAdded += df.Count()
	}
	for _, e := range st.Data {
		res.RemoveData = append(res.RemoveData, e.File)
		res.Touched = append(res.Touched, e.Path())
		res.RowsRemoved += e.File.Count()
	}
	for _, e := range st.Deletes {
		res.RemoveDeletes = append(res.RemoveDeletes, e.File)
	}
	res.Stager = func(ctx context.Context, tx *table.Transaction, snapshotProps iceberg.Properties) error {
		rw := tx.NewRewrite(snapshotProps)
		for _, e := range st.Data {
			rw.DeleteFile(e.File)
		}
		for _, e := range st.Deletes {
			rw.DeleteFile(e.File)
		}
		for _, df := range res.AddData {
			rw.AddDataFile(df)
		}
		// The compacted rows keep the newest data sequence number of the
		// rows they came from, so that no equality delete committed
		// concurrently with an older sequence number could apply to them
		// by mistake.
		rw.DataSequenceNumber(maxSeq)
		return rw.Commit(ctx)
	}
	return res, nil
}
