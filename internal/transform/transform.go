// Package transform runs incremental transforms: code that declares named
// input and output tables, a read mode and a semantic version, and computes
// its outputs from what changed in its inputs since the last build. Each
// build reads each input from its last processed snapshot (exclusive) to
// the head of the input's branch, and commits every output once, with the
// watermark of each input in the same commit. A build falls back to a full
// rebuild, with the reason logged, when the output or its watermark is
// missing, the semantic version or the inputs changed, a watermark is no
// longer in the input's history (rollback, expiry), or, in append-only
// mode, the range holds an overwrite or delete.
package transform

import (
	"errors"
	"fmt"
)

// ReadMode says how a transform reads its inputs incrementally.
type ReadMode int

const (
	// AppendOnly (the default) processes the rows appended since the last
	// build; any overwrite or delete in range forces a full rebuild.
	AppendOnly ReadMode = iota
	// Changelog processes inserts, updates and deletes incrementally.
	Changelog
)

func (m ReadMode) String() string {
	if m == Changelog {
		return "changelog"
	}
	return "append_only"
}

// ParseReadMode parses "append_only" (or "append-only") and "changelog".
func ParseReadMode(s string) (ReadMode, error) {
	switch s {
	case "", "append_only", "append-only":
		return AppendOnly, nil
	case "changelog":
		return Changelog, nil
	}
	return 0, fmt.Errorf("read mode %q: want append_only or changelog", s)
}

// ComputeFunc computes a transform's outputs. It must write each output at
// most once (Write, Replace, ApplyChangelog, Commit or a native transaction);
// outputs it does not write keep their rows and get their watermarks
// advanced.
type ComputeFunc func(ctx *Context) error

// InputSpec declares an input.
type InputSpec struct {
	Name   string
	Table  string // "ns.table" ("delta:LOCATION" for a Delta input)
	Branch string // "" = main
	// Delta, when set, is the location (folder or URI) of a Delta Lake
	// table read instead of an Iceberg table: the build pins its latest
	// version, and its watermark is a Delta version (see WithDeltaInput).
	Delta string
	// Storage and StorageProperties choose the storage settings a Delta
	// input is read with (catalog.SourceStorage): a storage profile of the
	// catalog's configuration file, else the catalog's own settings, with
	// single keys overridden.
	Storage           string
	StorageProperties map[string]string
}

// DeltaTablePrefix starts the Table of a Delta input ("delta:LOCATION").
const DeltaTablePrefix = "delta:"

// OutputSpec declares an output. PartitionBy, Identifier and Properties are
// used when floe creates the table (on its first build).
type OutputSpec struct {
	Name        string
	Table       string
	Branch      string
	PartitionBy string   // e.g. "day(ts)"
	Identifier  []string // identifier fields (must be non-null columns)
	Properties  map[string]string
	// NonIdentifierKey lets ApplyChangelog maintain the output by a key
	// that is not the output's identifier (see AllowNonIdentifierKey).
	NonIdentifierKey bool
}

// Transform is a named computation from inputs to outputs.
type Transform struct {
	Name            string
	Inputs          []InputSpec
	Outputs         []OutputSpec
	ReadMode        ReadMode
	SemanticVersion int
	Compute         ComputeFunc
	// Push, when set, lets a remote engine run the builds (see Push).
	Push *Push
}

// Option configures New.
type Option func(*Transform)

// WithInput declares an input table.
func WithInput(name, table string) Option {
	return func(t *Transform) { t.Inputs = append(t.Inputs, InputSpec{Name: name, Table: table}) }
}

// WithDeltaInput declares an input that is the Delta Lake table at
// location, opened with the catalog's storage settings (or those of
// DeltaStorage). A build reads it at its latest version and records that
// version as the input's watermark (floe.source.<name>.snapshot-id holds
// the Delta version, .table "delta:<location>"); incremental reads come
// from its Change Data Feed (DeltaChanges).
func WithDeltaInput(name, location string, opts ...DeltaOption) Option {
	return func(t *Transform) {
		in := InputSpec{Name: name, Table: DeltaTablePrefix + location, Delta: location}
		for _, o := range opts {
			o(&in)
		}
		t.Inputs = append(t.Inputs, in)
	}
}

// A DeltaOption configures a Delta input (WithDeltaInput).
type DeltaOption func(*InputSpec)

// DeltaStorage reads the Delta input with the storage profile named
// profile ("": the catalog's own settings) and props over it.
func DeltaStorage(profile string, props map[string]string) DeltaOption {
	return func(in *InputSpec) { in.Storage, in.StorageProperties = profile, props }
}

// WithInputOnBranch declares an input read from a branch.
func WithInputOnBranch(name, table, branch string) Option {
	return func(t *Transform) {
		t.Inputs = append(t.Inputs, InputSpec{Name: name, Table: table, Branch: branch})
	}
}

// WithOutput declares an output table.
func WithOutput(name, table string, opts ...OutputOption) Option {
	return func(t *Transform) {
		o := OutputSpec{Name: name, Table: table}
		for _, f := range opts {
			f(&o)
		}
		t.Outputs = append(t.Outputs, o)
	}
}

// OutputOption configures an output.
type OutputOption func(*OutputSpec)

// PartitionBy sets the partition spec floe creates the output with.
func PartitionBy(spec string) OutputOption { return func(o *OutputSpec) { o.PartitionBy = spec } }

// Identifier sets the identifier fields floe creates the output with.
func Identifier(cols ...string) OutputOption { return func(o *OutputSpec) { o.Identifier = cols } }

// TableProperties sets properties floe creates the output with.
func TableProperties(p map[string]string) OutputOption {
	return func(o *OutputSpec) { o.Properties = p }
}

// AllowNonIdentifierKey lets ApplyChangelog maintain the output by key
// columns that are not its identifier fields (refused otherwise, with
// ErrKeyNotIdentifier: upserting by another column can give several rows
// one identifier value). The key is still checked to be unique.
func AllowNonIdentifierKey() OutputOption { return func(o *OutputSpec) { o.NonIdentifierKey = true } }

// OnBranch writes the output to a branch.
func OnBranch(b string) OutputOption { return func(o *OutputSpec) { o.Branch = b } }

// WithReadMode sets the read mode (AppendOnly by default).
func WithReadMode(m ReadMode) Option { return func(t *Transform) { t.ReadMode = m } }

// WithSemanticVersion sets the semantic version; bumping it forces a full
// rebuild, for when the logic changed and existing outputs are invalid.
func WithSemanticVersion(v int) Option { return func(t *Transform) { t.SemanticVersion = v } }

// New declares a transform.
func New(name string, compute ComputeFunc, opts ...Option) *Transform {
	t := &Transform{Name: name, Compute: compute}
	for _, f := range opts {
		f(t)
	}
	return t
}

// ErrInvalidTransform is wrapped by Validate's errors.
var ErrInvalidTransform = errors.New("invalid transform")

// Validate checks the declaration: a name, a compute function, at least
// one input and one output, unique names.
func (t *Transform) Validate() error {
	if t.Name == "" {
		return fmt.Errorf("%w: no name", ErrInvalidTransform)
	}
	if t.Compute == nil {
		return fmt.Errorf("%w: %s has no compute function", ErrInvalidTransform, t.Name)
	}
	if len(t.Inputs) == 0 || len(t.Outputs) == 0 {
		return fmt.Errorf("%w: %s needs at least one input and one output", ErrInvalidTransform, t.Name)
	}
	seen := map[string]bool{}
	for _, in := range t.Inputs {
		if in.Name == "" || in.Table == "" || seen["i:"+in.Name] {
			return fmt.Errorf("%w: %s: input %q must have a unique name and a table", ErrInvalidTransform, t.Name, in.Name)
		}
		seen["i:"+in.Name] = true
	}
	for _, out := range t.Outputs {
		if out.Name == "" || out.Table == "" || seen["o:"+out.Name] {
			return fmt.Errorf("%w: %s: output %q must have a unique name and a table", ErrInvalidTransform, t.Name, out.Name)
		}
		seen["o:"+out.Name] = true
		for _, in := range t.Inputs {
			if in.Table == out.Table && in.Branch == out.Branch {
				return fmt.Errorf("%w: %s: %s is both an input and an output", ErrInvalidTransform, t.Name, in.Table)
			}
		}
	}
	return nil
}
