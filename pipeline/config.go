package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/pushdown"
)

// File is a pipeline file: a catalog and a list of named transforms. It is
// declared once here; Parse validates against these declarations and
// Reference renders docs/pipelines.md from them. The fields of File,
// CatalogConfig and TransformConfig are documented by their struct tags:
// doc (what it means), for (the types that use it; all when absent),
// required (the types that need it; * for all) and example.
type File struct {
	Catalog    CatalogConfig     `yaml:"catalog" doc:"Where the tables live. Optional: floe's global flags (--warehouse, --catalog, --config) override it, and without either floe uses the embedded catalog in ./warehouse." example:"{warehouse: ./warehouse}"`
	Transforms []TransformConfig `yaml:"transforms" doc:"The transforms, in any order: floe runs each after the transforms whose destination is its source." required:"*"`
	Spark      SparkConfig       `yaml:"spark" doc:"Where builds pushed down to Spark run (docs/spark.md). Optional: --engine, --spark-remote and FLOE_SPARK_REMOTE override it." example:"{remote: sc://spark.example.com:15002, engine: auto}"`

	// Path is the file the pipeline was read from ("" when parsed from
	// bytes without a name).
	Path string `yaml:"-"`
	// Warnings are things in the file that work but should change (old
	// spellings of fields).
	Warnings []Problem `yaml:"-"`
	line     map[string]int
}

// CatalogConfig says which catalog a pipeline file uses (fields documented
// by their doc tags, see File).
type CatalogConfig struct {
	Warehouse string `yaml:"warehouse" doc:"Folder of the embedded catalog, relative to the pipeline file's folder." example:"./warehouse"`
	Name      string `yaml:"name" doc:"A catalog of the catalog configuration file to use instead of the embedded one (as --catalog)." example:"prod"`
	Config    string `yaml:"config" doc:"The catalog configuration file (as --config), relative to the pipeline file's folder." example:"catalogs.yaml"`
}

// SparkConfig is the spark: block of a pipeline file (fields documented by
// their doc tags, see File).
type SparkConfig struct {
	Remote    string            `yaml:"remote" doc:"The Spark Connect server, sc://HOST:PORT (as --spark-remote)." example:"sc://127.0.0.1:15002"`
	Engine    string            `yaml:"engine" doc:"The engine of every transform without its own engine: local (default), spark or auto (as --engine)." example:"auto"`
	Catalog   string            `yaml:"catalog" doc:"The name of floe's catalog on the Spark side when the server has it configured; default: floe mounts its own catalog in each Spark session." example:"lake"`
	Threshold string            `yaml:"threshold" doc:"auto's threshold: planned bytes to read and rewrite past which a build goes to Spark (as --spark-threshold; default 64GiB)." example:"8GiB"`
	Conf      map[string]string `yaml:"conf" doc:"Spark session settings floe sets on every session it opens." example:"{spark.sql.shuffle.partitions: '64'}"`
}

// Transform types of a pipeline file.
const (
	TypeSync   = "sync"
	TypeFilter = "filter"
	TypeMerge  = "merge"
	TypeDelta  = "delta"
	TypeSQL    = "sql"
	// TypeGo is the type of steps made from transforms written in Go
	// (FromTransforms); it cannot appear in a file.
	TypeGo = "go"
)

// Types lists the transform types a pipeline file may use, with what they do.
var Types = []struct{ Name, Doc string }{
	{TypeSync, "Keep `destination` equal to `SELECT columns FROM source WHERE filter`, by key: the first build copies, later builds apply the source's changelog (latest change per key); rows that stop matching the filter are deleted (as `floe sync`)."},
	{TypeFilter, "Append-only: append the rows added to `source` since the last build that match `filter`, projected to `columns`. An overwrite or delete upstream rebuilds `destination` from the source's current rows."},
	{TypeMerge, "Run a `MERGE INTO` statement with the changelog of `source` since the last build (latest change per `key`, columns of the source plus `_change_type`, `_change_ordinal`, `_commit_snapshot_id`) as `{changes}` and `destination` as `{destination}`."},
	{TypeSQL, "Keep `destination` equal to the result of `query`, a SELECT over Iceberg tables named namespace.table and Delta Lake tables named delta.\"PATH\" (DuckDB's dialect): maintained from the changes when the query is row-local (by `key`, or appended without one), rebuilt in full otherwise, with the reason (docs/sql-transforms.md)."},
	{TypeDelta, "Sync a Delta Lake table's Change Data Feed at `path` into the Iceberg table `destination`, matching rows on `key`."},
}

// TransformConfig is one transform of a pipeline file (fields documented
// by their doc tags, see File).
type TransformConfig struct {
	Name            string            `yaml:"name" doc:"Unique name: letters, digits, _ - and . (it names the transform in logs, metrics, status and the output's floe.transform.name property)." required:"*" example:"active_orders"`
	Type            string            `yaml:"type" doc:"What the transform does: sync, filter, merge, sql or delta (see Types)." required:"*" example:"sync"`
	Source          string            `yaml:"source" doc:"The input Iceberg table, namespace.table." for:"sync,filter,merge" required:"sync,filter,merge" example:"shop.orders"`
	Branch          string            `yaml:"branch" doc:"Read the source from this branch (default main)." for:"sync,filter,merge" example:"audit"`
	Path            string            `yaml:"path" doc:"The Delta Lake table: a local folder or a URI." for:"delta" required:"delta" example:"/data/delta/orders"`
	Destination     string            `yaml:"destination" doc:"The output Iceberg table, namespace.table; created on the first build when missing." required:"*" example:"shop.active_orders"`
	Key             []string          `yaml:"key" doc:"Key columns, unique in the source (a list, or one comma-separated string). They become the destination's identifier fields. For sql: columns of the query's result, unique in it; without key a row-local sql query is append-only." for:"sync,merge,delta,sql" required:"sync,merge,delta" example:"[id]"`
	Filter          string            `yaml:"filter" doc:"SQL predicate the destination's rows match, as in floe's --where." for:"sync,filter" example:"status = 'active'"`
	Columns         []string          `yaml:"columns" doc:"Columns of the destination, in order (default all). For sync they must include the key." for:"sync,filter" example:"[id, customer, amount]"`
	PartitionBy     string            `yaml:"partition_by" doc:"Partition spec the destination is created with, as in floe table create --partition-by (used only when floe creates it)." for:"sync,filter,merge,sql" example:"day(ts)"`
	Statement       string            `yaml:"statement" doc:"The MERGE INTO statement; {destination} stands for the destination table and {changes} for the changes." for:"merge" required:"merge" example:"MERGE INTO {destination} AS t USING {changes} AS s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *"`
	Query           string            `yaml:"query" doc:"The SELECT whose result the destination keeps, over Iceberg tables named namespace.table, in DuckDB's SQL dialect (docs/sql-transforms.md)." for:"sql" required:"sql" example:"SELECT id, upper(customer) AS customer, amount * 1.2 AS gross FROM shop.orders WHERE status = 'active'"`
	EqualityColumns []string          `yaml:"equality_columns" doc:"The old spelling of key for delta: still read, with a warning." for:"delta" example:"[id]"`
	Every           Duration          `yaml:"every" doc:"Run this transform on this schedule (a Go duration such as 90s, 15m or 2h), overriding floe run --every." example:"15m"`
	TargetLag       Duration          `yaml:"target_lag" doc:"Schedule by freshness instead of every: floe run builds the transform when its lag (how long the oldest change of its inputs not in its outputs has waited) would pass this, as Snowflake's dynamic tables do. At most one of every and target_lag." example:"15m"`
	Freshness       Freshness         `yaml:"freshness" doc:"Freshness targets of the outputs: warn_after and error_after, durations. floe status shows an output whose lag passed them as warn or error; floe status --check exits 3 when one passed error_after." example:"{warn_after: 30m, error_after: 2h}"`
	SemanticVersion int               `yaml:"semantic_version" doc:"Bump it when the logic changed and the destination must be rebuilt in full on the next build." for:"sync,filter,merge,sql" example:"2"`
	OnSchemaChange  string            `yaml:"on_schema_change" doc:"What a build does when the query's result schema no longer matches the destination's (a source column added under SELECT *, a type changed): rebuild (the default) rebuilds it in full with the new schema; evolve takes only added columns and widened types, keeping the other columns' field ids; fail fails the build naming the columns, committing nothing (docs/sql-transforms.md)." for:"sql" example:"fail"`
	Engine          string            `yaml:"engine" doc:"Which engine builds it: local (floe, default), spark (Spark Connect) or auto (Spark when the planned work passes the threshold), as --engine; see docs/spark.md." example:"auto"`
	Properties      map[string]string `yaml:"properties" doc:"Table properties the destination is created with." example:"{write.delete.mode: merge-on-read}"`

	// Storage settings of a delta step's source, or of a sql query's Delta
	// tables (docs/storage.md).
	Storage          string            `yaml:"storage" doc:"Storage profile (a name under storage: in the catalog configuration file) whose settings read path (for sql: the query's delta.\"PATH\" tables); default: the catalog's own storage settings (docs/storage.md)." for:"delta,sql" example:"lake"`
	SourceProperties map[string]string `yaml:"source_properties" doc:"Storage settings for reading path (for sql: the query's Delta tables) that override single keys of the profile or the catalog's (s3.endpoint, s3.region, ...)." for:"delta,sql" example:"{s3.region: eu-west-1}"`
	// Keys that are not the destination's identifier (issue 12).
	AllowNonIdentifierKey bool `yaml:"allow_non_identifier_key" doc:"Let key differ from the identifier fields of an existing destination (refused otherwise: upserting by another column can give several rows one identifier value). The key must still be unique in the source." for:"sync" example:"true"`

	// Line is the line of the transform in its file (0 when unknown).
	Line int `yaml:"-"`
	line map[string]int
}

// Duration is a time.Duration written as a Go duration string ("15m").
type Duration time.Duration

// UnmarshalYAML parses a duration such as 90s, 15m or 2h.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a duration such as 15m")
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("want a duration such as 90s, 15m or 2h, got %q", n.Value)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML renders the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Freshness is a transform's freshness targets: how long the oldest input
// change missing from its outputs may wait before floe status reports the
// transform as warn or error (0 = no such target).
type Freshness struct {
	WarnAfter  Duration `yaml:"warn_after"`
	ErrorAfter Duration `yaml:"error_after"`
}

// UnmarshalYAML decodes {warn_after: D, error_after: D}, refusing other
// keys.
func (f *Freshness) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return errors.New("want a mapping such as {warn_after: 30m, error_after: 2h}")
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var d *Duration
		switch k.Value {
		case "warn_after":
			d = &f.WarnAfter
		case "error_after":
			d = &f.ErrorAfter
		default:
			return fmt.Errorf("unknown key %q%s (keys: warn_after, error_after)", k.Value, suggest(k.Value, []string{"warn_after", "error_after"}))
		}
		if seen[k.Value] {
			return fmt.Errorf("%s given twice", k.Value)
		}
		seen[k.Value] = true
		if err := d.UnmarshalYAML(v); err != nil {
			return fmt.Errorf("%s: %w", k.Value, err)
		}
	}
	return nil
}

// MaxFileSize is the largest pipeline file Load and Parse accept, in bytes.
const MaxFileSize = 1 << 20

// Load reads and validates a pipeline file.
func Load(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPipeline, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPipeline, err)
	}
	return Parse(path, b)
}

// Parse validates the pipeline file data read from path (path is used in
// messages and to resolve relative catalog paths). All problems found are
// returned together in a *ValidationError (which wraps
// ErrInvalidPipeline), each naming the file, line, transform and field.
func Parse(path string, data []byte) (*File, error) {
	f := &File{Path: path, line: map[string]int{}}
	p := &parser{file: path, bad: map[string]bool{}}
	if len(data) > MaxFileSize {
		p.add(p.errorf(0, "", "", "larger than %d bytes, the limit for pipeline files", MaxFileSize))
		return nil, p.err()
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		p.add(p.errorf(line, "", "", "not valid YAML: %s", msg))
		return nil, p.err()
	}
	if len(doc.Content) == 0 {
		p.add(p.errorf(0, "", "", "the file is empty; it needs a transforms: list"))
		return nil, p.err()
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		p.add(p.errorf(root.Line, "", "", "want a mapping with catalog: and transforms:"))
		return nil, p.err()
	}
	var transforms *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		f.line[k.Value] = k.Line
		switch k.Value {
		case "catalog":
			if v.Kind != yaml.MappingNode {
				p.add(p.errorf(v.Line, "", "catalog", "want a mapping such as {warehouse: ./warehouse}"))
				continue
			}
			p.decodeFields(v, &f.Catalog, "", "catalog.", map[string]int{}, "")
		case "transforms":
			transforms = v
		case "spark":
			if v.Kind != yaml.MappingNode {
				p.add(p.errorf(v.Line, "", "spark", "want a mapping such as {remote: sc://127.0.0.1:15002}"))
				continue
			}
			p.decodeFields(v, &f.Spark, "", "spark.", map[string]int{}, "")
			if _, err := pushdown.ParseKind(f.Spark.Engine); err != nil {
				p.add(p.errorf(v.Line, "", "spark.engine", "%v", err))
			}
			if f.Spark.Threshold != "" {
				if _, err := pushdown.ParseBytes(f.Spark.Threshold); err != nil {
					p.add(p.errorf(v.Line, "", "spark.threshold", "%v", err))
				}
			}
		default:
			p.add(p.errorf(k.Line, "", "", "unknown key %q (keys: catalog, transforms, spark)", k.Value))
		}
	}
	if transforms == nil {
		p.add(p.errorf(root.Line, "", "", "no transforms: list"))
	} else if transforms.Kind != yaml.SequenceNode {
		p.add(p.errorf(transforms.Line, "", "transforms", "want a list of transforms"))
	} else {
		for i, n := range transforms.Content {
			tc := TransformConfig{Line: n.Line, line: map[string]int{}}
			where := fmt.Sprintf("transform #%d", i+1)
			if n.Kind != yaml.MappingNode {
				p.add(p.errorf(n.Line, where, "", "want a mapping with name:, type:, ..."))
				continue
			}
			for j := 0; j+1 < len(n.Content); j += 2 {
				if n.Content[j].Value == "name" && n.Content[j+1].Kind == yaml.ScalarNode && n.Content[j+1].Value != "" {
					where = fmt.Sprintf("transform %q", n.Content[j+1].Value)
				}
			}
			p.decodeFields(n, &tc, where, "", tc.line, fmt.Sprintf("%d.", i))
			f.Transforms = append(f.Transforms, tc)
		}
		if len(transforms.Content) == 0 {
			p.add(p.errorf(transforms.Line, "", "transforms", "the list is empty"))
		}
	}
	f.validate(p)
	if len(p.problems) > 0 {
		return nil, p.err()
	}
	f.Warnings = p.warnings
	return f, nil
}

// Problem is one problem found in a pipeline file.
type Problem struct {
	File string // the pipeline file
	Line int    // 0 when unknown
	// Where names the transform (`transform "name"`, or `transform #3`
	// when it has no name); "" for the file's top level.
	Where   string
	Field   string // "" when the problem is not about one field
	Message string // what is wrong and what is expected
}

// String renders the problem as "file:line: where: field F: message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	if p.Where != "" {
		b.WriteString(": " + p.Where)
	}
	if p.Field != "" {
		b.WriteString(": field " + p.Field)
	}
	return b.String() + ": " + p.Message
}

// ValidationError lists every problem found in a pipeline file, in line
// order. It wraps ErrInvalidPipeline.
type ValidationError struct {
	Problems []Problem // at least one
}

// Error renders one problem per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return ErrInvalidPipeline.Error() + ": " + strings.Join(lines, "\n")
}

// Unwrap returns ErrInvalidPipeline.
func (e *ValidationError) Unwrap() error { return ErrInvalidPipeline }

// parser collects the problems of a file.
type parser struct {
	file     string
	problems []Problem
	warnings []Problem
	// bad marks the fields (by transform index and name) whose value could
	// not be decoded, so they are not also reported missing.
	bad map[string]bool
}

func (p *parser) add(pr Problem) { p.problems = append(p.problems, pr) }

// err returns the problems in line order (stable) as a *ValidationError.
func (p *parser) err() error {
	slices.SortStableFunc(p.problems, func(a, b Problem) int { return a.Line - b.Line })
	return &ValidationError{Problems: p.problems}
}

// errorf makes a problem.
func (p *parser) errorf(line int, where, field, format string, args ...any) Problem {
	return Problem{File: p.file, Line: line, Where: where, Field: field, Message: fmt.Sprintf(format, args...)}
}

// fieldInfo is the declaration of one YAML field.
type fieldInfo struct {
	name     string
	index    int
	typ      reflect.Type
	doc      string
	example  string
	forTypes []string // nil = every type
	required []string // "*" = every type
}

// fieldsOf returns the declared fields of a struct type (cached: types are
// few and fixed).
func fieldsOf(t reflect.Type) []fieldInfo {
	if v, ok := fieldCache.Load(t); ok {
		return v.([]fieldInfo)
	}
	out := declaredFields(t)
	fieldCache.Store(t, out)
	return out
}

var fieldCache sync.Map // reflect.Type -> []fieldInfo

func declaredFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name := sf.Tag.Get("yaml")
		if name == "" || name == "-" {
			continue
		}
		fi := fieldInfo{name: name, index: i, typ: sf.Type, doc: sf.Tag.Get("doc"), example: sf.Tag.Get("example")}
		if s := sf.Tag.Get("for"); s != "" {
			fi.forTypes = strings.Split(s, ",")
		}
		if s := sf.Tag.Get("required"); s != "" {
			fi.required = strings.Split(s, ",")
		}
		out = append(out, fi)
	}
	return out
}

func (fi fieldInfo) usedBy(typ string) bool {
	return fi.forTypes == nil || slices.Contains(fi.forTypes, typ)
}

func (fi fieldInfo) requiredBy(typ string) bool {
	return slices.Contains(fi.required, "*") || slices.Contains(fi.required, typ)
}

// want describes what a field's value must look like.
func want(t reflect.Type) string {
	switch {
	case t == reflect.TypeOf(Duration(0)):
		return "a duration such as 15m"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Int:
		return "an integer"
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		return "a list of names such as [id, customer] (or one comma-separated string)"
	case t.Kind() == reflect.Map:
		return "a mapping of names to strings"
	case t.Kind() == reflect.Slice:
		return "a list"
	}
	return t.String()
}

// decodeFields decodes the mapping n into the struct dst field by field,
// reporting unknown, repeated and ill-typed fields at their lines.
func (p *parser) decodeFields(n *yaml.Node, dst any, where, prefix string, lines map[string]int, badKey string) {
	v := reflect.ValueOf(dst).Elem()
	fields := fieldsOf(v.Type())
	byName := map[string]fieldInfo{}
	var names []string
	for _, fi := range fields {
		byName[fi.name] = fi
		names = append(names, fi.name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		fi, ok := byName[k.Value]
		if !ok {
			p.add(p.errorf(k.Line, where, "", "unknown field %q%s (fields: %s)", prefix+k.Value, suggest(k.Value, names), strings.Join(names, ", ")))
			continue
		}
		if _, dup := lines[k.Value]; dup {
			p.add(p.errorf(k.Line, where, prefix+k.Value, "given twice (first at line %d)", lines[k.Value]))
			continue
		}
		lines[k.Value] = k.Line
		fv := v.Field(fi.index)
		if fi.typ.Kind() == reflect.Slice && fi.typ.Elem().Kind() == reflect.String && val.Kind == yaml.ScalarNode && val.Tag != "!!null" {
			var list []string
			for _, s := range strings.Split(val.Value, ",") {
				list = append(list, strings.TrimSpace(s))
			}
			fv.Set(reflect.ValueOf(list))
			continue
		}
		if err := val.Decode(fv.Addr().Interface()); err != nil {
			msg := "want " + want(fi.typ)
			var te *yaml.TypeError
			if !errors.As(err, &te) && err.Error() != "" {
				msg = err.Error()
			}
			p.add(p.errorf(val.Line, where, prefix+k.Value, "%s", msg))
			p.bad[badKey+k.Value] = true
		}
	}
}

// suggest returns ` (did you mean "x"?)` for a near miss.
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

var yamlLine = regexp.MustCompile(`^line (\d+): (.*)$`)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)

// validate checks the decoded file against the declarations and the rules
// of each type.
func (f *File) validate(p *parser) {
	names := map[string]int{}
	fields := fieldsOf(reflect.TypeOf(TransformConfig{}))
	for i := range f.Transforms {
		tc := &f.Transforms[i]
		where := fmt.Sprintf("transform #%d", i+1)
		if tc.Name != "" {
			where = fmt.Sprintf("transform %q", tc.Name)
		}
		if l, old := tc.line["equality_columns"]; old {
			// One vocabulary: equality_columns is the old name of key.
			if _, both := tc.line["key"]; both {
				p.add(p.errorf(l, where, "equality_columns", "give key only (equality_columns is its old spelling)"))
			} else {
				p.warnings = append(p.warnings, p.errorf(l, where, "equality_columns", "is the old spelling of key: it works, but write key"))
				tc.Key, tc.line["key"] = tc.EqualityColumns, l
				delete(tc.line, "equality_columns")
			}
		}
		at := func(field string) int {
			if l, ok := tc.line[field]; ok {
				return l
			}
			return tc.Line
		}
		bad := func(field, format string, args ...any) {
			p.add(p.errorf(at(field), where, field, format, args...))
		}
		if tc.Name != "" {
			if !namePattern.MatchString(tc.Name) {
				bad("name", "%q: use letters, digits, _ - and . only", tc.Name)
			} else if first, dup := names[tc.Name]; dup {
				bad("name", "%q is also the name of the transform at line %d", tc.Name, first)
			}
			names[tc.Name] = tc.Line
		}
		known := false
		var typeNames []string
		for _, t := range Types {
			typeNames = append(typeNames, t.Name)
			known = known || t.Name == tc.Type
		}
		if tc.Type != "" && !known {
			bad("type", "%q is not a transform type (types: %s)%s", tc.Type, strings.Join(typeNames, ", "), suggest(tc.Type, typeNames))
		}
		v := reflect.ValueOf(*tc)
		for _, fi := range fields {
			_, given := tc.line[fi.name]
			zero := v.Field(fi.index).IsZero()
			switch {
			case known && given && !fi.usedBy(tc.Type):
				bad(fi.name, "not used by type %s (it is for: %s)", tc.Type, strings.Join(fi.forTypes, ", "))
			case zero && !p.bad[fmt.Sprintf("%d.%s", i, fi.name)] && fi.requiredBy(tc.Type) && (known || slices.Contains(fi.required, "*")):
				if tc.Type == "" || slices.Contains(fi.required, "*") {
					bad(fi.name, "missing (required)")
				} else {
					bad(fi.name, "missing (required by type %s)", tc.Type)
				}
			}
		}
		for _, fld := range []struct {
			name, value string
		}{{"source", tc.Source}, {"destination", tc.Destination}} {
			if fld.value == "" {
				continue
			}
			if _, err := catalog.ParseTableName(fld.value); err != nil {
				bad(fld.name, "%v", err)
			}
		}
		if tc.Source != "" && tc.Source == tc.Destination && tc.Branch == "" {
			bad("destination", "%s is also the source", tc.Destination)
		}
		checkList := func(field string, list []string) {
			seen := map[string]bool{}
			for _, c := range list {
				switch {
				case c == "":
					bad(field, "an empty column name")
				case seen[c]:
					bad(field, "column %q is listed twice", c)
				}
				seen[c] = true
			}
		}
		checkList("key", tc.Key)
		checkList("columns", tc.Columns)
		if tc.Type == TypeSync && len(tc.Columns) > 0 {
			for _, k := range tc.Key {
				if k != "" && !slices.Contains(tc.Columns, k) {
					bad("columns", "must include the key column %q", k)
				}
			}
		}
		// Values of fields the type does not use were reported above.
		uses := func(field string) bool {
			for _, fi := range fields {
				if fi.name == field {
					return !known || fi.usedBy(tc.Type)
				}
			}
			return false
		}
		if tc.Filter != "" && uses("filter") {
			if _, err := expr.Parse(tc.Filter); err != nil {
				bad("filter", "%s", expr.FormatError(tc.Filter, err))
			}
		}
		if tc.Statement != "" && uses("statement") {
			st := strings.TrimSpace(tc.Statement)
			if fs := strings.Fields(strings.ToUpper(st)); len(fs) < 2 || fs[0] != "MERGE" || fs[1] != "INTO" {
				bad("statement", "want a MERGE INTO statement, got %q", firstWords(st, 4))
			}
			for _, ph := range []string{"{destination}", "{changes}"} {
				if !strings.Contains(st, ph) {
					bad("statement", "must use %s (the statement names the destination as {destination} and the changes as {changes})", ph)
				}
			}
		}
		if tc.Every < 0 || (tc.Every > 0 && time.Duration(tc.Every) < time.Second) {
			bad("every", "%s: want at least 1s", time.Duration(tc.Every))
		}
		if tc.TargetLag < 0 || (tc.TargetLag > 0 && time.Duration(tc.TargetLag) < time.Second) {
			bad("target_lag", "%s: want at least 1s", time.Duration(tc.TargetLag))
		}
		if tc.TargetLag != 0 && tc.Every != 0 {
			bad("target_lag", "give every or target_lag, not both")
		}
		if _, given := tc.line["freshness"]; given && !p.bad[fmt.Sprintf("%d.freshness", i)] {
			fr := tc.Freshness
			switch {
			case fr.WarnAfter == 0 && fr.ErrorAfter == 0:
				bad("freshness", "give warn_after, error_after or both, e.g. {warn_after: 30m, error_after: 2h}")
			case fr.WarnAfter < 0 || (fr.WarnAfter > 0 && time.Duration(fr.WarnAfter) < time.Second):
				bad("freshness", "warn_after %s: want at least 1s", time.Duration(fr.WarnAfter))
			case fr.ErrorAfter < 0 || (fr.ErrorAfter > 0 && time.Duration(fr.ErrorAfter) < time.Second):
				bad("freshness", "error_after %s: want at least 1s", time.Duration(fr.ErrorAfter))
			case fr.WarnAfter > 0 && fr.ErrorAfter > 0 && fr.WarnAfter > fr.ErrorAfter:
				bad("freshness", "warn_after %s is after error_after %s", time.Duration(fr.WarnAfter), time.Duration(fr.ErrorAfter))
			}
		}
		if _, err := pushdown.ParseKind(tc.Engine); err != nil {
			bad("engine", "%v", err)
		}
		if tc.SemanticVersion < 0 && uses("semantic_version") {
			bad("semantic_version", "%d: want 0 or more", tc.SemanticVersion)
		}
		switch tc.OnSchemaChange {
		case "", "rebuild", "evolve", "fail":
		default:
			bad("on_schema_change", "%q: want rebuild, evolve or fail", tc.OnSchemaChange)
		}
	}
}

func firstWords(s string, n int) string {
	fs := strings.Fields(s)
	if len(fs) > n {
		fs = append(fs[:n], "...")
	}
	return strings.Join(fs, " ")
}

// Dir is the folder relative paths of the file resolve against.
func (f *File) Dir() string {
	if f.Path == "" {
		return "."
	}
	return filepath.Dir(f.Path)
}

// CatalogOptions returns the catalog the file asks for, relative paths
// resolved against its folder. Flags given on the command line override
// it (the caller merges them).
func (f *File) CatalogOptions() catalog.Options {
	o := catalog.Options{Name: f.Catalog.Name}
	if w := f.Catalog.Warehouse; w != "" {
		o.Warehouse = resolve(f.Dir(), w)
	}
	if c := f.Catalog.Config; c != "" {
		o.ConfigFile = resolve(f.Dir(), c)
	}
	return o
}

func resolve(dir, p string) string {
	if filepath.IsAbs(p) || strings.Contains(p, "://") {
		return p
	}
	return filepath.Join(dir, p)
}
