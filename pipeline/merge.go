package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/transform"
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

// MergeRequest is one MERGE INTO a merge transform asks MergeFunc to run.
type MergeRequest struct {
	// Statement is the MERGE INTO with {destination} replaced by the
	// destination's name and {changes} by ChangesName.
	Statement string
	// Changes are the rows {changes} stands for: the source's columns plus
	// _change_type (INSERT, UPDATE_AFTER or DELETE), _change_ordinal and
	// _commit_snapshot_id, one row per key. MergeFunc reads them once and
	// need not release them.
	Changes array.RecordReader
	// Commit says where and how to commit: the build's watermarks go into
	// the same commit, conditional on Commit.Expect (see
	// transform.CommitRequest). When Commit.Replace is true the build is
	// not incremental: the result must be the statement run against an
	// empty destination, replacing the destination's rows in one commit.
	Commit transform.CommitRequest
}

// MergeFunc runs a MERGE INTO statement for merge transforms. It is nil
// until a MERGE INTO executor is wired into this build of floe; a merge
// transform then fails with ErrNotAvailable. Set it once, before running
// pipelines (it is read without synchronisation).
var MergeFunc func(ctx context.Context, req MergeRequest) (transform.CommitResult, error)

// Merge returns the transform for spec. Every build reads the source's
// changelog since the last build (on a full build: the current rows as
// INSERTs) and hands it to MergeFunc with the statement, in one commit
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
		run := MergeFunc
		if run == nil {
			return errMergeNotWired
		}
		changes, err := ctx.Input("source").Changelog(spec.Keys...)
		if err != nil {
			return err
		}
		defer changes.Release()
		return ctx.Output("destination").Commit("merge", dataSchema(changes.Schema()), func(cctx context.Context, req transform.CommitRequest) (transform.CommitResult, error) {
			return run(cctx, MergeRequest{Statement: statement, Changes: changes, Commit: req})
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

var errMergeNotWired = fmt.Errorf("merge transforms are %w: MERGE INTO is not wired into this floe (pipeline.MergeFunc is nil)", ErrNotAvailable)

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
