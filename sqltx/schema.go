package sqltx

import (
	"fmt"
	"iter"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/transform"
)

// What a build does when the query's result schema no longer matches the
// destination's (Spec.OnSchemaChange; docs/sql-transforms.md).
const (
	// SchemaRebuild (the default) rebuilds the destination in full with
	// the new schema, as CREATE OR REPLACE TABLE ... AS SELECT would.
	SchemaRebuild = "rebuild"
	// SchemaEvolve takes only additive changes (columns added, types
	// widened as Iceberg allows): the destination's schema is evolved in
	// place, its other columns keep their field ids, and its rows are
	// recomputed in the same commit. A removed column or another type
	// change fails the build as SchemaFail does.
	SchemaEvolve = "evolve"
	// SchemaFail fails the build, naming the columns, and commits nothing.
	SchemaFail = "fail"
)

// checkPolicy validates Spec.OnSchemaChange.
func checkPolicy(p string) error {
	switch p {
	case "", SchemaRebuild, SchemaEvolve, SchemaFail:
		return nil
	}
	return fmt.Errorf("on_schema_change %q: want rebuild, evolve or fail", p)
}

// schemaChange applies the spec's schema-change policy before an
// incremental build reads anything: when the query's result over the
// inputs' current schemas no longer matches the destination's columns, it
// turns the build into a full rebuild (rebuild, evolve for additive
// changes) or fails it. A build that is full anyway (first build, --full,
// a changed query or semantic version) takes the new schema whatever the
// policy.
func schemaChange(ctx *transform.Context, s Session, spec Spec, plan *Plan) error {
	out := ctx.Output("destination").Table()
	if !ctx.IsIncremental() || out == nil {
		return nil
	}
	got, err := resultSchema(ctx, s, spec, plan)
	if err != nil || got == nil {
		return err
	}
	want, err := table.ArrowSchemaToIcebergWithFreshIDs(got, false)
	if err != nil {
		return fmt.Errorf("the query's result schema: %w", err)
	}
	changes, additive := diffSchemas(out.Schema(), want)
	if len(changes) == 0 {
		return nil
	}
	what := strings.Join(changes, "; ")
	policy := spec.OnSchemaChange
	if policy == "" {
		policy = SchemaRebuild
	}
	switch {
	case policy == SchemaFail:
		return fmt.Errorf("the query's result schema changed since the last build of %s (%s) and on_schema_change is fail; nothing was committed: set on_schema_change: rebuild (replace the schema) or evolve (add columns), run the build once with --full, or change the query to give the old columns",
			spec.Dst, what)
	case policy == SchemaEvolve && !additive:
		return fmt.Errorf("the query's result schema changed since the last build of %s (%s): on_schema_change: evolve only adds columns and widens types; nothing was committed: set on_schema_change: rebuild, run the build once with --full, or change the query to keep the old columns and types",
			spec.Dst, what)
	}
	reason := fmt.Sprintf("sql: the query's result schema changed (%s; on_schema_change: %s)", what, policy)
	ctx.Logger().Info("sql transform's result schema changed", "output", spec.Dst, "changes", what, "on_schema_change", policy)
	ctx.Rebuild(reason)
	return nil
}

// resultSchema is the schema of the query's result over the inputs'
// current schemas (no rows read), or nil when an input is missing (the
// build then fails on it). It binds the inputs, empty, in the build's
// session s and drops them before it returns, so that the build binds
// its own rows in a clean session.
func resultSchema(ctx *transform.Context, s Session, spec Spec, plan *Plan) (_ *arrow.Schema, err error) {
	var bound []string
	defer func() {
		for _, v := range bound {
			if derr := s.Exec(ctx, "DROP VIEW IF EXISTS "+v); derr != nil && err == nil {
				err = derr
			}
		}
	}()
	for _, t := range plan.Tables {
		in := ctx.Input(t)
		if in == nil || (!in.IsDelta() && in.Table() == nil) {
			return nil, nil
		}
		as, err := in.ArrowSchema()
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", t, err)
		}
		ns, name, err := splitName(t)
		if err != nil {
			return nil, err
		}
		empty := iter.Seq2[arrow.RecordBatch, error](func(func(arrow.RecordBatch, error) bool) {})
		if err := s.Bind(ctx, ns, name, transform.NewRows(as, empty)); err != nil {
			return nil, fmt.Errorf("input %s: %w", t, err)
		}
		bound = append(bound, quoteIdent(ns)+"."+quoteIdent(name))
	}
	sch, seq, err := s.Query(ctx, spec.Query)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	for rec, err := range seq {
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		rec.Release()
	}
	return sch, nil
}

// diffSchemas lists how want (the query's result) differs from have (the
// destination) by column name, and whether every difference is additive:
// a column added, or a type Iceberg can widen to.
func diffSchemas(have, want *iceberg.Schema) (changes []string, additive bool) {
	additive = true
	for _, w := range want.Fields() {
		h, ok := have.FindFieldByName(w.Name)
		switch {
		case !ok:
			changes = append(changes, fmt.Sprintf("column %s %s added", w.Name, ddl.FormatType(w.Type)))
		case ddl.FormatType(h.Type) != ddl.FormatType(w.Type):
			changes = append(changes, fmt.Sprintf("column %s changed type from %s to %s", w.Name, ddl.FormatType(h.Type), ddl.FormatType(w.Type)))
			if _, err := iceberg.PromoteType(h.Type, w.Type); err != nil {
				additive = false
			}
		}
	}
	for _, h := range have.Fields() {
		if _, ok := want.FindFieldByName(h.Name); !ok {
			changes = append(changes, fmt.Sprintf("column %s %s removed", h.Name, ddl.FormatType(h.Type)))
			additive = false
		}
	}
	return changes, additive
}
