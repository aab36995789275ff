// Package tabletest drives floe's table operations from small text
// scripts in tests: creating tables, writing rows given as tuples,
// naming snapshots, and rendering rows back as tuples.
package tabletest

import (
	"context"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/tableops"
)

// Env is a fresh embedded catalog with namespace "ns" and named snapshots.
type Env struct {
	TB    testing.TB
	Ctx   context.Context
	Cat   *catalog.Catalog
	Names map[int64]string // snapshot id -> name
	IDs   map[string]int64
	TS    map[string]int64 // name -> commit timestamp (ms)
}

// New opens a catalog in a temporary warehouse.
func New(tb testing.TB) *Env { return NewIn(tb, tb.TempDir()) }

// NewIn opens a catalog in the warehouse folder dir.
func NewIn(tb testing.TB, dir string) *Env {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: dir})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cat.Close() })
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, true); err != nil {
		tb.Fatal(err)
	}
	return &Env{TB: tb, Ctx: ctx, Cat: cat, Names: map[int64]string{}, IDs: map[string]int64{}, TS: map[string]int64{}}
}

// Target is the table ns.<name> on branch.
func (e *Env) Target(name, branch string) tableops.Target {
	return tableops.Target{Catalog: e.Cat, Ident: table.Identifier{"ns", name}, Branch: branch}
}

// Create creates ns.<name>.
func (e *Env) Create(name, schema, partition string, identifier []string, props iceberg.Properties) (*table.Table, error) {
	sc, err := ddl.ParseSchema(schema, identifier)
	if err != nil {
		return nil, err
	}
	spec, err := ddl.ParsePartitionSpec(partition, sc)
	if err != nil {
		return nil, err
	}
	return tableops.Create(e.Ctx, e.Cat, table.Identifier{"ns", name}, sc, spec, props)
}

// Load loads ns.<name>.
func (e *Env) Load(name string) *table.Table {
	tbl, err := e.Cat.Load(e.Ctx, table.Identifier{"ns", name})
	if err != nil {
		e.TB.Fatal(err)
	}
	return tbl
}

// Name records a name for the head of a branch of ns.<table>.
func (e *Env) Name(tbl *table.Table, branch, name string) {
	if branch == "" {
		branch = table.MainBranch
	}
	s := tbl.Metadata().SnapshotByName(branch)
	if s == nil {
		e.TB.Fatalf("table has no snapshot to name %s", name)
	}
	e.Names[s.SnapshotID] = name
	e.IDs[name] = s.SnapshotID
	e.TS[name] = s.TimestampMs
}

// SnapshotName renders a snapshot id by its recorded name.
func (e *Env) SnapshotName(id int64) string {
	if n, ok := e.Names[id]; ok {
		return n
	}
	return strconv.FormatInt(id, 10)
}

// ParseTuples parses "(1,'a',NULL) (2,'b',3.5)" into rows of Go values:
// int64, float64, string, bool, nil.
func ParseTuples(s string) ([][]any, error) {
	var out [][]any
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') {
			i++
		}
	}
	for {
		skip()
		if i >= len(s) {
			return out, nil
		}
		if s[i] != '(' {
			return nil, fmt.Errorf("position %d: expected '('", i)
		}
		i++
		var row []any
		for {
			skip()
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated tuple")
			}
			if s[i] == '\'' {
				i++
				var b strings.Builder
				for i < len(s) {
					if s[i] == '\'' {
						if i+1 < len(s) && s[i+1] == '\'' {
							b.WriteByte('\'')
							i += 2
							continue
						}
						break
					}
					b.WriteByte(s[i])
					i++
				}
				i++
				row = append(row, b.String())
			} else {
				j := i
				for j < len(s) && s[j] != ',' && s[j] != ')' {
					j++
				}
				tok := strings.TrimSpace(s[i:j])
				i = j
				switch {
				case strings.EqualFold(tok, "null"):
					row = append(row, nil)
				case strings.EqualFold(tok, "true"):
					row = append(row, true)
				case strings.EqualFold(tok, "false"):
					row = append(row, false)
				default:
					if n, err := strconv.ParseInt(tok, 10, 64); err == nil {
						row = append(row, n)
					} else if f, err := strconv.ParseFloat(tok, 64); err == nil {
						row = append(row, f)
					} else {
						row = append(row, tok)
					}
				}
			}
			skip()
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			if i < len(s) && s[i] == ')' {
				i++
				break
			}
			return nil, fmt.Errorf("position %d: expected ',' or ')'", i)
		}
		out = append(out, row)
	}
}

// Record builds a record of the table's Arrow schema from tuples.
func Record(schema *arrow.Schema, data [][]any) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, row := range data {
		if len(row) != schema.NumFields() {
			return nil, fmt.Errorf("tuple %v has %d values, table has %d columns", row, len(row), schema.NumFields())
		}
		for i, v := range row {
			if err := appendValue(b.Field(i), v); err != nil {
				return nil, fmt.Errorf("column %s: %w", schema.Field(i).Name, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

func appendValue(fb array.Builder, v any) error {
	if v == nil {
		fb.AppendNull()
		return nil
	}
	if n, ok := v.(int); ok {
		v = int64(n)
	}
	switch fb := fb.(type) {
	case *array.Int32Builder:
		fb.Append(int32(v.(int64)))
	case *array.Int64Builder:
		fb.Append(v.(int64))
	case *array.Float64Builder:
		switch x := v.(type) {
		case float64:
			fb.Append(x)
		case int64:
			fb.Append(float64(x))
		}
	case *array.StringBuilder:
		fb.Append(fmt.Sprint(v))
	case *array.BooleanBuilder:
		fb.Append(v.(bool))
	default:
		return fb.AppendValueFromString(fmt.Sprint(v))
	}
	return nil
}

// Seq returns a producer of the tuples as one record, for tableops.
func Seq(schema *arrow.Schema, data [][]any) func() iter.Seq2[arrow.RecordBatch, error] {
	return func() iter.Seq2[arrow.RecordBatch, error] {
		return func(yield func(arrow.RecordBatch, error) bool) {
			rec, err := Record(schema, data)
			if err != nil {
				yield(nil, err)
				return
			}
			yield(rec, nil)
		}
	}
}

// ArrowSchema is the table's current Arrow schema.
func ArrowSchema(tbl *table.Table) *arrow.Schema {
	as, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		panic(err)
	}
	return as
}

// ColEq is a predicate "column op literal" (op = or !=) for tests.
func ColEq(col string, neq bool, lit any) *tableops.Predicate {
	return &tableops.Predicate{
		Columns: []string{col},
		Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
			arr := rec.Column(0)
			out := make([]bool, rec.NumRows())
			for i := range out {
				if arr.IsNull(i) {
					continue
				}
				eq := arr.ValueStr(i) == fmt.Sprint(lit)
				out[i] = eq != neq
			}
			return out, nil
		},
	}
}

// Rows renders the rows of a table state as sorted tuples.
func (e *Env) Rows(tbl *table.Table, at scan.At) ([]string, error) {
	_, seq, err := scan.Rows(e.Ctx, tbl, scan.Options{At: at})
	if err != nil {
		return nil, err
	}
	return rows.FormatSorted(seq)
}
