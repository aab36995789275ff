package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/pushdown"
	"github.com/floedata/floe/sqltx"
)

// Step is one named unit of a pipeline: an incremental transform, or a
// Delta Lake sync. A Step is not modified by running it and may be shared
// by goroutines.
type Step struct {
	// Name is unique in its pipeline.
	Name string
	// Type is sync, filter, merge, sql or delta for steps of a file, go for
	// transforms written in Go.
	Type string
	// Every is the step's own schedule (0 = the scheduler's default).
	Every time.Duration
	// TargetLag, when not 0, schedules the step by freshness instead of
	// Every: it is built when its lag would pass TargetLag.
	TargetLag time.Duration
	// WarnAfter and ErrorAfter are the freshness targets of the step's
	// outputs (0 = none).
	WarnAfter, ErrorAfter time.Duration
	// Definition identifies the step's definition (a hash of its
	// configuration), so that the run history can tell runs of an older
	// definition; "" when unknown.
	Definition string
	// Sources are the tables the step reads ("ns.t"), or for delta the
	// Delta table's location.
	Sources []string
	// Destinations are the tables the step writes.
	Destinations []string
	// Transform is what a run builds (nil for delta steps).
	Transform *transform.Transform
	// Delta is the sync a delta step runs (nil for other steps).
	Delta *DeltaSpec
	// Line is the step's line in its pipeline file (0 when not from one).
	Line int
	// Engine is the step's own engine choice ("" = the runner's).
	Engine pushdown.Kind
}

// Pipeline is a validated set of steps in dependency order: a step comes
// after every step whose destination is one of its sources. It is
// read-only once built and safe for concurrent use.
type Pipeline struct {
	// Name is the pipeline file's path, or the program's name.
	Name string
	// Steps are in dependency order (file order among independent ones).
	Steps []*Step
	// StatusFile is where runs are recorded for floe status ("" = none).
	StatusFile string
	// Spark is the file's spark: block (zero when none).
	Spark    SparkConfig
	byName   map[string]*Step
	upstream map[string][]string
}

// New validates steps and orders them by dependency. Names must be unique
// and no two steps may write the same table. A cycle is an error wrapping
// ErrCycle and ErrInvalidPipeline that names the transforms in it.
func New(name string, steps []*Step) (*Pipeline, error) {
	p := &Pipeline{Name: name, byName: map[string]*Step{}, upstream: map[string][]string{}}
	writer := map[string]string{} // table -> step name
	for _, s := range steps {
		if s.Name == "" {
			return nil, fmt.Errorf("%w: %s: a transform has no name", ErrInvalidPipeline, name)
		}
		if _, dup := p.byName[s.Name]; dup {
			return nil, fmt.Errorf("%w: %s: two transforms are named %q", ErrInvalidPipeline, name, s.Name)
		}
		p.byName[s.Name] = s
		for _, d := range s.Destinations {
			key := tableKey(d)
			if other, ok := writer[key]; ok {
				return nil, fmt.Errorf("%w: %s: transforms %q and %q both write %s; a table has one writer in a pipeline", ErrInvalidPipeline, name, other, s.Name, d)
			}
			writer[key] = s.Name
		}
	}
	for _, s := range steps {
		var ups []string
		for _, src := range s.Sources {
			if w, ok := writer[tableKey(src)]; ok && !slices.Contains(ups, w) {
				ups = append(ups, w)
			}
		}
		p.upstream[s.Name] = ups
	}
	order, err := topoSort(steps, p.upstream)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidPipeline, name, err)
	}
	p.Steps = order
	return p, nil
}

// tableKey normalizes a table name so that `ns`.t and ns.t match.
func tableKey(name string) string {
	if parts, err := catalog.ParseName(name); err == nil {
		return catalog.FormatName(parts)
	}
	return name
}

// topoSort orders steps so that each comes after its upstream steps,
// keeping the given order among steps that are free to go (Kahn's
// algorithm, always taking the first ready step).
func topoSort(steps []*Step, upstream map[string][]string) ([]*Step, error) {
	done := map[string]bool{}
	var out []*Step
	for len(out) < len(steps) {
		progressed := false
		for _, s := range steps {
			if done[s.Name] {
				continue
			}
			ready := true
			for _, u := range upstream[s.Name] {
				if !done[u] {
					ready = false
					break
				}
			}
			if ready {
				done[s.Name] = true
				out = append(out, s)
				progressed = true
				break
			}
		}
		if !progressed {
			return nil, findCycle(steps, upstream, done)
		}
	}
	return out, nil
}

// findCycle names one cycle among the steps not done.
func findCycle(steps []*Step, upstream map[string][]string, done map[string]bool) error {
	const (
		unseen = iota
		onPath
		finished
	)
	mark := map[string]int{}
	var path []string
	var cycle []string
	var visit func(n string) bool
	visit = func(n string) bool {
		mark[n] = onPath
		path = append(path, n)
		for _, u := range upstream[n] {
			if done[u] {
				continue
			}
			switch mark[u] {
			case onPath:
				i := slices.Index(path, u)
				cycle = append(append([]string{}, path[i:]...), u)
				return true
			case unseen:
				if visit(u) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		mark[n] = finished
		return false
	}
	for _, s := range steps {
		if !done[s.Name] && mark[s.Name] == unseen && visit(s.Name) {
			break
		}
	}
	// The walk follows "reads from" edges; print the cycle in the order
	// data flows (a writes what b reads: a -> b).
	slices.Reverse(cycle)
	return fmt.Errorf("%w: %s (each reads the destination of the one before it)", ErrCycle, strings.Join(cycle, " -> "))
}

// Step returns the step named name, or nil.
func (p *Pipeline) Step(name string) *Step { return p.byName[name] }

// Upstream returns the names of the steps whose destinations s reads.
func (p *Pipeline) Upstream(s *Step) []string { return p.upstream[s.Name] }

// Select returns the named steps in dependency order; no names selects
// every step. An unknown name is an error wrapping ErrUnknownTransform
// that lists the pipeline's transforms.
func (p *Pipeline) Select(names ...string) ([]*Step, error) {
	if len(names) == 0 {
		return p.Steps, nil
	}
	want := map[string]bool{}
	for _, n := range names {
		if p.byName[n] == nil {
			var all []string
			for _, s := range p.Steps {
				all = append(all, s.Name)
			}
			return nil, fmt.Errorf("%w %q in %s (transforms: %s)", ErrUnknownTransform, n, p.Name, strings.Join(all, ", "))
		}
		want[n] = true
	}
	var out []*Step
	for _, s := range p.Steps {
		if want[s.Name] {
			out = append(out, s)
		}
	}
	return out, nil
}

// FromTransforms makes a pipeline of transforms written in Go: each is a
// step of type go, ordered by the tables they read and write.
func FromTransforms(name string, ts []*transform.Transform) (*Pipeline, error) {
	var steps []*Step
	for _, t := range ts {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrInvalidPipeline, name, err)
		}
		s := &Step{Name: t.Name, Type: TypeGo, Transform: t}
		for _, in := range t.Inputs {
			s.Sources = append(s.Sources, in.Table)
		}
		for _, out := range t.Outputs {
			s.Destinations = append(s.Destinations, out.Table)
		}
		steps = append(steps, s)
	}
	return New(name, steps)
}

// Pipeline makes the steps of a validated file, in dependency order.
// Errors name the file, the transform and its line.
func (f *File) Pipeline() (*Pipeline, error) {
	var steps []*Step
	for _, tc := range f.Transforms {
		s, err := tc.step()
		if err != nil {
			line := tc.Line
			if l, ok := tc.line["query"]; ok && errors.Is(err, sqltx.ErrInvalidQuery) {
				line = l // the position in the query follows
			}
			return nil, fmt.Errorf("%w: %s:%d: transform %q: %w", ErrInvalidPipeline, f.Path, line, tc.Name, err)
		}
		steps = append(steps, s)
	}
	p, err := New(f.Path, steps)
	if err != nil {
		return nil, err
	}
	p.StatusFile = StatusFileFor(f.Path)
	p.Spark = f.Spark
	return p, nil
}

func (tc TransformConfig) step() (*Step, error) {
	s := &Step{Name: tc.Name, Type: tc.Type, Every: time.Duration(tc.Every), Line: tc.Line,
		Destinations: []string{tc.Destination}, TargetLag: time.Duration(tc.TargetLag),
		WarnAfter: time.Duration(tc.Freshness.WarnAfter), ErrorAfter: time.Duration(tc.Freshness.ErrorAfter),
		Definition: tc.definition(), Engine: pushdown.Kind(tc.Engine)}
	var err error
	switch tc.Type {
	case TypeSync:
		s.Sources = []string{tc.Source}
		s.Transform, err = Sync(SyncSpec{Name: tc.Name, Src: tc.Source, Dst: tc.Destination, Keys: tc.Key,
			Filter: tc.Filter, Columns: tc.Columns, Branch: tc.Branch, PartitionBy: tc.PartitionBy,
			Properties: tc.Properties, SemanticVersion: tc.SemanticVersion, AllowNonIdentifierKey: tc.AllowNonIdentifierKey})
	case TypeFilter:
		s.Sources = []string{tc.Source}
		s.Transform, err = Filter(FilterSpec{Name: tc.Name, Src: tc.Source, Dst: tc.Destination, Filter: tc.Filter,
			Columns: tc.Columns, Branch: tc.Branch, PartitionBy: tc.PartitionBy, Properties: tc.Properties,
			SemanticVersion: tc.SemanticVersion})
	case TypeMerge:
		s.Sources = []string{tc.Source}
		s.Transform, err = Merge(MergeSpec{Name: tc.Name, Src: tc.Source, Dst: tc.Destination, Keys: tc.Key,
			Statement: tc.Statement, Branch: tc.Branch, PartitionBy: tc.PartitionBy, Properties: tc.Properties,
			SemanticVersion: tc.SemanticVersion})
	case TypeSQL:
		var plan *sqltx.Plan
		s.Transform, plan, err = sqltx.New(context.Background(), sqltx.Spec{Name: tc.Name, Query: tc.Query,
			Dst: tc.Destination, Keys: tc.Key, PartitionBy: tc.PartitionBy, Properties: tc.Properties,
			SemanticVersion: tc.SemanticVersion, OnSchemaChange: tc.OnSchemaChange,
			Storage: tc.Storage, SourceProperties: tc.SourceProperties})
		if plan != nil {
			s.Sources = plan.Tables
		}
	case TypeDelta:
		s.Sources = []string{tc.Path}
		s.Delta = &DeltaSpec{Name: tc.Name, Path: tc.Path, Dst: tc.Destination, EqualityColumns: tc.Key,
			Properties: tc.Properties, Storage: tc.Storage, SourceProperties: tc.SourceProperties}
	default:
		err = fmt.Errorf("unknown type %q", tc.Type)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// definition is a short hash of the transform's configuration (what it
// reads, writes and computes; not its schedule or freshness targets).
func (tc TransformConfig) definition() string {
	c := tc
	c.Line, c.line, c.Every, c.TargetLag, c.Freshness, c.Engine = 0, nil, 0, 0, Freshness{}, ""
	b, err := json.Marshal(c)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
