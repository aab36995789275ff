package transform

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/pushdown"
)

// Push describes a transform whose builds a remote engine can run (the
// pipeline types sync, filter and merge set it): what it computes, in
// terms the engine can plan without running Compute. Transforms written
// in Go have none and always build locally.
type Push struct {
	Kind      pushdown.JobKind // JobSync, JobFilter or JobMerge
	Keys      []string
	Filter    string
	Columns   []string
	Statement string // JobMerge: {destination} and {changes} replaced
}

// chooseEngine decides where the build runs (Runner.Engine), and runs it
// on the remote engine when chosen. It reports whether the build ran
// there.
func (b *build) chooseEngine(res *Result) (bool, error) {
	r, t := b.r, b.t
	settings := r.EngineSettings
	if settings.Kind == "" {
		settings.Kind = pushdown.Local
	}
	if settings.Kind == pushdown.Local {
		b.engine = pushdown.Decision{Engine: string(pushdown.Local)}
		res.Engine = b.engine.Engine
		return false, nil
	}
	unsupported := ""
	switch {
	case t.Push == nil:
		unsupported = fmt.Sprintf("transform %s is Go code, which only floe's engine runs", t.Name)
	case len(t.Inputs) != 1 || len(t.Outputs) != 1:
		unsupported = fmt.Sprintf("transform %s has %d inputs and %d outputs; the Spark engine builds one input into one output", t.Name, len(t.Inputs), len(t.Outputs))
	case r.Engine == nil:
		unsupported = "no Spark engine is connected"
	}
	var est pushdown.Estimate
	for _, in := range b.inputs {
		est = est.Add(pushdown.EstimateRange(in.tbl, in.head, in.start))
	}
	for _, o := range b.outputs {
		if b.incremental {
			est = est.Add(pushdown.EstimateOutput(o.tbl))
		}
	}
	d, err := settings.Choose(est, unsupported)
	if err != nil {
		return false, fmt.Errorf("transform %s: %w", t.Name, err)
	}
	b.engine = d
	res.Engine, res.EngineReason = d.Engine, d.Reason
	if !d.Spark() {
		if d.Reason != "" {
			b.log.Info("build runs locally", "reason", d.Reason)
		}
		return false, nil
	}
	b.log.Info("build pushed down to Spark", "remote", r.Engine.Remote(), "reason", d.Reason)
	in := b.inputs[t.Inputs[0].Name]
	o := b.outputs[t.Outputs[0].Name]
	o.begin("spark " + string(t.Push.Kind))
	if o.tbl == nil {
		schema, err := table.SchemaToArrowSchema(in.tbl.Schema(), nil, true, false)
		if err != nil {
			return true, err
		}
		if cols := t.Push.Columns; len(cols) > 0 && t.Push.Kind != pushdown.JobMerge {
			var fields []arrow.Field
			for _, c := range cols {
				i := schema.FieldIndices(c)
				if len(i) == 0 {
					return true, fmt.Errorf("transform %s: %w %q", t.Name, ErrUnknownColumn, c)
				}
				fields = append(fields, schema.Field(i[0]))
			}
			schema = arrow.NewSchema(fields, nil)
		}
		ident := t.Push.Keys
		if t.Push.Kind == pushdown.JobFilter {
			ident = o.spec.Identifier
		}
		if _, err := o.ensure(b.ctx, schema, ident); err != nil {
			return true, fmt.Errorf("transform %s: output %s: %w", t.Name, o.spec.Table, err)
		}
	}
	srcIdent, err := catalog.ParseTableName(in.spec.Table)
	if err != nil {
		return true, err
	}
	job := pushdown.Job{Kind: t.Push.Kind, Catalog: r.Catalog, Output: o.ident, Branch: o.spec.Branch,
		Replace: !b.incremental, Keys: t.Push.Keys, Filter: in.filter, Columns: t.Push.Columns, Statement: t.Push.Statement,
		Source:        pushdown.Input{Table: srcIdent},
		SetProperties: map[string]string(b.next.Properties()), Expect: o.expect,
		Summary: map[string]string(o.summary(map[string]string{"floe.operation": "transform"})), Logger: b.log}
	if job.Filter == "" {
		job.Filter = t.Push.Filter
	}
	if b.incremental {
		job.Source.Start = in.start
	}
	if in.head != nil {
		id := in.head.SnapshotID
		job.Source.End = &id
	}
	out, err := r.Engine.Run(b.ctx, job)
	if err != nil {
		// The engine's errors name the output (pushdown.Engine.Run).
		return true, fmt.Errorf("transform %s: %w", t.Name, err)
	}
	res.SparkSession, res.SparkApp, res.Remote = out.SessionID, out.AppID, out.Remote
	o.result.Committed, o.result.SnapshotID = out.Committed, out.SnapshotID
	o.result.RowsAdded, o.result.RowsRemoved, o.result.Attempts = out.RowsAdded, out.RowsRemoved, out.Attempts
	if out.AnswerLost {
		b.log.Warn("the answer of a Spark statement was lost; floe found the build's commit by its id", "output", o.spec.Table, "build_id", out.BuildID)
	}
	return true, nil
}
