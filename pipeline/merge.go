package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/pushdown"
)

// MergeSpec describes a merge transform: run Statement, a MERGE INTO with
// {destination} and {changes} placeholders, with the changelog of Src
// since the last build (latest change per key) as {changes}.
type MergeSpec struct {
	Name        string   // transform name (default "merge <src> -> <dst>")
	Src         string   // source table
	Dst         string   // destination table
	Keys        []string // key columns of the changelog (unique in the source)
	Statement   string   // MERGE INTO {destination} ... USING {changes} ...
	Branch      string   // source branch ("" = main)
	PartitionBy string   // partition spec floe creates Dst with
	// Properties for the destination table when floe creates it.
	Properties map[string]string
	// SemanticVersion, when bumped, rebuilds the destination in full.
	SemanticVersion int
}

// ChangesName is the name {changes} stands for in a merge statement.
const ChangesName = "changes"

// mergeRequest is one MERGE INTO a merge transform runs.
type mergeRequest struct {
	// Statement is the MERGE INTO with {destination} replaced by the
	// destination's name and {changes} by ChangesName.
	Statement string
	// Changes are the rows {changes} stands for: the source's columns plus
	// _change_type (INSERT, UPDATE_AFTER or DELETE), _change_ordinal and
	// _commit_snapshot_id, one row per key. runMerge reads them once and
	// does not release them.
	Changes array.RecordReader
	// Commit says where and how to commit: the build's watermarks go into
	// the same commit, conditional on Commit.Expect (see
	// transform.CommitRequest). When Commit.Replace is true the build is
	// not incremental: the result is the statement run against an empty
	// destination, replacing the destination's rows in one commit.
	Commit transform.CommitRequest
}

// Merge returns the transform for spec. Every build reads the source's
// changelog since the last build (on a full build: the current rows as
// INSERTs) and runs the statement on it with merge.Merge, in one commit
// with the build's watermarks. floe creates the destination on the first
// build with the source's columns, the keys as identifier fields. Its
// semantic version follows the keys and statement (and SemanticVersion).
func Merge(spec MergeSpec) (*transform.Transform, error) {
	if len(spec.Keys) == 0 {
		return nil, fmt.Errorf("%w: merge %s -> %s: key columns are required", ErrInvalidPipeline, spec.Src, spec.Dst)
	}
	if !strings.Contains(spec.Statement, "{destination}") || !strings.Contains(spec.Statement, "{changes}") {
		return nil, fmt.Errorf("%w: merge %s -> %s: the statement must use {destination} and {changes}", ErrInvalidPipeline, spec.Src, spec.Dst)
	}
	ident, err := catalog.ParseTableName(spec.Dst)
	if err != nil {
		return nil, fmt.Errorf("%w: merge %s -> %s: %w", ErrInvalidPipeline, spec.Src, spec.Dst, err)
	}
	name := spec.Name
	if name == "" {
		name = fmt.Sprintf("merge %s -> %s", spec.Src, spec.Dst)
	}
	statement := strings.NewReplacer("{destination}", catalog.FormatName(ident), "{changes}", ChangesName).Replace(spec.Statement)
	version := optionsVersion(spec.SemanticVersion, strings.Join(spec.Keys, ","), spec.Statement)
	compute := func(ctx *transform.Context) error {
		changes, err := ctx.Input("source").Changelog(spec.Keys...)
		if err != nil {
			return err
		}
		defer changes.Release()
		return ctx.Output("destination").Commit("merge", dataSchema(changes.Schema()), func(cctx context.Context, req transform.CommitRequest) (transform.CommitResult, error) {
			return runMerge(cctx, mergeRequest{Statement: statement, Changes: changes, Commit: req})
		})
	}
	return transform.New(name, compute,
		transform.WithInputOnBranch("source", spec.Src, spec.Branch),
		transform.WithOutput("destination", spec.Dst, transform.Identifier(spec.Keys...),
			transform.PartitionBy(spec.PartitionBy), transform.TableProperties(spec.Properties)),
		transform.WithReadMode(transform.Changelog),
		transform.WithSemanticVersion(version),
		withPush(&transform.Push{Kind: pushdown.JobMerge, Keys: spec.Keys, Statement: statement})), nil
}

// dataSchema drops the changelog's metadata columns.
func dataSchema(s *arrow.Schema) *arrow.Schema {
	var fields []arrow.Field
	for _, f := range s.Fields() {
		switch f.Name {
		case "_change_type", "_change_ordinal", "_commit_snapshot_id":
			continue
		}
		fields = append(fields, f)
	}
	return arrow.NewSchema(fields, nil)
}

// runMerge runs a merge step's statement with merge.Merge, in one commit
// carrying the build's watermarks (replacing the destination's rows on a
// full build).
func runMerge(ctx context.Context, req mergeRequest) (transform.CommitResult, error) {
	stmt, err := expr.ParseMerge(req.Statement)
	if err != nil {
		return transform.CommitResult{}, fmt.Errorf("%w: %s", ErrInvalidPipeline, expr.FormatError(req.Statement, err))
	}
	changes := req.Changes
	src := merge.Source{Name: ChangesName, Schema: changes.Schema(), Rows: func(yield func(arrow.RecordBatch, error) bool) {
		for changes.Next() {
			rec := changes.RecordBatch()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := changes.Err(); err != nil {
			yield(nil, err)
		}
	}}
	opts := []merge.Option{
		merge.WithBranch(req.Commit.Branch),
		merge.WithCommitProperties(req.Commit.SetProperties),
		merge.WithExpectedProperties(req.Commit.Expect),
		merge.WithSnapshotProperties(req.Commit.SnapshotProperties),
		merge.WithCommitEmpty(),
	}
	if req.Commit.Replace {
		opts = append(opts, merge.WithReplaceTarget())
	}
	res, err := merge.Merge(ctx, req.Commit.Catalog, stmt, src, opts...)
	if err != nil {
		return transform.CommitResult{}, err
	}
	return transform.CommitResult{Committed: res.Committed, SnapshotID: res.SnapshotID, RowsAdded: res.RowsAdded, RowsRemoved: res.RowsRemoved,
		Attempts: res.Attempts, AnswerLost: res.AnswerLost}, nil
}
