package tableops

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/commit"
	"github.com/floedata/floe/scan"
	"github.com/floedata/floe/write"
)

// Compact rewrites every data file of the branch head with its delete
// files applied into new files, and drops the delete files, in one
// `replace` snapshot: the rows do not change, so changelogs and
// incremental reads report nothing for it.
func Compact(ctx context.Context, t Target) (*Outcome, error) {
	for attempt := 1; attempt <= commit.DefaultMaxAttempts; attempt++ {
		tbl, err := t.Catalog.Load(ctx, t.Ident)
		if err != nil {
			return nil, err
		}
		out, err := compactOnce(ctx, tbl, t.Branch)
		if err == nil || !write.IsConflict(err) {
			if err != nil {
				return nil, fmt.Errorf("compact %s: %w", t, err)
			}
			out.Attempts = attempt
			return out, nil
		}
		commit.Backoff(ctx, attempt)
	}
	return nil, fmt.Errorf("compact %s: gave up after %d attempts because other writers kept committing", t, commit.DefaultMaxAttempts)
}

func compactOnce(ctx context.Context, tbl *table.Table, branch string) (*Outcome, error) {
	base, err := write.BranchHead(tbl, branch)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Table: tbl}
	if base == nil {
		return out, nil
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
		return out, nil
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
	var added []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, schema, stream) {
		if err != nil {
			write.Cleanup(fs, paths(added))
			return nil, err
		}
		added = append(added, df)
	}
	b := branch
	if b == "" {
		b = table.MainBranch
	}
	tx, err := tbl.NewTransactionOnBranchWithError(b)
	if err != nil {
		return nil, err
	}
	rw := tx.NewRewrite(iceberg.Properties{"floe.operation": "compact"})
	for _, e := range st.Data {
		rw.DeleteFile(e.File)
	}
	for _, e := range st.Deletes {
		rw.DeleteFile(e.File)
	}
	for _, df := range added {
		rw.AddDataFile(df)
	}
	// The compacted rows keep the newest data sequence number of the rows
	// they came from, so that no equality delete committed concurrently
	// with an older sequence number could apply to them by mistake.
	rw.DataSequenceNumber(maxSeq)
	if err := rw.Commit(ctx); err != nil {
		write.Cleanup(fs, paths(added))
		return nil, err
	}
	newTbl, err := tx.Commit(ctx)
	if err != nil {
		write.Cleanup(fs, paths(added))
		return nil, err
	}
	out.Table = newTbl
	if s, _ := write.BranchHead(newTbl, branch); s != nil {
		out.SnapshotID = s.SnapshotID
	}
	return out, nil
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.FilePath()
	}
	return out
}
