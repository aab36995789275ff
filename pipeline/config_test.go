package pipeline_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/pipeline"
)

// TestConfig parses pipeline files from testdata/config. Commands:
//
//	parse        parses the input as pipeline.yaml and prints the steps in
//	             dependency order (name, type, sources -> destinations,
//	             schedule), or the errors, one per line
func TestConfig(t *testing.T) {
	datadriven.RunTest(t, "testdata/config", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "parse":
			f, err := pipeline.Parse("pipeline.yaml", []byte(d.Input))
			if err != nil {
				var ve *pipeline.ValidationError
				if !errors.Is(err, pipeline.ErrInvalidPipeline) || !errors.As(err, &ve) || len(ve.Problems) == 0 {
					t.Fatalf("want a *ValidationError wrapping ErrInvalidPipeline, got %v", err)
				}
				return "error:\n" + strings.ReplaceAll(err.Error(), "invalid pipeline: ", "") + "\n"
			}
			p, err := f.Pipeline()
			if err != nil {
				if !errors.Is(err, pipeline.ErrInvalidPipeline) {
					t.Fatalf("error does not wrap ErrInvalidPipeline: %v", err)
				}
				if errors.Is(err, pipeline.ErrCycle) {
					return "cycle error:\n" + strings.ReplaceAll(err.Error(), "invalid pipeline: ", "") + "\n"
				}
				return "error:\n" + strings.ReplaceAll(err.Error(), "invalid pipeline: ", "") + "\n"
			}
			var b strings.Builder
			for _, s := range p.Steps {
				fmt.Fprintf(&b, "%s (%s, line %d): %s -> %s", s.Name, s.Type, s.Line, strings.Join(s.Sources, ","), strings.Join(s.Destinations, ","))
				if s.Every != 0 {
					fmt.Fprintf(&b, " every %s", s.Every)
				}
				if up := p.Upstream(s); len(up) > 0 {
					fmt.Fprintf(&b, " after %s", strings.Join(up, ","))
				}
				b.WriteString("\n")
			}
			o := f.CatalogOptions()
			if o.Warehouse != "" || o.Name != "" {
				fmt.Fprintf(&b, "catalog: warehouse=%q name=%q config=%q\n", o.Warehouse, o.Name, o.ConfigFile)
			}
			fmt.Fprintf(&b, "status file: %s\n", p.StatusFile)
			for _, w := range f.Warnings {
				fmt.Fprintf(&b, "warning: %s\n", w)
			}
			return b.String()
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
