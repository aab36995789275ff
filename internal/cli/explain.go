package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/sqltx"
)

func init() { extraCommands = append(extraCommands, explainCommand) }

func explainCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "explain PIPELINE.yaml [NAME...]",
		Short: "Say, per transform, whether its next build is incremental or full, and by which rule",
		Long: `Print, for each transform of a pipeline (or the named ones), the rule it is maintained
by and whether its next build will be incremental or full, and why. For sql transforms the
rule comes from the query (docs/sql-transforms.md): row-local queries are maintained from
the changes, others are rebuilt in full with the reason. A missing destination, or one
without watermarks, makes the next build full whatever the rule.`,
		Example: `  floe explain pipeline.yaml
  floe explain pipeline.yaml active_orders --format jsonl`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.explain(cmd.Context(), args[0], args[1:], false)
		},
	}
}

// explain prints, per transform of the pipeline file path (or the named
// ones), the rule it is maintained by and whether its next build is
// incremental or full, and why; it builds nothing (floe explain, floe run
// --explain). full says the builds are forced full (run --full).
func (a *app) explain(ctx context.Context, path string, names []string, full bool) error {
	p, _, err := fileSource{}.load(a, []string{path})
	if err != nil {
		return err
	}
	steps, err := p.Select(names...)
	if err != nil {
		return usageError{err}
	}
	f, err := pipeline.Load(path)
	if err != nil {
		return err
	}
	cat, err := a.Catalog(ctx)
	if err != nil {
		return err
	}
	byName := map[string]pipeline.TransformConfig{}
	for _, tc := range f.Transforms {
		byName[tc.Name] = tc
	}
	cols := []column{{name: "transform", typ: strType}, {name: "type", typ: strType},
		{name: "next_build", typ: strType}, {name: "rule", typ: strType}, {name: "reason", typ: strType}}
	for _, s := range steps {
		tc := byName[s.Name]
		rule, why, err := ruleOf(ctx, tc)
		if err != nil {
			return fmt.Errorf("transform %q: %w", s.Name, err)
		}
		next := "incremental"
		if rule == sqltx.RuleFull {
			next = "full"
		}
		if r := destinationReason(ctx, cat, s.Destinations); r != "" {
			next, why = "full", r
		} else if full {
			next, why = "full", "--full"
		}
		var reason any
		if why != "" {
			reason = why
		}
		for i, v := range []any{s.Name, s.Type, next, rule, reason} {
			cols[i].values = append(cols[i].values, v)
		}
	}
	return a.printColumns(cols)
}

// ruleOf names the rule a transform is maintained by, and for a full
// rule why.
func ruleOf(ctx context.Context, tc pipeline.TransformConfig) (string, string, error) {
	switch tc.Type {
	case pipeline.TypeSync:
		return "changelog by key", "", nil
	case pipeline.TypeFilter:
		return "append-only (an overwrite or delete upstream rebuilds)", "", nil
	case pipeline.TypeMerge:
		return "changelog into MERGE", "", nil
	case pipeline.TypeDelta:
		return "Delta change data feed by key", "", nil
	case pipeline.TypeSQL:
		s, err := sqltx.Open(ctx)
		if err != nil {
			return "", "", err
		}
		defer s.Close()
		plan, err := sqltx.Analyze(ctx, s, tc.Query)
		if err != nil {
			return "", "", err
		}
		rule, reason := plan.RuleFor(tc.Key)
		return rule, reason, nil
	}
	return tc.Type, "", nil
}

// destinationReason says why the next build is full because of the
// destinations' state ("" when they exist with watermarks).
func destinationReason(ctx context.Context, cat *catalog.Catalog, dsts []string) string {
	var out []string
	for _, d := range dsts {
		tbl, err := cat.LoadTable(ctx, d)
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace):
			out = append(out, fmt.Sprintf("output %s does not exist", d))
		case err != nil:
			out = append(out, fmt.Sprintf("output %s: %v", d, err))
		default:
			if _, ok := state.Read(tbl.Properties()); !ok {
				out = append(out, fmt.Sprintf("output %s has no watermark", d))
			}
		}
	}
	return strings.Join(out, "; ")
}
