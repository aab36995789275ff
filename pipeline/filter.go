package pipeline

import (
	"fmt"
	"strings"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pushdown"
)

// FilterSpec describes an append-only filter: append to Dst the rows added
// to Src that match Filter, projected to Columns.
type FilterSpec struct {
	Name        string   // transform name (default "filter <src> -> <dst>")
	Src         string   // source table
	Dst         string   // destination table
	Filter      string   // SQL predicate ("" = every row)
	Columns     []string // projection; nil = all
	Branch      string   // source branch ("" = main)
	PartitionBy string   // partition spec floe creates Dst with
	// Properties for the destination table when floe creates it.
	Properties map[string]string
	// SemanticVersion, when bumped, rebuilds the destination in full.
	SemanticVersion int
}

// Filter returns the append-only transform for spec (the seeds'
// append-only example). An incremental build appends the rows added since
// the last build (compactions add none); the first build, and any build
// after an overwrite or delete upstream, replaces Dst with the matching
// rows of Src's current state. Its semantic version follows the filter and
// columns (and SemanticVersion), so changing them rebuilds Dst; the
// partition spec applies only when floe creates Dst.
func Filter(spec FilterSpec) (*transform.Transform, error) {
	if spec.Src == "" || spec.Dst == "" {
		return nil, fmt.Errorf("%w: filter: a source and a destination are required", ErrInvalidPipeline)
	}
	name := spec.Name
	if name == "" {
		name = fmt.Sprintf("filter %s -> %s", spec.Src, spec.Dst)
	}
	version := optionsVersion(spec.SemanticVersion, spec.Filter, strings.Join(spec.Columns, ","))
	compute := func(ctx *transform.Context) error {
		src := ctx.Input("source")
		if spec.Filter != "" {
			src = src.Filter(spec.Filter)
		}
		rows, err := src.Added()
		if err != nil {
			return err
		}
		if rows, err = rows.Select(spec.Columns...); err != nil {
			return fmt.Errorf("columns: %w", err)
		}
		return ctx.Output("destination").Write(rows)
	}
	return transform.New(name, compute,
		transform.WithInputOnBranch("source", spec.Src, spec.Branch),
		transform.WithOutput("destination", spec.Dst, transform.PartitionBy(spec.PartitionBy),
			transform.TableProperties(spec.Properties)),
		transform.WithReadMode(transform.AppendOnly),
		transform.WithSemanticVersion(version),
		withPush(&transform.Push{Kind: pushdown.JobFilter, Filter: spec.Filter, Columns: spec.Columns})), nil
}
