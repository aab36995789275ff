package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/write"
)

// commitFunc returns how an attempt commits tx, which res.Stage staged.
//
// A row delta whose position deletes or deletion vectors reference data
// files is committed by floe (commitRowDelta) instead of tx.Commit:
// iceberg-go's RowDelta validation (validateDataFilesExist) checks those
// references by reading the head snapshot's data manifests in list order,
// without partition pruning and also when nothing was committed since the
// change was computed: half the manifests of a large table for every
// apply (57% of the goal-table apply, docs/benchmarks.md section 7). floe
// makes the same check the way Iceberg Java does (checkReferencedLive),
// reading only what was committed since. Everything else (equality
// deletes, whose validation under serializable isolation stays
// iceberg-go's; copy-on-write replaces; compaction's rewrite) commits
// through tx.Commit.
func commitFunc(cat *catalog.Catalog, tx *table.Transaction, res *write.Result) func(context.Context) (*table.Table, error) {
	if !res.RowDelta() {
		return tx.Commit
	}
	var refs []string
	for _, f := range res.AddDeletes {
		switch f.ContentType() {
		case iceberg.EntryContentEqDeletes:
			return tx.Commit
		case iceberg.EntryContentPosDeletes:
			if ref := f.ReferencedDataFile(); ref != nil && *ref != "" {
				refs = append(refs, *ref)
			}
		}
	}
	if len(refs) == 0 {
		return tx.Commit
	}
	return func(ctx context.Context) (*table.Table, error) {
		return commitRowDelta(ctx, cat, tx, res, refs)
	}
}

// commitRowDelta checks refs (checkReferencedLive) and sends the updates
// and requirements tx.Commit would send (tx.TableCommit: among them the
// AssertRefSnapshotID on the branch head the change was computed on, so
// that a commit by anyone to the branch in between fails this one as a
// conflict, and Run recomputes), then does what tx.Commit does after a
// commit: the updates' post-commit steps and the removal of old metadata
// files when the table asks for it.
func commitRowDelta(ctx context.Context, cat *catalog.Catalog, tx *table.Transaction, res *write.Result, refs []string) (*table.Table, error) {
	base := res.Table
	if err := checkReferencedLive(ctx, base, res.Branch, res.Base, refs); err != nil {
		return nil, err
	}
	tc, err := tx.TableCommit()
	if err != nil {
		return nil, err
	}
	// The transaction is spent whatever the answer: a retry stages a new
	// one on the reloaded table.
	tx.MarkCommitted()
	if len(tc.Updates) == 0 {
		return base, nil
	}
	meta, loc, err := cat.CommitTable(ctx, tc.Identifier, tc.Requirements, tc.Updates)
	if err != nil {
		return nil, err
	}
	after := cat.Bind(table.New(tc.Identifier, meta, loc, base.FS, nil))
	for _, u := range tc.Updates {
		if perr := u.PostCommit(ctx, base, after); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	removeOldMetadata(ctx, base, after)
	return after, err
}

// checkReferencedLive checks that no snapshot committed to branch since
// the change was computed on snapshot from removed a data file of refs
// (a concurrent compaction, a copy-on-write delete): the position deletes
// of the change would then point at rows that are no longer live. The
// files were live in from, where the change found them, so only the data
// manifests the later snapshots added, and in them the DELETED entries,
// can say otherwise; when tbl's branch head is from, nothing is read. A
// from that is no longer an ancestor of the head is an error wrapping
// table.ErrCommitDiverged; a removed file one wrapping
// table.ErrDataFilesMissing (as iceberg-go's check reports both).
func checkReferencedLive(ctx context.Context, tbl *table.Table, branch string, from *table.Snapshot, refs []string) error {
	head, err := write.BranchHead(tbl, branch)
	if err != nil {
		return err
	}
	if branch == "" {
		branch = table.MainBranch
	}
	if head == nil {
		return fmt.Errorf("%w: branch %s has no snapshot, but position deletes reference data files (e.g. %s)", table.ErrDataFilesMissing, branch, refs[0])
	}
	meta := tbl.Metadata()
	var since []*table.Snapshot
	for s := head; from == nil || s.SnapshotID != from.SnapshotID; {
		since = append(since, s)
		if s.ParentSnapshotID == nil {
			if from == nil {
				break
			}
			return fmt.Errorf("%w: snapshot %d the change was computed on is not an ancestor of branch %s's head %d", table.ErrCommitDiverged, from.SnapshotID, branch, head.SnapshotID)
		}
		if s = meta.SnapshotByID(*s.ParentSnapshotID); s == nil {
			if from == nil {
				break
			}
			return fmt.Errorf("%w: the ancestry of branch %s's head %d does not reach snapshot %d the change was computed on", table.ErrCommitDiverged, branch, head.SnapshotID, from.SnapshotID)
		}
	}
	if len(since) == 0 {
		return nil
	}
	needed := make(map[string]bool, len(refs))
	for _, p := range refs {
		needed[p] = true
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return err
	}
	var missing []string
	for _, s := range since {
		manifests, err := s.Manifests(fs)
		if err != nil {
			return fmt.Errorf("read the manifest list of snapshot %d: %w", s.SnapshotID, err)
		}
		for _, mf := range manifests {
			if mf.SnapshotID() != s.SnapshotID || mf.ManifestContent() != iceberg.ManifestContentData || mf.DeletedDataFiles() == 0 {
				continue
			}
			for e, err := range mf.Entries(fs, false) {
				if err != nil {
					return fmt.Errorf("read manifest %s of snapshot %d: %w", mf.FilePath(), s.SnapshotID, err)
				}
				if p := e.DataFile().FilePath(); e.Status() == iceberg.EntryStatusDELETED && needed[p] {
					delete(needed, p)
					missing = append(missing, fmt.Sprintf("%s (removed by snapshot %d)", p, s.SnapshotID))
				}
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	slices.Sort(missing)
	return fmt.Errorf("%w: %d data files the change's position deletes reference were removed since snapshot %s it was computed on, e.g. %s",
		table.ErrDataFilesMissing, len(missing), snapshotName(from), missing[0])
}

func snapshotName(s *table.Snapshot) string {
	if s == nil {
		return "(none)"
	}
	return fmt.Sprint(s.SnapshotID)
}

// removeOldMetadata removes the metadata files that after's metadata log
// no longer lists, when after sets write.metadata.delete-after-commit.enabled
// (what iceberg-go does after a commit; failures only logged, as there).
func removeOldMetadata(ctx context.Context, base, after *table.Table) {
	if !after.Properties().GetBool(table.MetadataDeleteAfterCommitEnabledKey, table.MetadataDeleteAfterCommitEnabledDefault) {
		return
	}
	keep := map[string]bool{}
	for e := range after.Metadata().PreviousFiles() {
		keep[e.MetadataFile] = true
	}
	fs, err := after.FS(ctx)
	if err != nil {
		return
	}
	for e := range base.Metadata().PreviousFiles() {
		if !keep[e.MetadataFile] {
			if err := fs.Remove(e.MetadataFile); err != nil {
				slog.Warn("commit: removing an old metadata file failed", "file", e.MetadataFile, "error", err)
			}
		}
	}
}
